"""NetHack captions: the game's own message line plus a one-sentence status from ``blstats``.

ONI labels NetHack states by the message line alone (the 256-byte, NUL-padded ``message``
observation, decoded as latin-1). Most steps have no message, and the same message means
different things at 3 HP and at 30, so the caption adds a short status summary after it:

    ``It's a wall. HP 14/14, dungeon level 1, gold 0, XL 1, AC 4, not hungry, turn 1.``

The status names the hunger state always (``not hungry`` is the usual one), and the
encumbrance and the conditions (blind, hallucinating, ...) only when present, so the common
case stays short. ``info["message"]`` keeps the message alone, for ONI-style labelling.

Everything here is pure Python + numpy, so it can be imported and tested without nle. The
``blstats`` indices are copied from ``nle.nethack.NLE_BL_*`` (nle 1.3.0); the tests check that
they agree whenever nle is installed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

# blstats indices (nle.nethack.NLE_BL_*).
BL_X, BL_Y = 0, 1
BL_STR25, BL_STR125, BL_DEX, BL_CON, BL_INT, BL_WIS, BL_CHA = 2, 3, 4, 5, 6, 7, 8
BL_SCORE, BL_HP, BL_HPMAX, BL_DEPTH, BL_GOLD, BL_ENE, BL_ENEMAX = 9, 10, 11, 12, 13, 14, 15
BL_AC, BL_HD, BL_XP, BL_EXP, BL_TIME, BL_HUNGER, BL_CAP = 16, 17, 18, 19, 20, 21, 22
BL_DNUM, BL_DLEVEL, BL_CONDITION, BL_ALIGN = 23, 24, 25, 26
BLSTATS_SIZE = 27

#: ``blstats[BL_HUNGER]``: NetHack's hunger states, 0 (satiated) to 6 (starved).
HUNGER_STATES: tuple[str, ...] = (
    "satiated",
    "not hungry",
    "hungry",
    "weak",
    "fainting",
    "fainted",
    "starved",
)
#: ``blstats[BL_CAP]``: encumbrance, 0 (unencumbered, not mentioned) to 5.
ENCUMBRANCE: tuple[str, ...] = (
    "",
    "burdened",
    "stressed",
    "strained",
    "overtaxed",
    "overloaded",
)
#: ``blstats[BL_CONDITION]`` bits (nle.nethack.BL_MASK_*), lowest bit first.
CONDITIONS: tuple[str, ...] = (
    "turning to stone",
    "turning into slime",
    "strangled",
    "food-poisoned",
    "terminally ill",
    "blind",
    "deaf",
    "stunned",
    "confused",
    "hallucinating",
    "levitating",
    "flying",
    "riding",
)


def decode_message(message: np.ndarray | bytes | Sequence[int]) -> str:
    """The message line as text: bytes up to the first NUL, latin-1, outer spaces stripped."""
    raw = message if isinstance(message, bytes) else bytes(np.asarray(message, dtype=np.uint8))
    return raw.split(b"\0", 1)[0].decode("latin-1").strip()


def condition_names(condition: int) -> list[str]:
    """The conditions set in a ``blstats[BL_CONDITION]`` bit mask, in bit order."""
    return [name for bit, name in enumerate(CONDITIONS) if condition >> bit & 1]


#: Status text without the turn, by the blstats it depends on. The turn changes every step;
#: the rest rarely does, so formatting it once per change keeps the caption a few µs.
_STATUS_CACHE: dict[tuple[int, ...], str] = {}
_STATUS_CACHE_SIZE = 4096


def _status_without_turn(b: list[int]) -> str:
    key = (
        b[BL_HP],
        b[BL_HPMAX],
        b[BL_DEPTH],
        b[BL_GOLD],
        b[BL_XP],
        b[BL_AC],
        b[BL_HUNGER],
        b[BL_CAP],
        b[BL_CONDITION],
    )
    text = _STATUS_CACHE.get(key)
    if text is None:
        hunger = b[BL_HUNGER]
        parts = [
            f"HP {b[BL_HP]}/{b[BL_HPMAX]}",
            f"dungeon level {b[BL_DEPTH]}",
            f"gold {b[BL_GOLD]}",
            f"XL {b[BL_XP]}",
            f"AC {b[BL_AC]}",
            HUNGER_STATES[hunger] if 0 <= hunger < len(HUNGER_STATES) else f"hunger state {hunger}",
        ]
        if 0 < b[BL_CAP] < len(ENCUMBRANCE):
            parts.append(ENCUMBRANCE[b[BL_CAP]])
        if b[BL_CONDITION]:
            parts += condition_names(b[BL_CONDITION])
        if len(_STATUS_CACHE) >= _STATUS_CACHE_SIZE:
            _STATUS_CACHE.clear()
        text = _STATUS_CACHE[key] = ", ".join(parts)
    return text


def status_summary(blstats: np.ndarray | Sequence[int]) -> str:
    """One sentence about the hero: HP, depth, gold, experience level, AC, hunger, turn.

    Encumbrance and conditions are added, after hunger, only when present. ``blstats`` that
    are all zero (NetHack zeroes them once the game is over) give ``"The game is over."``.
    """
    b = blstats.tolist() if isinstance(blstats, np.ndarray) else [int(v) for v in blstats]
    if not any(b):
        return "The game is over."
    return f"{_status_without_turn(b)}, turn {b[BL_TIME]}."


def caption_nethack(message: str, blstats: np.ndarray | Sequence[int]) -> str:
    """The decoded message, a space, then :func:`status_summary`; the status alone if no message."""
    status = status_summary(blstats)
    return f"{message} {status}" if message else status


class MessageCounter:
    """How often each message has been seen in the current episode (ONI's N(caption)).

    Every step counts, the empty message included, so ``N("")`` grows on most steps; a
    reward that uses N scales LLM labels, and the empty message gets no label.
    """

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def reset(self) -> None:
        self.counts = Counter()

    def add(self, message: str) -> int:
        """Counts one occurrence of ``message``; returns its count so far, this one included."""
        self.counts[message] += 1
        return self.counts[message]
