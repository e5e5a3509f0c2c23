"""What each of BK's knowledge sources turns into: a potential Phi over states, computed in
batch.

A :class:`PotentialSource` maps the chunks of one train batch (or of a dataset) to one
potential per state: ``n + 1`` float values for a chunk of ``n`` steps. The shaping connector
calls it once per train batch, so a source may run a model, a sandboxed program or a
Serve deployment once per call, never once per env step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from rl_bk.knowledge.trajectory import Chunk


@runtime_checkable
class PotentialSource(Protocol):
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
