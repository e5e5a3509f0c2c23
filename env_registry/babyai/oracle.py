"""The rule-based oracle's BabyAI rules: it reads the captions of :mod:`.captioner` and the
missions of minigrid's BabyAI grammar, as a strong LLM would read them.

Two settings, two methods:

- With a mission (the goal-aware oracle: a goals request's mission, a preference request's
  criteria or a helpful request's task names target objects): goals are the mission's
  sub-goals in the order they must be done; helpful = the caption shows (or the agent
  carries) a target; preference = the segment whose last caption shows a target nearer
  (sideways + forward steps; visible beats not visible; equal is a tie); reward code: the
  nearest target's distance as a potential (:func:`goto_potential_body`).
- Without a mission (BK's setting, the task-agnostic oracle): BK's prompts withhold the goal
  ("you will NOT know the goal"), so it knows only what they tell an LLM about the game.
  Useful states: objects in view, and an object right in front of the agent, where picking
  up, toggling or reaching it happens (BabyAI's GoTo levels succeed when the target is the
  cell in front). Wasted actions: going forward into a wall or an object, picking up or
  toggling nothing, dropping nothing, ``done`` (these levels never end on it). Goals: go to
  / open the nearest visible objects. :func:`task_agnostic_potential` is a plain function of
  a window of captioned steps (the contract BK-Code's functions follow) that needs only
  ``re``: the oracle's reward code is its source text, and :func:`segment_score` scores
  preference segments with the same two rules, so the two agree by construction.

Pure functions over caption and mission text, the same text an LLM reads: the label types and
the request handling stay in the library (``rl_bk.labeling.backends.oracle``), which calls
these, so ``env_registry`` never imports ``rl_bk``. The round-trip test
(``tests/unit/test_caption_round_trip.py``) keeps :func:`parse_caption` and the captioner in
step.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from env_registry.babyai.vocabulary import COLORS, THINGS

#: A sentence only BabyAI's captions write (for telling the family from a caption).
CAPTION_SENTENCE = re.compile(
    r"\bYou (?:see (?:a wall|an? [\w ]*?(?:ball|box|key|door|goal)) "
    r"\d+ steps? (?:left|right|forward)|see nothing in front|carry an? \w+ (?:ball|box|key))"
)
#: One sub-goal of a mission: verb, colour, kind, then "next to" colour and kind.
MISSION_PHRASE = re.compile(
    rf"\b(go to|pick up|open|put) (?:the|a|an) (?:({'|'.join(COLORS)}) )?"
    rf"({'|'.join(THINGS)})\b"
    rf"(?: next to (?:the|a|an) (?:({'|'.join(COLORS)}) )?({'|'.join(THINGS)})\b)?",
    re.IGNORECASE,
)


# ------------------------------------------------------------------------------ reading text
@dataclass(frozen=True)
class CaptionObject:
    color: str
    kind: str  # ball, box, key or door
    right: int  # steps to the right (negative: left)
    forward: int
    state: str | None = None  # doors: open, closed or locked

    @property
    def distance(self) -> int:
        return abs(self.right) + self.forward


@dataclass(frozen=True)
class MissionTarget:
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


def parse_caption(caption: str) -> tuple[list[CaptionObject], tuple[str, str] | None]:
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
            objects.append(CaptionObject(m.group(2), m.group(3), right, forward, m.group(1)))
        elif m := _CARRY.match(sentence):
            carrying = (m.group(1), m.group(2))
    return objects, carrying


def parse_mission(mission: str) -> list[MissionTarget]:
    """The mission's sub-goals, in the order they must be done ("A after you B": B first)."""
    text = mission.lower()
    parts = text.split(" after you ", 1)
    if len(parts) == 2:
        text = parts[1] + " then " + parts[0]
    return [
        MissionTarget(
            m.group(1), m.group(2), m.group(3), (m.group(4), m.group(5)) if m.group(5) else None
        )
        for m in MISSION_PHRASE.finditer(text)
    ]


def target_distance(caption: str, targets: Sequence[MissionTarget]) -> int | None:
    """Steps to the nearest target the caption shows (-1: a target is carried), else None."""
    objects, carrying = parse_caption(caption)
    if carrying and any(t.matches(*carrying) for t in targets):
        return -1
    dists = [o.distance for o in objects if any(t.matches(o.color, o.kind) for t in targets)]
    return min(dists) if dists else None


# ------------------------------------------------------------------- the goal-aware oracle
def suggest_goals(caption: str, mission: str | None) -> list[str]:
    """The mission's sub-goals in order; without a mission, go to (or open) what is in view,
    nearest first, as a curious player would."""
    if mission and (targets := parse_mission(mission)):
        return [t.goal for t in targets]
    objects, _ = parse_caption(caption)
    return [
        f"open the {o.color} door"
        if o.kind == "door" and o.state != "open"
        else f"go to the {o.color} {o.kind}"
        for o in sorted(objects, key=lambda o: o.distance)
    ]


