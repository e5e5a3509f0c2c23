"""What the task-agnostic oracle knows about BabyAI: BK's prompts withhold the goal ("you will
NOT know the goal"), so it knows only what they tell an LLM about the game.

- Useful states: objects in view, and an object right in front of the agent, where picking
  up, toggling or reaching it happens (BabyAI's GoTo levels succeed when the target is the
  cell in front).
- Wasted actions: going forward into a wall or an object, picking up or toggling nothing,
  dropping nothing, ``done`` (these levels never end on it).

:func:`task_agnostic_potential` is a plain function of a window of captioned steps (the
contract BK-Code's functions follow, :mod:`rl_bk.knowledge.descriptions`) that needs only
``re``: the oracle's reward code is its source text, and the oracle's preference labels
score segments with the same two rules, so the two oracles agree by construction.

It never reads a mission; the goal-aware oracle (a request that carries the mission) is a
different method and lives in :mod:`rl_bk.labeling.backends.oracle`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence

#: The penalty for a wasted action, against a closeness in [0, 1].
WASTED_ACTION_PENALTY = 0.5


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


def task_agnostic_code(signature_args: Sequence[str], returns_tuple: bool) -> str:
    """The body of a function with the given arguments that returns
    :func:`task_agnostic_potential` of its first argument (the window)."""
    source = inspect.getsource(task_agnostic_potential)
    body = source.split("\n", 1)[1]  # drop the def line: the caller writes its own
    window = signature_args[0] if signature_args else "[]"
    body = body.replace("steps = list(window) if isinstance(window, (list, tuple)) else [window]",
                        f"steps = list({window}) if isinstance({window}, (list, tuple)) "
                        f"else [{window}]")  # fmt: skip
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
        records.append({"caption": m.group(1), "action": m.group(2)} if m
                       else {"caption": text, "action": None})  # fmt: skip
    score = task_agnostic_potential(records[-1:])
    for i in range(1, len(records)):
        pair = [records[i - 1], {"caption": "", "action": None}]
        score += task_agnostic_potential(pair)  # -0.5 for a wasted action, else 0
    return score
