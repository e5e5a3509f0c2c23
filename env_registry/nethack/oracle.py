"""The rule-based oracle's NetHack rules: keyword scores of the message line ("You kill",
"staircase", "gold", "welcome" up; "You die", "It's a wall", "You can't" down), as ONI's
prompt judges messages by the game's score, read against the captions of :mod:`.captioner`.

Helpful = a positive score; preference = the higher segment score, plus progress in the
status line (depth, experience level, gold); goals come from the keywords too.

Pure functions over caption text, the same text an LLM reads: the label types and the
request handling stay in the library (``rl_bk.labeling.backends.oracle``), which calls these,
so ``env_registry`` never imports ``rl_bk``. The round-trip test
(``tests/unit/test_caption_round_trip.py``) keeps :func:`split_caption` and the captioner in
step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: The status sentence only NetHack's captions write (for telling the family from a caption).
STATUS_MARK = re.compile(r"\bHP -?\d+/\d+, dungeon level -?\d+\b|\bThe game is over\.")

#: (pattern in the message, score, goal it suggests or None). Patterns are lowercase.
KEYWORDS: tuple[tuple[str, int, str | None], ...] = (
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
    (
        r"\b(?:hits|bites|stings|kicks|touches) you\b|\bhits!|\bbites!|\byou are hit\b",
        -1,
        "kill the monster",
    ),
    (r"\byou miss\b", -1, "kill the monster"),
    (r"\bnothing happens\b", -1, None),
    (r"\bhungry\b|\bweak\b|\bfainting\b", -1, "eat food"),
)
_COMPILED = [(re.compile(p), w, g) for p, w, g in KEYWORDS]
_STATUS_START = re.compile(r"(?:^|\s)(?:HP -?\d+/\d+, dungeon level|The game is over\.)")


def split_caption(caption: str) -> tuple[str, dict[str, int]]:
    """(message, status numbers: hp, hpmax, depth, gold, xl; dead=1 when the game is over)."""
    m = _STATUS_START.search(caption)
    message = caption[: m.start()].strip() if m else caption.strip()
    status_text = caption[m.start() :] if m else ""
    status: dict[str, int] = {}
    if "The game is over." in status_text:
        status["dead"] = 1
    for key, pattern in (
        ("hp", r"HP (-?\d+)/"),
        ("hpmax", r"HP -?\d+/(\d+)"),
        ("depth", r"dungeon level (-?\d+)"),
        ("gold", r"gold (\d+)"),
        ("xl", r"XL (\d+)"),
    ):
        if sm := re.search(pattern, status_text):
            status[key] = int(sm.group(1))
    # "not hungry" is NetHack's normal state, not hunger.
    if re.search(r"(?<!not )\bhungry\b|\b(?:weak|fainting|fainted)\b", status_text):
        status["hungry"] = 1
    return message, status


def message_score(message: str) -> int:
    """The message's keyword score (:data:`KEYWORDS`)."""
    text = message.lower()
    return sum(w for p, w, _ in _COMPILED if p.search(text))


def segment_score(segment: Sequence[str]) -> float:
    """Keyword scores of the segment's messages, plus progress in depth, experience level and
    gold from its first status to its last; 5 off when the game ended."""
    parts = [split_caption(c) for c in segment]
    score = float(sum(message_score(msg) for msg, _ in parts))
    first, last = parts[0][1], parts[-1][1]
    if last.get("dead"):
        score -= 5
    for key, weight in (("depth", 5.0), ("xl", 2.0), ("gold", 0.1)):
        if key in first and key in last:
            score += weight * (last[key] - first[key])
    return score


def suggest_goals(caption: str) -> list[str]:
    """The goals the message suggests, prayer first when HP is low, then exploring."""
    message, status = split_caption(caption)
    text = message.lower()
    goals = [g for p, _, g in _COMPILED if g and p.search(text)]
    if status.get("hungry"):
        goals.append("eat food")
    if status.get("hpmax") and status.get("hp", 0) * 3 < status["hpmax"]:
        goals.insert(0, "pray")
    goals += ["explore the level", "find the stairs"]
    return goals


def is_helpful(caption: str) -> bool:
    """Whether the caption's message scores above zero."""
    return message_score(split_caption(caption)[0]) > 0


def prefer(segment_a: Sequence[str], segment_b: Sequence[str]) -> str:
    """``"A"``, ``"B"`` or ``"tie"``, by :func:`segment_score`."""
    a, b = segment_score(segment_a), segment_score(segment_b)
    return "tie" if a == b else "A" if a > b else "B"
