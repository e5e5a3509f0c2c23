"""ONI's within-episode count decay: how often each caption has been seen in its episode. A
message rewarded every time it appears can be farmed (walk into a wall, read the same message
again), so ONI divides the intrinsic reward by that count, this occurrence included, to the
power ``beta`` (with beta = 3 the second occurrence gets 1/8). RLlib cuts episodes into chunks
across train batches, so :class:`EpisodeCounts` keeps each episode's counts between calls.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Hashable, Sequence

import numpy as np


class EpisodeCounts:
    """Per episode id, how often each caption has been seen so far.

    At most ``max_episodes`` episodes are kept: the one used least recently is dropped
    first, so the bound must exceed the number of episodes running at once (an episode
    dropped while still running would start counting from 1 again). :meth:`forget` finished
    episodes to free them early. Call :meth:`counts` once per step: a batch counted twice
    counts its captions twice.
    """

    def __init__(self, max_episodes: int = 10_000):
        if max_episodes < 1:
            raise ValueError(f"max_episodes must be positive, got {max_episodes}")
        self.max_episodes = max_episodes
        self._episodes: OrderedDict[Hashable, Counter[str]] = OrderedDict()

    def counts(self, episode_id: Hashable, captions: Sequence[str]) -> np.ndarray:
        """``(len(captions),)`` int64: each caption's count in the episode, this occurrence
        included, captions taken in order (["a", "a"] on a new episode gives [1, 2])."""
        if isinstance(captions, str):
            raise TypeError("counts() takes a sequence of captions, not one string")
        seen = self._episodes.get(episode_id)
        if seen is None:
            seen = self._episodes[episode_id] = Counter()
            while len(self._episodes) > self.max_episodes:
                self._episodes.popitem(last=False)
        else:
            self._episodes.move_to_end(episode_id)
        out = np.empty(len(captions), np.int64)
        for i, caption in enumerate(captions):
            seen[caption] += 1
            out[i] = seen[caption]
        return out

    def forget(self, episode_id: Hashable) -> None:
        """Drops an episode's counts (no error if it is unknown)."""
        self._episodes.pop(episode_id, None)

    def __contains__(self, episode_id: object) -> bool:
        return episode_id in self._episodes

    def __len__(self) -> int:
        return len(self._episodes)
