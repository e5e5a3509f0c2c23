"""ELLM (Du et al. 2023): goals an LLM suggests for the current caption, and the reward paid
when the agent achieves one of them.

- :mod:`.reward`: the reward over train-batch episode pieces (``GoalMatcher``,
  ``EpisodePiece``), matching suggestions against the envs' ``info["achieved"]``;
- :mod:`.vocabulary`: every goal of a family, for the "novelty" baseline (``novelty_goals``).
"""

from __future__ import annotations

from rl_bk.goal_suggestion.reward import (
    DEFAULT_THRESHOLD,
    Embedder,
    EpisodePiece,
    GoalMatcher,
    normalise,
    similarity_table,
)
from rl_bk.goal_suggestion.vocabulary import novelty_goals

__all__ = [
    "DEFAULT_THRESHOLD",
    "Embedder",
    "EpisodePiece",
    "GoalMatcher",
    "normalise",
    "novelty_goals",
    "similarity_table",
]
