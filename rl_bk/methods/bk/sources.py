"""BK's potential sources: what each knowledge source turns into (a potential Phi over states,
computed in batch: :class:`PotentialSource`, called once per train batch, never once per env
step), and each built by name, lazily, where it is used: a config carries a
:class:`SourceSpec`, plain data that pickles into every learner, and the learner's connector
wraps it in a :class:`LazySource`, which builds the real source on its first batch.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
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
