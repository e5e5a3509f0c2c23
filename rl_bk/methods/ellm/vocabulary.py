"""The goals a family's envs can report as achieved, for ELLM's "novelty" baseline, which
suggests every goal not achieved yet in the episode (an oracle list, no LLM): with
:class:`~.goal_matching.GoalMatcher`'s novelty filter doing the "not achieved yet" part, its
suggestion is the whole vocabulary every step. Only the families whose envs fill
``info["achieved"]`` (Crafter, BabyAI) are offered: under any other it could never pay.
"""

from __future__ import annotations

from env_registry.babyai import vocabulary as babyai
from env_registry.crafter import vocabulary as crafter

_GOALS: dict[str, tuple[str, ...]] = {
    "crafter": crafter.GOALS,  # the grammar's order
    "babyai": tuple(sorted(babyai.GOALS)),  # a frozenset: sorted, to be stable
}


def novelty_goals(family: str) -> tuple[str, ...]:
    """Every goal of ``family``'s vocabulary: 23 for Crafter, 644 for BabyAI."""
    goals = _GOALS.get(family)
    if goals is None:
        raise ValueError(
            f"no goal vocabulary with achieved-goal reports for family {family!r}; "
            f"families: {', '.join(sorted(_GOALS))}"
        )
    return goals


#: Goal texts that name the same achievement, per family: text -> the one it counts as. ELLM's
#: ``take_action`` treats "attack cow" and "eat cow" as one goal (Crafter's eat_cow is
#: unlocked by attacking a cow until it is eaten, and nothing else reports "attack cow"), and
#: "make" and "place crafting table" likewise.
GOAL_SYNONYMS: dict[str, dict[str, str]] = {
    "crafter": {"attack cow": "eat cow", "make crafting table": "place crafting table"},
}


def goal_synonyms(family: str) -> dict[str, str]:
    return dict(GOAL_SYNONYMS.get(family, {}))
