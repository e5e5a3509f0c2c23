"""NetHack's goal language, as the labeler's grammar and parser and the rule-based oracle
speak it. Deliberately modest: what the message line can tell, in the words ONI's prompts
use (facebookresearch/oni).

Plain data with no imports, so that a labeler can read it without loading nle.
"""

from __future__ import annotations

#: Every valid goal, canonical form, in the grammar's order.
GOALS: tuple[str, ...] = (
    "descend the stairs",
    "find the stairs",
    "explore the level",
    "pick up the gold",
    "pick up the item",
    "open the door",
    "kick the door",
    "kill the monster",
    "eat food",
    "search for hidden passages",
    "pray",
    "rest",
)
GOAL_VERBS: tuple[str, ...] = (
    "descend",
    "find",
    "explore",
    "pick up",
    "open",
    "kick",
    "kill",
    "eat",
    "search",
    "pray",
    "rest",
)
GOAL_OBJECTS: tuple[str, ...] = (
    "stairs",
    "level",
    "gold",
    "item",
    "door",
    "monster",
    "food",
    "passages",
)
