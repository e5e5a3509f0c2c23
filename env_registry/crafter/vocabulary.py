"""Crafter's words: the name of each action, and the goal language that the labeler's
grammar and parser, the rule-based oracle, ELLM's novelty baseline and the env's
``info["achieved"]`` all speak, so that none of them can drift from the others.

Plain data with no imports, so that a labeler can read it without loading crafter.
"""

from __future__ import annotations

#: Text for each action id (crafter's ``constants.actions`` order).
ACTION_NAMES: tuple[str, ...] = (
    "noop",
    "move left",
    "move right",
    "move up",
    "move down",
    "do",
    "sleep",
    "place stone",
    "place table",
    "place furnace",
    "place plant",
    "make wood pickaxe",
    "make stone pickaxe",
    "make iron pickaxe",
    "make wood sword",
    "make stone sword",
    "make iron sword",
)

#: Every valid goal, canonical form, in the grammar's order (ELLM's novelty baseline keeps it).
GOALS: tuple[str, ...] = (
    "collect wood",
    "collect sapling",
    "collect stone",
    "collect coal",
    "collect iron",
    "collect diamond",
    "drink water",
    "eat cow",
    "eat plant",
    "attack zombie",
    "attack skeleton",
    "attack cow",
    "place crafting table",
    "place furnace",
    "place plant",
    "place stone",
    "make wood pickaxe",
    "make stone pickaxe",
    "make iron pickaxe",
    "make wood sword",
    "make stone sword",
    "make iron sword",
    "sleep",
)
GOAL_VERBS: tuple[str, ...] = ("collect", "drink", "eat", "attack", "place", "make", "sleep")
#: What the goals act on, in order of first mention.
GOAL_OBJECTS: tuple[str, ...] = tuple(dict.fromkeys(g.split(" ", 1)[1] for g in GOALS if " " in g))
