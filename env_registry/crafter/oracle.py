"""The rule-based oracle's Crafter rules: crafter's recipes as a prerequisite map (crafter
1.8.3's ``data.yaml``: a table takes 2 wood, a furnace 4 stone and a nearby table, ...), read
against the captions of :mod:`.captioner`, either style.

Goals = every step achievable now from the inventory and what is in view, urgent needs first,
then the most advanced (ELLM's oracle); helpful = the task's item is already made, or a step
toward it is achievable now; preference = the segment that ends further along the tech tree
(then: with more items, then: gaining more). ELLM-style captions give no counts; an item
they list counts as "enough".

Pure functions over caption text, the same text an LLM reads: the label types and the
request handling stay in the library (``rl_bk.labeling.backends.oracle``), which calls these
(and turns a task's text into a goal of :mod:`.vocabulary` first), so ``env_registry`` never
imports ``rl_bk``. The round-trip test (``tests/unit/test_caption_round_trip.py``) keeps
:func:`parse_caption` and the captioner in step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

#: Words only Crafter's captions write, in either style (for telling the family from a caption).
CAPTION_MARK = re.compile(
    r"\b(?:health|food|drink|energy) \d+/9\b|you have in your inventory|you are targeting|"
    r"you see:|^you see [a-z ,]*\b(?:tree|grass|water|sand|cow|zombie|stone)\b",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass
class CaptionState:
    """What a Crafter caption (either style) says. Counts are None where the caption gives none."""

    seen: set[str] = field(default_factory=set)
    facing: str | None = None
    inventory: dict[str, int | None] = field(default_factory=dict)
    low: set[str] = field(default_factory=set)  # vitals that need care: food, drink, energy, health
    sleeping: bool = False
    dead: bool = False

    def has(self, item: str, n: int = 1) -> bool:
        if item not in self.inventory:
            return False
        count = self.inventory[item]
        return count is None or count >= n


_VITAL = re.compile(r"\b(health|food|drink|energy) (\d+)/9\b")
_FEELING = {"hurt": "health", "hungry": "food", "thirsty": "drink", "sleepy": "energy"}
_LOW_VITAL = 4  # a SmartPlay vital at or below this is urgent


def _canonical_name(name: str) -> str:
    name = name.strip().removeprefix("a ").removeprefix("an ")
    return {"crafting table": "table"}.get(name, name)


def _split_names(text: str) -> list[str]:
    return [n for n in re.split(r",\s*(?:and\s+)?|\s+and\s+", text.strip()) if n]


def parse_caption(caption: str) -> CaptionState:
    """Reads :func:`.captioner.caption_smartplay` and :func:`.captioner.caption_ellm` captions."""
    s = CaptionState()
    text = caption.lower()
    for sentence in re.split(r"\.\s*", text):
        sentence = sentence.strip()
        if sentence.startswith("you see:"):
            for entry in sentence[len("you see:") :].split(","):
                m = re.match(r"\s*([a-z_ ]+?) \d+ steps? to your", entry)
                if m:
                    s.seen.add(_canonical_name(m.group(1)))
        elif sentence.startswith("you see ") and sentence != "you see nothing":
            s.seen.update(_canonical_name(n) for n in _split_names(sentence[len("you see ") :]))
        elif m := re.match(r"you (?:face|are targeting) (.+?)(?: to your [a-z-]+)?$", sentence):
            s.facing = _canonical_name(m.group(1))
            s.seen.add(s.facing)
        elif sentence.startswith("you have in your inventory "):
            for name in _split_names(sentence[len("you have in your inventory ") :]):
                s.inventory[{"plant": "sapling"}.get(name, name).replace(" ", "_")] = None
        elif sentence.startswith("you have ") and "nothing" not in sentence:
            for entry in sentence[len("you have ") :].split(","):
                if m := re.match(r"\s*(\d+) ([a-z_ ]+)", entry):
                    s.inventory[m.group(2).strip().replace(" ", "_")] = int(m.group(1))
        elif sentence.startswith("you feel "):
            s.low.update(_FEELING[w] for w in _split_names(sentence[9:]) if w in _FEELING)
        elif vitals := _VITAL.findall(sentence):
            s.low.update(v for v, n in vitals if int(n) <= _LOW_VITAL)
        elif sentence == "you are sleeping":
            s.sleeping = True
        elif sentence == "you died":
            s.dead = True
    s.seen.discard("the edge of the world")
    return s


#: Each goal's prerequisite goals (crafter's recipes), for "is this a step toward X".
PREREQUISITES: dict[str, tuple[str, ...]] = {
    "place crafting table": ("collect wood",),
    "make wood pickaxe": ("place crafting table", "collect wood"),
    "make wood sword": ("place crafting table", "collect wood"),
    "collect stone": ("make wood pickaxe",),
    "collect coal": ("make wood pickaxe",),
    "place stone": ("collect stone",),
    "place furnace": ("collect stone", "place crafting table"),
    "make stone pickaxe": ("collect stone", "collect wood", "place crafting table"),
    "make stone sword": ("collect stone", "collect wood", "place crafting table"),
    "collect iron": ("make stone pickaxe",),
    "make iron pickaxe": ("collect iron", "collect coal", "collect wood", "place furnace"),
    "make iron sword": ("collect iron", "collect coal", "collect wood", "place furnace"),
    "collect diamond": ("make iron pickaxe",),
    "place plant": ("collect sapling",),
}
#: How far along the tech tree an item (or a placed table/furnace) is.
STAGE: dict[str, int] = {
    "sapling": 1,
    "wood": 1,
    "table": 2,
    "wood_pickaxe": 2,
    "wood_sword": 2,
    "stone": 3,
    "coal": 3,
    "furnace": 4,
    "stone_pickaxe": 4,
    "stone_sword": 4,
    "iron": 5,
    "iron_pickaxe": 6,
    "iron_sword": 6,
    "diamond": 7,
}
_LOW_VALUE = {"collect sapling", "place plant", "place stone"}


def is_done(goal: str, s: CaptionState) -> bool:
    """Whether the caption shows the goal's result (an item held, a table placed in view)."""
    verb, _, obj = goal.partition(" ")
    if verb in ("collect", "make"):
        return s.has(obj.replace(" ", "_"))
    if goal == "place crafting table":
        return "table" in s.seen
    if goal == "place furnace":
        return "furnace" in s.seen
    return False


