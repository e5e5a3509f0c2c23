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
from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT, OBJECT_TO_IDX

VIEW_SIZE = 7
AGENT_X, AGENT_Y = VIEW_SIZE // 2, VIEW_SIZE - 1

_UNSEEN = OBJECT_TO_IDX["unseen"]
_EMPTY = OBJECT_TO_IDX["empty"]
_WALL = OBJECT_TO_IDX["wall"]
_FLOOR = OBJECT_TO_IDX["floor"]
_DOOR = OBJECT_TO_IDX["door"]
_DOOR_STATES = {0: "open", 1: "closed", 2: "locked"}
_NOT_LISTED = {_UNSEEN, _EMPTY, _WALL, _FLOOR, OBJECT_TO_IDX["agent"]}
_PASSABLE = {_EMPTY, _FLOOR}  # a wall behind these is still "seen" along a line


def _steps(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def offset_phrase(right: int, forward: int) -> str:
    """``\"2 steps left and 3 steps forward\"`` for an object 2 left, 3 ahead."""
    parts = []
    if right:
        parts.append(f"{_steps(abs(right))} {'right' if right > 0 else 'left'}")
    if forward:
        parts.append(f"{_steps(forward)} forward")
    return " and ".join(parts)


def _describe(obj: int, color: int, state: int) -> str:
    color_name, obj_name = IDX_TO_COLOR[color], IDX_TO_OBJECT[obj]
    if obj == _DOOR:
        return f"a {_DOOR_STATES.get(state, 'closed')} {color_name} door"
    if obj_name == "lava":
        return "lava"
    if obj_name == "goal":
        return "a goal"
    return f"a {color_name} {obj_name}"


# Captioning runs on every env step, so every phrase is built once here and looked up there.
#: (x, y) in the view -> "2 steps left and 3 steps forward"
_OFFSET_AT = {
    (x, y): offset_phrase(x - AGENT_X, AGENT_Y - y)
    for x in range(VIEW_SIZE)
    for y in range(VIEW_SIZE)
}
#: Cells of the view nearest first (Manhattan distance, then left to right), agent excluded.
_SCAN_ORDER = sorted(
    ((x, y) for x in range(VIEW_SIZE) for y in range(VIEW_SIZE) if (x, y) != (AGENT_X, AGENT_Y)),
    key=lambda c: (abs(c[0] - AGENT_X) + AGENT_Y - c[1], c[0] - AGENT_X, AGENT_Y - c[1]),
)
#: (dx, dy, direction) of the three wall lines, and the cells along each, nearest first.
_WALL_LINES = [
    (direction, [(AGENT_X + dx * n, AGENT_Y + dy * n) for n in range(1, VIEW_SIZE)])
    for direction, (dx, dy) in (("forward", (0, -1)), ("left", (-1, 0)), ("right", (1, 0)))
]
_WALL_LINES = [
    (d, [c for c in cells if 0 <= c[0] < VIEW_SIZE and 0 <= c[1] < VIEW_SIZE])
    for d, cells in _WALL_LINES
]
_NAMES: dict[tuple[int, int, int], str] = {}


def _name(obj: int, color: int, state: int) -> str:
    key = (obj, color, state)
    name = _NAMES.get(key)
    if name is None:
        name = _NAMES[key] = _describe(obj, color, state)
    return name


def caption_babyai(image: np.ndarray, carrying: tuple[str, str] | None = None) -> str:
    """Describes one egocentric BabyAI view.

    Args:
        image: the ``(7, 7, 3)`` encoded view (``obs["image"]`` of a minigrid env).
        carrying: ``(color, type)`` of the carried object, or None.

    Returns:
        Sentences joined by ``". "``, ending with a full stop.
    """
    cells = image.tolist()  # nested lists: plain indexing is ~10x cheaper than numpy's
    sentences = []
    for direction, line in _WALL_LINES:
        for n, (x, y) in enumerate(line, start=1):
            kind = cells[x][y][0]
            if kind == _WALL:
                sentences.append(f"You see a wall {_steps(n)} {direction}")
            if kind not in _PASSABLE:  # an object, a door or an unseen cell ends the line
                break
    for x, y in _SCAN_ORDER:
        obj, color, state = cells[x][y]
        if obj not in _NOT_LISTED:
            sentences.append(f"You see {_name(obj, color, state)} {_OFFSET_AT[x, y]}")
    if not sentences:
        sentences.append("You see nothing in front")
    if carrying is not None:
        sentences.append(f"You carry a {carrying[0]} {carrying[1]}")
    return ". ".join(sentences) + "."
