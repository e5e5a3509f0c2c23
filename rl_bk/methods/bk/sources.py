"""Potential sources by name, built lazily where they are used.

A shaped-PPO config carries a :class:`SourceSpec` (a kind, an artifact folder and options):
plain data that pickles into every learner. The learner's connector wraps it in a
:class:`LazySource`, which builds the real source (a sandboxed program, a torch model, an
embedding index) on its first batch, in the learner's own process.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rl_bk.knowledge.trajectory import Chunk
from rl_bk.methods.bk.potential import PotentialSource
from rl_bk.storage import fetch

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
