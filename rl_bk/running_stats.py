"""Running statistics shared by the reward rewrites: a running mean and variance over
batches, and discounted running sums of reward streams.

Both RND's intrinsic reward and BK's potential are divided by the standard deviation of
their discounted running sum (CleanRL's ``RewardForwardFilter`` + gym's ``RunningMeanStd``,
which BK's ``utils/normalizer.py`` copies), so the pieces live here, once.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np


class RunningStd:
    """Running mean and population variance of every value seen, over batches of any size
    (Chan et al.'s parallel update, exact in float64)."""

    def __init__(self, epsilon: float = 1e-8):
        self.count, self.mean, self.m2, self.epsilon = 0, 0.0, 0.0, epsilon

    def update(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if values.size == 0:
            return
        n, mean = values.size, float(values.mean())
        delta = mean - self.mean
        total = self.count + n
        self.m2 += float(((values - mean) ** 2).sum()) + delta**2 * self.count * n / total
        self.mean += delta * n / total
        self.count = total

    @property
    def var(self) -> float:
        return self.m2 / self.count if self.count > 1 else 1.0

    @property
    def std(self) -> float:
        return float(np.sqrt(self.var))

    def scale(self, values: np.ndarray) -> np.ndarray:
        """``values`` divided by the running std (no mean removed)."""
        return np.asarray(values, dtype=np.float64) / (self.std + self.epsilon)


class RewardForwardFilter:
    """Discounted running sums of reward streams: ``f_t = gamma * f_{t-1} + r_t``.

    A stream is one episode; RLlib cuts episodes into chunks across train batches, so each
    stream's last sum is kept and the next chunk of the same episode continues from it.
    Streams absent from a call have ended and are forgotten, which bounds the memory.

    CleanRL (and BK after it) runs one filter per env slot across episodes; RLlib's chunks do
    not say which env slot they came from, so here a stream restarts at 0 with each episode.
    """

    def __init__(self, gamma: float):
        self.gamma = gamma
        self._last: dict[Hashable, float] = {}

    def update(self, streams: Sequence[tuple[Hashable, np.ndarray]]) -> list[np.ndarray]:
        """The filtered values of each ``(stream_id, rewards)`` chunk, in the given order
        (a later chunk of the same stream in the same call continues the earlier one)."""
        last = dict(self._last)
        carried: dict[Hashable, float] = {}
        out = []
        for stream_id, rewards in streams:
            f = carried.get(stream_id, last.get(stream_id, 0.0))
            rewards = np.asarray(rewards, dtype=np.float64).reshape(-1)
            filtered = np.empty_like(rewards)
            for t, r in enumerate(rewards):
                f = self.gamma * f + r
                filtered[t] = f
            carried[stream_id] = f
            out.append(filtered)
        self._last = carried
        return out
