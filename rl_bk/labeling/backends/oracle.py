"""OracleBackend: environment rules that answer as a strong LLM would.

An upper bound for benchmarks (ELLM's SimpleOracle is the precedent), never an LLM result:
``is_oracle`` is True and the name is "oracle", so its labels are stored and reported apart.
It reads the same captions an LLM would read (``env_registry.<family>.captioner``), not the
env's state.

Rules per env family (the request's ``env``; when None, inferred from the caption format):

- BabyAI with a mission (the goal-aware oracle: ``GoalsRequest.mission``,
  ``PreferenceRequest.criteria``, ``HelpfulRequest.task`` name target objects): goals are the
  mission's sub-goals in the order they must be done; helpful = the caption shows (or the
  agent carries) a target; preference = the segment whose last caption shows a target nearer
  (sideways + forward steps; visible beats not visible; equal is a tie).
- BabyAI without a mission (BK's setting, the task-agnostic oracle): only what BK's prompts
  tell an LLM (:mod:`~rl_bk.labeling.backends.babyai_background`). Goals: go to / open the
  nearest visible objects; preference: the segment that ends nearer an object, with fewer
  wasted actions (blocked moves, acting on nothing); reward code: the same rules as a
  potential.
- Crafter: crafter's recipes as a prerequisite map (``data.yaml``: a table takes 2 wood, a
  furnace 4 stone and a nearby table, ...). Goals = every step achievable now from the
  inventory and what is in view, urgent needs first, then the most advanced; helpful = the
  task's item is already made, or a step toward it is achievable now; preference = the
  segment that ends further along the tech tree (then: with more items, then: gaining more).
  ELLM-style captions give no counts; an item they list counts as "enough".
- NetHack: keyword scores of the message line ("You kill", "staircase", "gold", "welcome"
  up; "You die", "It's a wall", "You can't" down), as ONI's prompt judges messages by the
  game's score; helpful = positive score; preference = higher segment score, plus progress in
  the status line (depth, experience level, gold). Goals come from the keywords too.
- reward_code: a documented potential function, marked as oracle-written: for BabyAI "go to"
  missions the target's distance in the latest caption, for BabyAI without a mission the
  task-agnostic potential above, otherwise a generic keyword score.

Unknown env (None and not inferable, or minedojo): neutral answers: ``tie``, ``no``, ``[]``.
``action_scores`` and free text need an LLM: UnsupportedError.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from env_registry.babyai.vocabulary import COLORS as BABYAI_COLORS
from env_registry.babyai.vocabulary import THINGS as BABYAI_THINGS
from rl_bk.labeling.backends.babyai_background import segment_score, task_agnostic_code
from rl_bk.labeling.backends.base import Backend, BackendError, UnsupportedError
from rl_bk.labeling.grammars import ENV_VOCABULARY, normalize_goal, normalize_signature
from rl_bk.labeling.parsing import coerce_requests
from rl_bk.labeling.tasks import (
    GoalsLabel,
    GoalsRequest,
    HelpfulLabel,
    HelpfulRequest,
    PreferenceLabel,
    PreferenceRequest,
    RewardCodeLabel,
    RewardCodeRequest,
)

# ---------------------------------------------------------------------------- env inference
_NETHACK_STATUS = re.compile(r"\bHP -?\d+/\d+, dungeon level -?\d+\b|\bThe game is over\.")
_BABYAI_SENTENCE = re.compile(
    r"\bYou (?:see (?:a wall|an? [\w ]*?(?:ball|box|key|door|goal)) "
    r"\d+ steps? (?:left|right|forward)|see nothing in front|carry an? \w+ (?:ball|box|key))"
)
_CRAFTER_MARK = re.compile(
    r"\b(?:health|food|drink|energy) \d+/9\b|you have in your inventory|you are targeting|"
    r"you see:|^you see [a-z ,]*\b(?:tree|grass|water|sand|cow|zombie|stone)\b",
    re.IGNORECASE | re.MULTILINE,
)
_BABYAI_MISSION = re.compile(
    rf"\b(go to|pick up|open|put) (?:the|a|an) (?:({'|'.join(BABYAI_COLORS)}) )?"
    rf"({'|'.join(BABYAI_THINGS)})\b"
    rf"(?: next to (?:the|a|an) (?:({'|'.join(BABYAI_COLORS)}) )?({'|'.join(BABYAI_THINGS)})\b)?",
    re.IGNORECASE,
)


def infer_env(*texts: str) -> str | None:
    """The env family a caption (or mission) is written for, or None if it is not clear."""
    text = "\n".join(texts)
    if _NETHACK_STATUS.search(text):
        return "nethack"
    if _BABYAI_SENTENCE.search(text):
        return "babyai"
    if _CRAFTER_MARK.search(text):
        return "crafter"
    if _BABYAI_MISSION.search(text):
        return "babyai"
    return None


# ----------------------------------------------------------------------------------- BabyAI
@dataclass(frozen=True)
class BabyAIObject:
    color: str
    kind: str  # ball, box, key or door
    right: int  # steps to the right (negative: left)
    forward: int
    state: str | None = None  # doors: open, closed or locked

    @property
    def distance(self) -> int:
        return abs(self.right) + self.forward


@dataclass(frozen=True)
class BabyAITarget:
    verb: str  # go to, pick up, open, put
    color: str | None
    kind: str
    next_to: tuple[str | None, str] | None = None  # put ... next to (color, kind)

    def matches(self, color: str, kind: str) -> bool:
        return kind == self.kind and self.color in (None, color)

    @property
    def goal(self) -> str:
        def phrase(color: str | None, kind: str) -> str:
            return f"the {color} {kind}" if color else f"the {kind}"

        text = f"{self.verb} {phrase(self.color, self.kind)}"
        if self.next_to is not None:
            text += f" next to {phrase(*self.next_to)}"
        return text


_OBJECT_SENTENCE = re.compile(
    r"^You see an? (?:(open|closed|locked) )?(\w+) (ball|box|key|door) (.+)$"
)
_OFFSET = re.compile(r"(\d+) steps? (left|right|forward)")
_CARRY = re.compile(r"^You carry an? (\w+) (ball|box|key)$")


def parse_babyai_caption(caption: str) -> tuple[list[BabyAIObject], tuple[str, str] | None]:
    """The objects a BabyAI caption lists, and the carried ``(color, kind)`` if any."""
    objects, carrying = [], None
    for sentence in re.split(r"\.\s*", caption.strip()):
        if m := _OBJECT_SENTENCE.match(sentence):
            right = forward = 0
            for n, direction in _OFFSET.findall(m.group(4)):
                if direction == "forward":
                    forward = int(n)
                else:
                    right = int(n) if direction == "right" else -int(n)
            objects.append(BabyAIObject(m.group(2), m.group(3), right, forward, m.group(1)))
        elif m := _CARRY.match(sentence):
            carrying = (m.group(1), m.group(2))
    return objects, carrying


def parse_babyai_mission(mission: str) -> list[BabyAITarget]:
    """The mission's sub-goals, in the order they must be done ("A after you B": B first)."""
    text = mission.lower()
    parts = text.split(" after you ", 1)
    if len(parts) == 2:
        text = parts[1] + " then " + parts[0]
    return [
        BabyAITarget(
            m.group(1), m.group(2), m.group(3), (m.group(4), m.group(5)) if m.group(5) else None
        )
        for m in _BABYAI_MISSION.finditer(text)
    ]


