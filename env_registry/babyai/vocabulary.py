"""BabyAI's words: the name of each action, and the goal language (verbs, colours, things)
that the labeler's grammar and parser, the rule-based oracle, ELLM's novelty baseline and the
env's ``info["achieved"]`` all speak, so that none of them can drift from the others.

Plain data (the standard library only), so that a labeler can read it without loading
minigrid; the unit tests check it against minigrid's own names.
"""

from __future__ import annotations

from itertools import product

#: Text for each action id (minigrid's Actions order), in the words of BK's captions.
ACTION_NAMES: tuple[str, ...] = (
    "turn left",
    "turn right",
    "go forward",
    "pick up the front object",
    "drop the carried object",
    "toggle the front object",
    "done",
)

#: The order is the grammar's: a grammar-constrained sampler picks by position.
COLORS: tuple[str, ...] = ("red", "green", "blue", "purple", "yellow", "grey")
#: Things the agent can carry.
PORTABLE: tuple[str, ...] = ("ball", "box", "key")
#: Things a goal can name ("go to the red door"); walls, floors and lava are not.
THINGS: tuple[str, ...] = (*PORTABLE, "door")
GOAL_VERBS: tuple[str, ...] = ("go to", "pick up", "open", "put")


def _goals() -> frozenset[str]:
    def phrases(kinds: tuple[str, ...]) -> list[str]:
        return [f"{c} {k}" for c, k in product(COLORS, kinds)] + list(kinds)

    things, portable = phrases(THINGS), phrases(PORTABLE)
    goals = {f"go to the {t}" for t in things}
    goals |= {f"pick up the {p}" for p in portable}
    goals |= {f"open the {d}" for d in phrases(("door",))}
    goals |= {f"put the {p} next to the {t}" for p, t in product(portable, things)}
    return frozenset(goals)


#: Every valid goal, canonical form: "go to the red ball", "open the door", ...
GOALS: frozenset[str] = _goals()