def achievable_goals(s: CaptionState) -> list[str]:
    """Every goal achievable now (ELLM's oracle), urgent needs first, then the most advanced."""
    if s.dead:
        return []
    near, has = s.seen.__contains__, s.has
    urgent = []
    if "drink" in s.low and near("water"):
        urgent.append("drink water")
    if "food" in s.low:
        urgent += [g for g, o in (("eat cow", "cow"), ("eat plant", "plant")) if near(o)]
    if "energy" in s.low and not s.sleeping:
        urgent.append("sleep")
    urgent += [f"attack {m}" for m in ("zombie", "skeleton") if near(m)]
    table, furnace = near("table"), near("furnace")
    iron_kit = has("wood") and has("coal") and has("iron") and table and furnace
    stone_kit = has("wood") and has("stone") and table
    steps = [
        ("make iron pickaxe", iron_kit and not has("iron_pickaxe")),
        ("make iron sword", iron_kit and not has("iron_sword")),
        ("collect diamond", near("diamond") and has("iron_pickaxe")),
        ("collect iron", near("iron") and has("stone_pickaxe")),
        ("place furnace", has("stone", 4) and table and not furnace),
        ("make stone pickaxe", stone_kit and not has("stone_pickaxe")),
        ("make stone sword", stone_kit and not has("stone_sword")),
        ("collect coal", near("coal") and has("wood_pickaxe")),
        ("collect stone", near("stone") and has("wood_pickaxe")),
        ("make wood pickaxe", has("wood") and table and not has("wood_pickaxe")),
        ("make wood sword", has("wood") and table and not has("wood_sword")),
        ("place crafting table", has("wood", 2) and not table),
        ("collect wood", near("tree")),
        ("drink water", near("water")),
        ("eat cow", near("cow")),
        ("eat plant", near("plant")),
        ("collect sapling", near("grass")),
        ("place plant", has("sapling") and near("grass")),
        ("place stone", has("stone")),
    ]
    out = urgent + [g for g, ok in steps if ok]
    return list(dict.fromkeys(out))


def _chain(goal: str) -> set[str]:
    chain, todo = set(), [goal]
    while todo:
        g = todo.pop()
        if g not in chain:
            chain.add(g)
            todo.extend(PREREQUISITES.get(g, ()))
    return chain


def is_helpful(caption: str, goal: str | None) -> bool:
    """Whether the state is a step toward ``goal`` (a goal of :mod:`.vocabulary`; None for the
    full game or free text, where any real step forward counts)."""
    s = parse_caption(caption)
    now = set(achievable_goals(s))
    if goal is None:
        return bool(now - _LOW_VALUE)
    if is_done(goal, s):
        return True
    return any(g in now and not is_done(g, s) for g in _chain(goal))


def suggest_goals(caption: str) -> list[str]:
    """:func:`achievable_goals` of the caption's state."""
    return achievable_goals(parse_caption(caption))


def progress(caption: str) -> tuple[int, int, int]:
    """(alive and furthest stage, distinct items, total count) of one caption."""
    s = parse_caption(caption)
    if s.dead:
        return (-1, 0, 0)
    held = [i for i in s.inventory if s.has(i)]
    placed = [p for p in ("table", "furnace") if p in s.seen]
    stage = max((STAGE.get(i, 1) for i in held + placed), default=0)
    total = sum(s.inventory[i] or 1 for i in held)
    return (stage, len(held) + len(placed), total)


def prefer(segment_a: Sequence[str], segment_b: Sequence[str]) -> str:
    """``"A"``, ``"B"`` or ``"tie"``: further along at the end (:func:`progress`), then the
    larger gain in item count over the segment."""

    def key(segment: Sequence[str]) -> tuple:
        end, start = progress(segment[-1]), progress(segment[0])
        return (*end, end[2] - start[2])

    a, b = key(segment_a), key(segment_b)
    return "tie" if a == b else "A" if a > b else "B"