def babyai_target_distance(caption: str, targets: Sequence[BabyAITarget]) -> int | None:
    """Steps to the nearest target the caption shows (-1: a target is carried), else None."""
    objects, carrying = parse_babyai_caption(caption)
    if carrying and any(t.matches(*carrying) for t in targets):
        return -1
    dists = [o.distance for o in objects if any(t.matches(o.color, o.kind) for t in targets)]
    return min(dists) if dists else None


def _babyai_goals(req: GoalsRequest) -> list[str]:
    if req.mission and (targets := parse_babyai_mission(req.mission)):
        goals = [t.goal for t in targets]
    else:  # no mission: the nearest visible things, as a curious player would
        objects, _ = parse_babyai_caption(req.caption)
        goals = [
            f"open the {o.color} door" if o.kind == "door" and o.state != "open"
            else f"go to the {o.color} {o.kind}"
            for o in sorted(objects, key=lambda o: o.distance)
        ]  # fmt: skip
    return goals


def _babyai_preference(req: PreferenceRequest) -> str:
    targets = parse_babyai_mission(req.criteria)
    if not targets:  # BK's setting: no mission, so background knowledge only
        a, b = segment_score(req.segment_a), segment_score(req.segment_b)
        return "tie" if abs(a - b) < 1e-9 else "A" if a > b else "B"
    da = babyai_target_distance(req.segment_a[-1], targets)
    db = babyai_target_distance(req.segment_b[-1], targets)
    if da == db:
        return "tie"
    if da is None or db is None:
        return "A" if db is None else "B"
    return "A" if da < db else "B"


