"""Potentials of windows already scored, remembered across train batches: a potential reads a
window of the last few states and actions and nothing else, agents revisit the same windows
all the time, and scoring them again was most of what bk-pref and bk-goal cost per batch. Only
for potentials that are fixed functions of the window (trained once, before RL): a model that
keeps learning must not be memoised.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

import numpy as np

DEFAULT_CAPACITY = 500_000


class WindowMemo:
    """Phi of each window seen, keyed by content, never by text formatting: each state's own
    key (its observation's bytes, or its caption) maps to an integer id, and a window's key is
    the bytes of its ids and action ids. When either table passes ``capacity`` entries both
    are cleared (ids would otherwise point at states that are gone); clearing costs one batch
    of re-scoring."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._ids: dict[Hashable, int] = {}
        self._values: dict[bytes, float] = {}
        self.hits = 0
        self.misses = 0
        self.clears = 0

    def start_batch(self) -> None:
        """Call once before a batch's :meth:`state_ids`: clears both tables when full."""
        if len(self._ids) > self.capacity or len(self._values) > self.capacity:
            self._ids.clear()
            self._values.clear()
            self.clears += 1

    def state_ids(self, states: Iterable[Hashable]) -> np.ndarray:
        """An integer id per state key (equal keys, equal ids), new ids for new keys."""
        ids = self._ids
        return np.fromiter((ids.setdefault(s, len(ids)) for s in states), np.int64)

    @staticmethod
    def window_slots(ids: np.ndarray, index: np.ndarray) -> np.ndarray:
        """(N, H) state ids of each window from its (N, H) rows into ``ids`` (-1: padding,
        kept as -1 so that padding never shares a key with a state)."""
        return np.where(index >= 0, ids[np.clip(index, 0, None)], -1)

    @staticmethod
    def window_keys(slots: np.ndarray, actions: np.ndarray) -> list[bytes]:
        """One key per window from its (N, H) state ids (-1: padding) and (N, H) action ids."""
        rows = np.ascontiguousarray(np.concatenate([slots, actions], axis=1), np.int64)
        return [r.tobytes() for r in rows]

    def lookup(self, keys: list[bytes]) -> tuple[np.ndarray, dict[bytes, list[int]]]:
        """Known values (NaN where unknown) and, for each distinct unknown key, its rows."""
        values = np.full(len(keys), np.nan)
        missing: dict[bytes, list[int]] = {}
        known = self._values
        for i, k in enumerate(keys):
            v = known.get(k)
            if v is None:
                missing.setdefault(k, []).append(i)
            else:
                values[i] = v
        self.misses += sum(len(rows) for rows in missing.values())
        self.hits += len(keys) - sum(len(rows) for rows in missing.values())
        return values, missing

    def store(self, keys: Iterable[bytes], values: Iterable[float]) -> None:
        self._values.update(zip(keys, map(float, values)))

    def hit_rate(self) -> float:
        seen = self.hits + self.misses
        return self.hits / seen if seen else 0.0

    def __len__(self) -> int:
        return len(self._values)
