"""BK-Goal, offline: ask the labeler for goals on dataset segments and keep a goal list, each
goal under the keys (segment texts) that produced it. BK held one long conversation; the
labelling contract has none, so each iteration here is one independent request, and the
iterations are labelled in batches. How requests, keys and de-duplication follow BK's
``label_goals.py``: docs/methods.md#bk-goals-potential.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from rl_bk.knowledge.dataset import sample_segments
from rl_bk.knowledge.trajectory import Chunk, caption_history, step_text, windows
from rl_bk.labeling.labeler import Labeler, label_in_batches
from rl_bk.labeling.tasks import GoalsRequest

LABEL_BATCH = 16  # requests per labeler call
GOALS_FILE = "goals.json"


def normalize_goal(text: str) -> str:
    """The dedup form of a goal: lowercase, single spaces, no trailing punctuation."""
    return re.sub(r"\s+", " ", text).strip().lower().rstrip(" .!?;:,")


@dataclass
class GoalList:
    """The goal library: ``goals[i]`` is goal id i; ``key_goals[j]`` the ids of ``keys[j]``."""

    goals: list[str]
    keys: list[str]
    key_goals: list[list[int]]
    family: str | None = None
    mission: str | None = None
    segment_length: int = 3
    labels: str = "unknown"
    is_oracle: bool | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def save(self, out_dir: str | Path) -> Path:
        path = Path(out_dir) / GOALS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2))
        return path

    @classmethod
    def load(cls, out_dir: str | Path) -> GoalList:
        return cls(**json.loads((Path(out_dir) / GOALS_FILE).read_text()))

    def __repr__(self) -> str:
        shown = ", ".join(repr(g) for g in self.goals[:10])
        more = f", ... ({len(self.goals)} in all)" if len(self.goals) > 10 else ""
        return (
            f"GoalList({len(self.keys)} keys, goals=[{shown}{more}], "
            f"labels={self.labels!r}, counts={self.counts})"
        )


def goals_request(
    segment: Chunk, family: str | None, mission: str | None, max_goals: int
) -> GoalsRequest:
    history = [step_text(c, a, family) for c, a in zip(segment.captions[:-1], segment.actions)]
    return GoalsRequest(
        caption=segment.captions[-1],
        history=history,
        env=family,  # type: ignore[arg-type]
        mission=mission,
        max_goals=max_goals,
    )


def build_goal_list(
    labeler: Labeler,
    episodes: Sequence[Chunk],
    out_dir: str | Path,
    *,
    family: str | None,
    mission: str | None = None,
    iterations: int = 100,
    segment_length: int = 3,
    max_goals: int = 5,
    seed: int = 0,
) -> GoalList:
    """Labels ``iterations`` random segments of ``segment_length`` steps, builds the goal list
    and writes out_dir/goals.json. A failed batch is retried one by one;
    a segment the labeler fails on alone is counted in ``counts["failed"]`` and skipped."""
    rng = np.random.default_rng(seed)
    segments = sample_segments(episodes, segment_length, iterations, rng)
    goal_ids: dict[str, int] = {}
    key_goals: dict[str, list[int]] = {}
    counts = {"iterations": iterations, "failed": 0, "empty": 0, "answers": 0}
    requests = [goals_request(s, family, mission, max_goals) for s in segments]
    labels = label_in_batches(
        labeler, "goals", requests, batch_size=LABEL_BATCH, desc="bk-goal labels", unit="segment"
    )
    for segment, label in zip(segments, labels):
        if label is None:
            counts["failed"] += 1
            continue
        ids = []
        for goal in label.goals:  # type: ignore[attr-defined]
            text = normalize_goal(goal)
            counts["answers"] += 1
            if text:
                ids.append(goal_ids.setdefault(text, len(goal_ids)))
        if not ids:
            counts["empty"] += 1
            continue
        key = caption_history(windows(segment, segment_length + 1)[-1], family)
        known = key_goals.setdefault(key, [])
        known += [i for i in dict.fromkeys(ids) if i not in known]
    counts["goals"], counts["keys"] = len(goal_ids), len(key_goals)
    result = GoalList(
        goals=list(goal_ids),
        keys=list(key_goals),
        key_goals=list(key_goals.values()),
        family=family,
        mission=mission,
        segment_length=segment_length,
        labels=str(getattr(labeler, "identity", type(labeler).__name__)),
        is_oracle=getattr(labeler, "is_oracle", None),
        counts=counts,
    )
    result.save(out_dir)
    return result
