"""BK's potential sources: what each knowledge source turns into (a potential Phi over states,
computed in batch: :class:`PotentialSource`, called once per train batch, never once per env
step), and each built by name, lazily, where it is used: a config carries a
:class:`SourceSpec`, plain data that pickles into every learner, and the learner's connector
wraps it in a :class:`LazySource`, which builds the real source on its first batch.
"""

from __future__ import annotations

import importlib
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rl_bk.knowledge.trajectory import Chunk
from rl_bk.storage import fetch


@runtime_checkable
class PotentialSource(Protocol):
    """Maps the chunks of one train batch (or of a dataset) to one potential per state:
    ``n + 1`` values for a chunk of ``n`` steps. The shaping connector calls it once per train
    batch, so a source may run a model, a sandboxed program or a Serve deployment once per
    call, never once per env step."""

    #: Shown in logs and results ("bk-code", "bk-pref", ...).
    name: str
    #: How many states a window holds: the potential of state t reads states t-horizon+1..t
    #: (and the actions between them); 1 for a potential of the current state alone.
    horizon: int

    def __call__(self, chunks: Sequence[Chunk]) -> list[np.ndarray]:
        """One float array of ``len(chunk) + 1`` potentials per chunk, in order."""
        ...

    def metrics(self) -> dict[str, float]:
        """Counters worth logging (errors, cache hits, ...); may be empty."""
        ...


def split_by_chunk(values: np.ndarray, chunks: Sequence[Chunk]) -> list[np.ndarray]:
    """Cuts a flat array of per-state values (all chunks' states in order) back into chunks."""
    sizes = [len(c) + 1 for c in chunks]
    if len(values) != sum(sizes):
        raise ValueError(f"{len(values)} values for {sum(sizes)} states")
    return [
        np.asarray(v, dtype=np.float64) for v in np.split(np.asarray(values), np.cumsum(sizes)[:-1])
    ]


#: kind -> "module:callable" that takes (folder, **options) and returns a PotentialSource.
LOADERS: dict[str, str] = {
    "bk-code": "rl_bk.methods.bk.code.potential:CodePotential.from_dir",
    "bk-pref": "rl_bk.methods.bk.preference.potential:PreferencePotential.from_dir",
    "bk-goal": "rl_bk.methods.bk.goals.potential:GoalPotential.from_dir",
}


# Potentials of windows already scored, remembered across train batches: a potential reads a
# window of the last few states and actions and nothing else, agents revisit the same windows
# all the time, and scoring them again was most of what bk-pref and bk-goal cost per batch.
# Only for potentials that are fixed functions of the window (trained once, before RL): a
# model that keeps learning must not be memoised.

#: WindowMemo's entries (states or windows) before both its tables are cleared.
WINDOW_MEMO_CAPACITY = 500_000


class WindowMemo:
    """Phi of each window seen, keyed by content, never by text formatting: each state's own
    key (its observation's bytes, or its caption) maps to an integer id, and a window's key is
    the bytes of its ids and action ids. When either table passes ``capacity`` entries both
    are cleared (ids would otherwise point at states that are gone); clearing costs one batch
    of re-scoring."""

    def __init__(self, capacity: int = WINDOW_MEMO_CAPACITY):
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


class UnknownSourceError(ValueError):
    pass


@dataclass(frozen=True)
class SourceSpec:
    """A kind, an artifact folder and options: plain data that pickles into every learner,
    where a :class:`LazySource` builds the real source (a sandboxed program, a torch model, an
    embedding index) on its first batch, in the learner's own process."""

    kind: str
    path: str
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in LOADERS:
            raise UnknownSourceError(
                f"unknown potential source {self.kind!r}; valid: {', '.join(sorted(LOADERS))}"
            )

    def build(self) -> PotentialSource:
        """The source, loaded from the artifact (fetched to this node first if ``path`` is a
        storage URI)."""
        module_name, attr = LOADERS[self.kind].split(":")
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
        return target(str(fetch(self.path)), **self.options)


class LazySource:
    """A PotentialSource that builds itself from its spec on first use."""

    def __init__(self, spec: SourceSpec):
        self.spec = spec
        self.name = spec.kind
        self._source: PotentialSource | None = None

    @property
    def source(self) -> PotentialSource:
        if self._source is None:
            self._source = self.spec.build()
        return self._source

    @property
    def horizon(self) -> int:
        return int(getattr(self.source, "horizon", 1))

    def __call__(self, chunks: Sequence[Chunk]) -> list[np.ndarray]:
        return self.source(chunks)

    def metrics(self) -> dict[str, float]:
        return self._source.metrics() if self._source is not None else {}

    def __getstate__(self) -> dict:
        return {"spec": self.spec, "name": self.name, "_source": None}
