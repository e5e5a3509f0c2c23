"""ELLM (Du et al. 2023): goals an LLM suggests for the current caption, and the reward paid
when the agent achieves one of them.

- :mod:`.reward`: the reward over train-batch episode pieces (``GoalMatcher``,
  ``EpisodePiece``), matching suggestions against the envs' ``info["achieved"]``;
- :mod:`.vocabulary`: every goal of a family, for the "novelty" baseline (``novelty_goals``),
  and the goal texts that name one achievement (``goal_synonyms``).
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
from rl_bk.goal_suggestion.vocabulary import goal_synonyms, novelty_goals

__all__ = [
    "DEFAULT_THRESHOLD",
    "Embedder",
    "EpisodePiece",
    "GoalMatcher",
    "goal_synonyms",
    "normalise",
    "novelty_goals",
    "similarity_table",
]