def _babyai_helpful(req: HelpfulRequest) -> bool:
    targets = parse_babyai_mission(req.task)
    return bool(targets) and babyai_target_distance(req.caption, targets) is not None


# ---------------------------------------------------------------------------------- Crafter
@dataclass
class CrafterState:
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


def _crafter_name(name: str) -> str:
    name = name.strip().removeprefix("a ").removeprefix("an ")
    return {"crafting table": "table"}.get(name, name)


def _split_names(text: str) -> list[str]:
    return [n for n in re.split(r",\s*(?:and\s+)?|\s+and\s+", text.strip()) if n]


def parse_crafter_caption(caption: str) -> CrafterState:
    """Reads :func:`caption_smartplay` and :func:`caption_ellm` captions."""
    s = CrafterState()
    text = caption.lower()
    for sentence in re.split(r"\.\s*", text):
        sentence = sentence.strip()
        if sentence.startswith("you see:"):
            for entry in sentence[len("you see:") :].split(","):
                m = re.match(r"\s*([a-z_ ]+?) \d+ steps? to your", entry)
                if m:
                    s.seen.add(_crafter_name(m.group(1)))
        elif sentence.startswith("you see ") and sentence != "you see nothing":
            s.seen.update(_crafter_name(n) for n in _split_names(sentence[len("you see ") :]))
        elif m := re.match(r"you (?:face|are targeting) (.+?)(?: to your [a-z-]+)?$", sentence):
            s.facing = _crafter_name(m.group(1))
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
CRAFTER_PREREQUISITES: dict[str, tuple[str, ...]] = {
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
CRAFTER_STAGE: dict[str, int] = {
    "sapling": 1, "wood": 1, "table": 2, "wood_pickaxe": 2, "wood_sword": 2, "stone": 3,
    "coal": 3, "furnace": 4, "stone_pickaxe": 4, "stone_sword": 4, "iron": 5,
    "iron_pickaxe": 6, "iron_sword": 6, "diamond": 7,
}  # fmt: skip
_LOW_VALUE = {"collect sapling", "place plant", "place stone"}


def crafter_done(goal: str, s: CrafterState) -> bool:
    """Whether the caption shows the goal's result (an item held, a table placed in view)."""
    verb, _, obj = goal.partition(" ")
    if verb in ("collect", "make"):
        return s.has(obj.replace(" ", "_"))
    if goal == "place crafting table":
        return "table" in s.seen
    if goal == "place furnace":
        return "furnace" in s.seen
    return False


def crafter_suggestions(s: CrafterState) -> list[str]:
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


def _crafter_chain(goal: str) -> set[str]:
    chain, todo = set(), [goal]
    while todo:
        g = todo.pop()
        if g not in chain:
            chain.add(g)
            todo.extend(CRAFTER_PREREQUISITES.get(g, ()))
    return chain


def _crafter_helpful(req: HelpfulRequest) -> bool:
    s = parse_crafter_caption(req.caption)
    now = set(crafter_suggestions(s))
    goal = normalize_goal("crafter", req.task)
    if goal is None:  # the full game or free text: any real step forward counts
        return bool(now - _LOW_VALUE)
    if crafter_done(goal, s):
        return True
    return any(g in now and not crafter_done(g, s) for g in _crafter_chain(goal))


def crafter_progress(caption: str) -> tuple[int, int, int]:
    """(alive and furthest stage, distinct items, total count) of one caption."""
    s = parse_crafter_caption(caption)
    if s.dead:
        return (-1, 0, 0)
    held = [i for i in s.inventory if s.has(i)]
    placed = [p for p in ("table", "furnace") if p in s.seen]
    stage = max((CRAFTER_STAGE.get(i, 1) for i in held + placed), default=0)
    total = sum(s.inventory[i] or 1 for i in held)
    return (stage, len(held) + len(placed), total)


def _crafter_preference(req: PreferenceRequest) -> str:
    def key(segment: Sequence[str]) -> tuple:
        end, start = crafter_progress(segment[-1]), crafter_progress(segment[0])
        return (*end, end[2] - start[2])

    a, b = key(req.segment_a), key(req.segment_b)
    return "tie" if a == b else "A" if a > b else "B"


# ---------------------------------------------------------------------------------- NetHack
#: (pattern in the message, score, goal it suggests or None). Patterns are lowercase.
NETHACK_KEYWORDS: tuple[tuple[str, int, str | None], ...] = (
    (r"\byou descend\b", 3, None),
    (r"\bstair(?:case|s)\b", 2, "descend the stairs"),
    (r"\bgold pieces?\b|\bgold\b", 2, "pick up the gold"),
    (r"\byou (?:kill|destroy)\b", 3, None),
    (r"\bwelcome to experience level\b", 3, None),
    (r"\bwelcome\b", 1, "explore the level"),
    (r"\bcounting money\b", 1, "find the stairs"),
    (r"\byou see here\b|\bthere are (?:several|many) objects here\b", 1, "pick up the item"),
    (r"\byou find\b", 1, None),
    (r"\byou die\b|\bdied\b", -5, None),
    (r"\bit'?s (?:a|solid) (?:wall|stone)\b|\bit is a wall\b", -1, "explore the level"),
    (r"\byou can(?:'|no)t\b", -1, None),
    (r"\bdoor is closed\b", -1, "open the door"),
    (r"\bis locked\b", -1, "kick the door"),
    (r"\b(?:hits|bites|stings|kicks|touches) you\b|\bhits!|\bbites!|\byou are hit\b", -1,
     "kill the monster"),
    (r"\byou miss\b", -1, "kill the monster"),
    (r"\bnothing happens\b", -1, None),
    (r"\bhungry\b|\bweak\b|\bfainting\b", -1, "eat food"),
)  # fmt: skip
_NETHACK_COMPILED = [(re.compile(p), w, g) for p, w, g in NETHACK_KEYWORDS]
_STATUS_START = re.compile(r"(?:^|\s)(?:HP -?\d+/\d+, dungeon level|The game is over\.)")


def split_nethack_caption(caption: str) -> tuple[str, dict[str, int]]:
    """(message, status numbers: hp, hpmax, depth, gold, xl; dead=1 when the game is over)."""
    m = _STATUS_START.search(caption)
    message = caption[: m.start()].strip() if m else caption.strip()
    status_text = caption[m.start() :] if m else ""
    status: dict[str, int] = {}
    if "The game is over." in status_text:
        status["dead"] = 1
    for key, pattern in (
        ("hp", r"HP (-?\d+)/"), ("hpmax", r"HP -?\d+/(\d+)"), ("depth", r"dungeon level (-?\d+)"),
        ("gold", r"gold (\d+)"), ("xl", r"XL (\d+)"),
    ):  # fmt: skip
        if sm := re.search(pattern, status_text):
            status[key] = int(sm.group(1))
    # "not hungry" is NetHack's normal state, not hunger.
    if re.search(r"(?<!not )\bhungry\b|\b(?:weak|fainting|fainted)\b", status_text):
        status["hungry"] = 1
    return message, status


def nethack_message_score(message: str) -> int:
    text = message.lower()
    return sum(w for p, w, _ in _NETHACK_COMPILED if p.search(text))


def _nethack_segment_score(segment: Sequence[str]) -> float:
    parts = [split_nethack_caption(c) for c in segment]
    score = float(sum(nethack_message_score(msg) for msg, _ in parts))
    first, last = parts[0][1], parts[-1][1]
    if last.get("dead"):
        score -= 5
    for key, weight in (("depth", 5.0), ("xl", 2.0), ("gold", 0.1)):
        if key in first and key in last:
            score += weight * (last[key] - first[key])
    return score


def _nethack_goals(req: GoalsRequest) -> list[str]:
    message, status = split_nethack_caption(req.caption)
    text = message.lower()
    goals = [g for p, _, g in _NETHACK_COMPILED if g and p.search(text)]
    if status.get("hungry"):
        goals.append("eat food")
    if status.get("hpmax") and status.get("hp", 0) * 3 < status["hpmax"]:
        goals.insert(0, "pray")
    goals += ["explore the level", "find the stairs"]
    return goals


# ------------------------------------------------------------------------------ reward code
_ORACLE_HEADER = (
    "    # Written by the rule-based oracle (rules-v2), not by an LLM: an upper-bound baseline.\n"
)
_CAPTION_HELPER = """\
    def _latest_caption(value):
        # The newest caption in the argument: a string, a list of steps, or a step dict.
        if isinstance(value, str):
            return value
        if isinstance(value, dict):
            for key in ("caption", "text", "observation", "obs", "description"):
                if isinstance(value.get(key), str):
                    return value[key]
            return ""
        if isinstance(value, (list, tuple)) and value:
            return _latest_caption(value[-1])
        return ""

    caption = ""
    for value in ({args}):
        caption = _latest_caption(value)
        if caption:
            break
"""
_GOTO_BODY = """\
    # Potential for the BabyAI mission "{goal}": 1 - steps / 10, where steps is
    # the sideways + forward distance to the nearest {what} in the latest caption;
    # 1 when it is carried, 0 when it is out of view. It grows as the agent nears it.
    import re

    target = re.compile(r"\\b{pattern}\\b")
    if re.search(r"You carry an? " + target.pattern, caption):
        value = 1.0
    else:
        value = 0.0
        for sentence in caption.split(". "):
            if sentence.startswith("You see") and target.search(sentence):
                offsets = re.findall(r"(\\d+) steps? (?:left|right|forward)", sentence)
                value = max(value, 1.0 - sum(int(n) for n in offsets) / 10.0)
"""
_GENERIC_BODY = """\
    # Generic potential: progress words minus trouble words in the latest caption, / 10.
    text = caption.lower()
    good = ("you carry", "you have", "gold", "you kill", "descend", "welcome", "wood",
            "stone", "iron", "diamond", "pickaxe", "sword", "table", "furnace")
    bad = ("you die", "died", "it's a wall", "you can't", "hurt", "hungry", "thirsty", "sleepy")
    value = (sum(w in text for w in good) - sum(w in text for w in bad)) / 10.0
"""


def _signature_args(sig: str) -> tuple[list[str], bool]:
    """Parameter names of a ``def`` line and whether it returns a tuple (BK's (float, dict))."""
    try:
        fn = ast.parse(sig + "\n    pass\n").body[0]
    except SyntaxError as e:
        raise BackendError(f"the signature {sig!r} is not a Python def line: {e}") from None
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        raise BackendError(f"the signature {sig!r} is not a function definition")
    a = fn.args
    names = [
        p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg not in ("self", "cls")
    ]
    returns = ast.unparse(fn.returns) if fn.returns is not None else ""
    return names, returns.lower().startswith(("tuple", "typing.tuple"))


def oracle_reward_code(req: RewardCodeRequest) -> str:
    sig = normalize_signature(req.signature)
    names, returns_tuple = _signature_args(sig)
    text = f"{req.env_description}\n{req.feedback}"
    env = infer_env(text)
    targets = [t for t in parse_babyai_mission(text) if t.verb == "go to"]
    body = _ORACLE_HEADER
    body += _CAPTION_HELPER.format(args=", ".join(names) + ("," if len(names) == 1 else ""))
    if not names:
        body = _ORACLE_HEADER + '    caption = ""\n'
    if targets and env in (None, "babyai"):
        t = targets[0]
        what = f"{t.color} {t.kind}" if t.color else t.kind
        pattern = f"{t.color} {t.kind}" if t.color else t.kind
        body += _GOTO_BODY.format(goal=t.goal, what=what, pattern=pattern)
    elif env == "babyai":  # no mission (BK's setting): background knowledge only
        return f"{sig}\n{task_agnostic_code(names, returns_tuple)}"
    else:
        body += _GENERIC_BODY
    body += "    return (value, {})\n" if returns_tuple else "    return value\n"
    return f"{sig}\n{body}"


# ---------------------------------------------------------------------------------- backend
class OracleBackend(Backend):
    """Rule-based labels; see the module docstring. Takes no configuration."""

    name = "oracle"
    # v2: BabyAI without a mission answers from background knowledge (babyai_background);
    # a new version keeps the label store from serving v1's ties and generic code.
    model = "rules-v2"
    is_oracle = True

    def label(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        typed = coerce_requests(task, requests)
        if task == "action_scores":
            raise UnsupportedError(
                "the oracle backend has no log-likelihoods: action_scores needs an LLM backend"
            )
        handler = {
            "goals": self._goals,
            "preference": self._preference,
            "helpful": self._helpful,
            "reward_code": self._reward_code,
        }[task]
        return [handler(r) for r in typed]  # type: ignore[operator]

    @staticmethod
    def _goals(req: GoalsRequest) -> GoalsLabel:
        env = req.env or infer_env(req.caption, req.mission or "")
        if env == "babyai":
            goals = _babyai_goals(req)
        elif env == "crafter":
            goals = crafter_suggestions(parse_crafter_caption(req.caption))
        elif env == "nethack":
            goals = _nethack_goals(req)
        else:
            goals = []
        # Every goal must read as the grammar-constrained LLM's would.
        vocab = ENV_VOCABULARY.get(env or "")
        goals = [g for g in dict.fromkeys(goals) if vocab is None or g in vocab.goals]
        return GoalsLabel(goals=goals[: req.max_goals])

    @staticmethod
    def _preference(req: PreferenceRequest) -> PreferenceLabel:
        env = req.env or infer_env(*req.segment_a, *req.segment_b, req.criteria)
        if env == "babyai":
            choice = _babyai_preference(req)
        elif env == "crafter":
            choice = _crafter_preference(req)
        elif env == "nethack":
            a, b = _nethack_segment_score(req.segment_a), _nethack_segment_score(req.segment_b)
            choice = "tie" if a == b else "A" if a > b else "B"
        else:
            choice = "tie"
        return PreferenceLabel(choice=choice)  # type: ignore[arg-type]

    @staticmethod
    def _helpful(req: HelpfulRequest) -> HelpfulLabel:
        env = req.env or infer_env(req.caption, req.task)
        if env == "babyai":
            helpful = _babyai_helpful(req)
        elif env == "crafter":
            helpful = _crafter_helpful(req)
        elif env == "nethack":
            helpful = nethack_message_score(split_nethack_caption(req.caption)[0]) > 0
        else:
            helpful = False
        return HelpfulLabel(helpful=helpful)

    @staticmethod
    def _reward_code(req: RewardCodeRequest) -> RewardCodeLabel:
        return RewardCodeLabel(code=oracle_reward_code(req))
