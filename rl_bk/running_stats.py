"""Running statistics shared by the reward rewrites: a running mean and variance over
batches, and discounted running sums of reward streams.

Both RND's intrinsic reward and BK's potential are divided by the standard deviation of
their discounted running sum (CleanRL's ``RewardForwardFilter`` + gym's ``RunningMeanStd``,
which BK's ``utils/normalizer.py`` copies), so the pieces live here, once.
"""

from __future__ import annotations

from collections import OrderedDict
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


class RewardForwardFilter:
    """Discounted running sums of reward streams: ``f_t = gamma * f_{t-1} + r_t``.

    A stream is whatever the caller keys it by: BK's shaping runs one per env slot across
    episodes, as CleanRL's RND and BK's ``train_rs.py`` do; RND here runs one per episode.
    Each stream's last sum is kept and its next values continue from it. The
    :data:`MAX_STREAMS` streams updated last are kept (an episode cut by a time limit is never
    seen again), the least recently updated dropped first.
    """

    MAX_STREAMS = 4096

    def __init__(self, gamma: float):
        self.gamma = gamma
        self._last: OrderedDict[Hashable, float] = OrderedDict()

    def update(self, streams: Sequence[tuple[Hashable, np.ndarray]]) -> list[np.ndarray]:
        """The filtered values of each ``(stream_id, rewards)`` piece, in the given order
        (a later piece of the same stream, in this call or a later one, continues it)."""
        out = []
        for stream_id, rewards in streams:
            f = self._last.pop(stream_id, 0.0)
            rewards = np.asarray(rewards, dtype=np.float64).reshape(-1)
            filtered = np.empty_like(rewards)
            for t, r in enumerate(rewards):
                f = self.gamma * f + r
                filtered[t] = f
            self._last[stream_id] = f
            out.append(filtered)
        while len(self._last) > self.MAX_STREAMS:
            self._last.popitem(last=False)
        return out

    def forget(self, stream_id: Hashable) -> None:
        """Drops a stream that has ended (its next value would start from 0)."""
        self._last.pop(stream_id, None)
