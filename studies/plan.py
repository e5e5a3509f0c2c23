"""A study's plan, as data: ``studies/plans/<study>.yaml``, checked here before anything runs.

A plan names its question, its parts (each a task file as committed, with what the part
changes in it: methods, a method's sweep grid, seeds, fields of the task's sections, env steps
and budgets), the env steps and budgets of every part that does not set its own, and how the
report reads the trials: paired comparisons, the curves whose areas it pairs, extra final
columns, notes written before the first trial.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

PLANS = Path(__file__).resolve().parent / "plans"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Changes(_Strict):
    """What a part changes in its task file (anything left out is the file's)."""

    methods: list[str] | None = None
    seeds: list[int] | None = None
    #: a method's sweep grid, replacing the file's grid of that method
    sweep: dict[str, dict[str, list[Any]]] = Field(default_factory=dict)
    #: fields of the task's sections (``env_runners``, ``learner``, ``appo``, ...)
    sections: dict[str, dict[str, Any]] = Field(default_factory=dict)
    steps: int | None = Field(None, gt=0)
    budgets: list[int] | None = None
    #: training iterations between a trial's checkpoints: a trial longer than the time its
    #: processes live (a session here) resumes from its last checkpoint, not from the start
    checkpoint_every: int | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _steps_with_budgets(self) -> Changes:
        if (self.steps is None) != (self.budgets is None):
            raise ValueError("steps and budgets go together: give both or neither")
        return self

    def over(self, base: Changes) -> Changes:
        """These changes on top of ``base`` (a sweep grid or section merged by name)."""
        merged = {
            **base.model_dump(exclude_none=True),
            **self.model_dump(exclude_none=True, exclude={"sweep", "sections"}),
        }
        merged["sweep"] = {**base.sweep, **self.sweep}
        merged["sections"] = {
            s: {**base.sections.get(s, {}), **self.sections.get(s, {})}
            for s in {**base.sections, **self.sections}
        }
        return Changes.model_validate(merged)


class Part(_Strict):
    name: str
    task: str  # a task file in tune_configs/
    changes: Changes = Changes()


#: A pairing: every variant against this baseline variant, or ``[tag, baseline_tag]``: each
#: variant whose label holds ``tag`` against the same label with ``baseline_tag`` in its place.
Pairing = str | tuple[str, str]


class StudyPlan(_Strict):
    name: str
    question: str
    parts: list[Part] = Field(min_length=1)
    #: applied to every part, under the part's own changes
    changes: Changes = Changes()
    steps: int | None = Field(None, gt=0)
    budgets: list[int] | None = None
    paired: list[Pairing] = Field(default_factory=list)
    #: every method of a seed before the next seed: a study cut short keeps whole pairs
    seed_major: bool = False
    #: each grid point a sweep of its own, so its speed and its labels' latency are its own
    one_variant_per_sweep: bool = False
    #: the curves whose normalised areas the paired table compares (the first is primary)
    curves: list[str] = Field(default_factory=list)
    #: metrics whose last value each trial's row keeps
    final_columns: list[str] = Field(default_factory=list)
    #: Crafter: achievements left out of the primary measure (achievements per episode
    #: minus their unlock rates)
    leave_out: list[str] = Field(default_factory=list)
    knowledge: str | None = None
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _one_pairing_is_a_list(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("paired"), str | tuple):
            data = {**data, "paired": [data["paired"]]}
        return data

    def part_changes(self, part: Part) -> Changes:
        """The part's changes on the plan's, with the plan's env steps and budgets where the
        part sets none."""
        changes = part.changes.over(self.changes)
        if changes.steps is None and self.steps is not None:
            changes = changes.model_copy(update={"steps": self.steps, "budgets": self.budgets})
        return changes


class PlanError(ValueError):
    pass


def plan_names() -> list[str]:
    return sorted(p.stem for p in PLANS.glob("*.yaml"))


def load_plan(name: str, folder: Path = PLANS) -> StudyPlan:
    path = folder / f"{name}.yaml"
    if not path.is_file():
        raise PlanError(f"no study {name!r}; the studies: {', '.join(plan_names())}")
    data = yaml.safe_load(path.read_text())
    try:
        return StudyPlan.model_validate({"name": name, **data})
    except ValueError as err:
        raise PlanError(f"{path}: {err}") from None
