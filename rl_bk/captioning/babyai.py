"""BabyAI-Text captions: the agent's 7×7 egocentric view, in sentences.

The sentence format is the one GLAM's BabyAI-Text introduced and BK reused, so prompts and
labels written for those papers read the same here:

- the nearest wall straight forward, to the left and to the right, unless something else is
  in the way: ``You see a wall 2 steps forward``;
- every visible object, with its sideways and forward offsets:
  ``You see a red ball 1 step left and 3 steps forward`` (``3 steps forward`` when straight
  ahead, ``2 steps right`` when level with the agent);
- doors with their state: ``You see a locked yellow door 4 steps forward``;
- the carried object: ``You carry a purple key``;
- ``You see nothing in front`` when none of the above applies.

Objects are listed nearest first (Manhattan distance, then left to right), so the most
relevant sentence comes first when a prompt truncates the caption.

Geometry: minigrid's egocentric image ``image[x, y]`` has the agent at ``(3, 6)`` facing
``-y``; so ``6 - y`` is the number of steps forward and ``x - 3`` the steps to the right.
"""

from __future__ import annotations

import numpy as np
from minigrid.core.constants import COLOR_NAMES, IDX_TO_COLOR, IDX_TO_OBJECT, OBJECT_TO_IDX

VIEW_SIZE = 7
AGENT_X, AGENT_Y = VIEW_SIZE // 2, VIEW_SIZE - 1

_UNSEEN = OBJECT_TO_IDX["unseen"]
_EMPTY = OBJECT_TO_IDX["empty"]
_WALL = OBJECT_TO_IDX["wall"]
_FLOOR = OBJECT_TO_IDX["floor"]
_DOOR = OBJECT_TO_IDX["door"]
_DOOR_STATES = {0: "open", 1: "closed", 2: "locked"}
_IS_OBJECT = np.ones(max(IDX_TO_OBJECT) + 1, dtype=bool)  # lookup table: object type -> listed?
_IS_OBJECT[[_UNSEEN, _EMPTY, _WALL, _FLOOR, OBJECT_TO_IDX["agent"]]] = False

#: Colours and object types a BabyAI caption can mention (the env's own vocabulary).
COLORS: tuple[str, ...] = tuple(COLOR_NAMES)
OBJECT_TYPES: tuple[str, ...] = ("ball", "box", "key", "door")


def _steps(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def _offset(right: int, forward: int) -> str:
    parts = []
    if right:
        parts.append(f"{_steps(abs(right))} {'right' if right > 0 else 'left'}")
    if forward:
        parts.append(f"{_steps(forward)} forward")
    return " and ".join(parts)


def _describe(cell: np.ndarray) -> str:
    obj, color, state = cell.tolist()
    color_name, obj_name = IDX_TO_COLOR[color], IDX_TO_OBJECT[obj]
    if obj == _DOOR:
        return f"{_DOOR_STATES.get(state, 'closed')} {color_name} door"
    if obj_name in ("lava", "goal"):
        return obj_name
    return f"{color_name} {obj_name}"


def _nearest_wall(image: np.ndarray, dx: int, dy: int) -> int | None:
    """Steps to the first wall along (dx, dy) from the agent, None if something else is first."""
    x, y, n = AGENT_X + dx, AGENT_Y + dy, 1
    while 0 <= x < VIEW_SIZE and 0 <= y < VIEW_SIZE:
        kind = image[x, y, 0]
        if kind == _WALL:
            return n
        if kind not in (_EMPTY, _FLOOR):  # an object, a door or an unseen cell is in the way
            return None
        x, y, n = x + dx, y + dy, n + 1
    return None


def caption_babyai(image: np.ndarray, carrying: tuple[str, str] | None = None) -> str:
    """Describes one egocentric BabyAI view.

    Args:
        image: the ``(7, 7, 3)`` encoded view (``obs["image"]`` of a minigrid env).
        carrying: ``(color, type)`` of the carried object, or None.

    Returns:
        Sentences joined by ``". "``, ending with a full stop.
    """
    sentences = []
    for direction, (dx, dy) in (("forward", (0, -1)), ("left", (-1, 0)), ("right", (1, 0))):
        n = _nearest_wall(image, dx, dy)
        if n is not None:
            sentences.append(f"You see a wall {_steps(n)} {direction}")

    # Only the few object cells are visited in Python; the 49-cell scan is one numpy call.
    is_object = _IS_OBJECT[image[:, :, 0]]
    is_object[AGENT_X, AGENT_Y] = False  # the agent's own cell shows what it carries
    seen = []
    for x, y in zip(*np.nonzero(is_object)):
        right, forward = int(x) - AGENT_X, AGENT_Y - int(y)
        seen.append((abs(right) + forward, right, forward, _describe(image[x, y])))
    for _, right, forward, name in sorted(seen):
        article = "" if name in ("lava",) else "a "
        sentences.append(f"You see {article}{name} {_offset(right, forward)}")

    if not sentences:
        sentences.append("You see nothing in front")
    if carrying is not None:
        sentences.append(f"You carry a {carrying[0]} {carrying[1]}")
    return ". ".join(sentences) + "."