def prefer(segment_a: Sequence[str], segment_b: Sequence[str], criteria: str) -> str:
    """``"A"``, ``"B"`` or ``"tie"``: nearer a target of the criteria's mission at the end,
    or, with no mission in the criteria, the higher :func:`segment_score`."""
    targets = parse_mission(criteria)
    if not targets:  # BK's setting: no mission, so background knowledge only
        a, b = segment_score(segment_a), segment_score(segment_b)
        return "tie" if abs(a - b) < 1e-9 else "A" if a > b else "B"
    da = target_distance(segment_a[-1], targets)
    db = target_distance(segment_b[-1], targets)
    if da == db:
        return "tie"
    if da is None or db is None:
        return "A" if db is None else "B"
    return "A" if da < db else "B"


def is_helpful(caption: str, task: str) -> bool:
    """Whether the caption shows (or the agent carries) a target of the task's mission."""
    targets = parse_mission(task)
    return bool(targets) and target_distance(caption, targets) is not None


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


def goto_potential_body(text: str) -> str | None:
    """The body of a potential for the first "go to" sub-goal of a mission in ``text`` (it
    reads a variable ``caption`` and sets ``value``), or None when ``text`` has none."""
    targets = [t for t in parse_mission(text) if t.verb == "go to"]
    if not targets:
        return None
    t = targets[0]
    what = f"{t.color} {t.kind}" if t.color else t.kind
    pattern = f"{t.color} {t.kind}" if t.color else t.kind
    return _GOTO_BODY.format(goal=t.goal, what=what, pattern=pattern)


# ------------------------------------------------------------------- the task-agnostic oracle
#: The penalty for a wasted action, against a closeness in [0, 1].
WASTED_ACTION_PENALTY = 0.5


# Its source text is the oracle's reward code (task_agnostic_code), so its layout is kept
# as written.
# fmt: off
def task_agnostic_potential(window: list) -> float:
    # Written by the rule-based oracle (task-agnostic rules-v2), not by an LLM. No mission is
    # known: the potential is how close the nearest visible object is (1 when it is one step
    # away, falling by 0.1 a step, 0 when nothing is in view), minus 0.5 when the action
    # taken in the previous state had no effect (blocked, or acting on nothing).
    import re

    def objects(caption):
        found = []
        for sentence in str(caption or "").split(". "):
            m = re.match(r"You see an? (?:(open|closed|locked) )?\w+ (ball|box|key|door)\b(.*)$",
                         sentence.strip().rstrip("."))
            if m:
                side = sum(int(n) for n in re.findall(r"(\d+) steps? (?:left|right)", m.group(3)))
                ahead = sum(int(n) for n in re.findall(r"(\d+) steps? forward", m.group(3)))
                found.append((m.group(1), m.group(2), side, ahead))
        return found

    def closeness(caption):
        seen = objects(caption)
        if not seen:
            return 0.0
        nearest = min(side + ahead for _, _, side, ahead in seen)
        return max(0.1, 1.0 - (nearest - 1) / 10.0)

    def wasted(caption, action):
        front = [o for o in objects(caption) if o[2] == 0 and o[3] == 1]
        wall = re.search(r"\bYou see a wall 1 step forward\b", str(caption or "")) is not None
        carrying = "You carry" in str(caption or "")
        if action == "go forward":
            return wall or any(state != "open" for state, _, _, _ in front)
        if action == "pick up the front object":
            return carrying or not any(kind != "door" for _, kind, _, _ in front)
        if action == "drop the carried object":
            return not carrying or bool(front)
        if action == "toggle the front object":
            return not any(kind in ("door", "box") for _, kind, _, _ in front)
        return action == "done"

    steps = list(window) if isinstance(window, (list, tuple)) else [window]
    if not steps:
        return 0.0
    current = steps[-1]
    caption = current.get("caption", "") if isinstance(current, dict) else str(current)
    value = closeness(caption)
    if len(steps) > 1 and isinstance(steps[-2], dict):
        if wasted(steps[-2].get("caption", ""), steps[-2].get("action")):
            value -= 0.5
    return value
# fmt: on


def task_agnostic_code(signature_args: Sequence[str], returns_tuple: bool) -> str:
    """The body of a function with the given arguments that returns
    :func:`task_agnostic_potential` of its first argument (the window)."""
    source = inspect.getsource(task_agnostic_potential)
    body = source.split("\n", 1)[1]  # drop the def line: the caller writes its own
    window = signature_args[0] if signature_args else "[]"
    body = body.replace(
        "steps = list(window) if isinstance(window, (list, tuple)) else [window]",
        f"steps = list({window}) if isinstance({window}, (list, tuple)) else [{window}]",
    )
    if returns_tuple:
        body = body.replace("    return value\n", "    return (value, {})\n")
    return body


_STEP = re.compile(r"^(.*?)\s*You choose the action: (.+?)\.?$", re.DOTALL)


def segment_score(steps: Sequence[str]) -> float:
    """A segment's worth with no mission known: the closeness of its last state, minus the
    penalty for each wasted action in it. ``steps`` are BK's step texts ("<caption> You choose
    the action: <name>."), the last one a bare caption."""
    records = []
    for text in steps:
        m = _STEP.match(text.strip())
        records.append(
            {"caption": m.group(1), "action": m.group(2)}
            if m
            else {"caption": text, "action": None}
        )
    score = task_agnostic_potential(records[-1:])
    for i in range(1, len(records)):
        pair = [records[i - 1], {"caption": "", "action": None}]
        score += task_agnostic_potential(pair)  # -0.5 for a wasted action, else 0
    return score
