"""Crafter-Text captions: the player's 9×7 local view, vitals and inventory, in sentences.

Two styles, because the two papers that use Crafter with an LLM describe it differently and
prompts written for one read oddly with the other:

- :func:`caption_smartplay` follows the layout BK took from SmartPlay: for each kind of thing
  in view, its nearest occurrence with a compass direction and a Manhattan distance; what the
  player faces; the four vitals out of 9; the inventory with counts. The wording is ours:
  ``You see: water 1 step to your north, tree 2 steps to your north-east. You face water to
  your north. Health 9/9, food 9/9, drink 9/9, energy 9/9. You have 2 wood.``
- :func:`caption_ellm` follows ELLM's text Crafter: lowercase, the sorted set of names in
  view (no positions), the faced thing, the held items (no counts) and the low vitals as
  feelings: ``you see cow, grass, and tree. you are targeting tree. you have in your inventory
  wood. you feel hungry and thirsty.``

Both take plain data (a grid of names, the facing vector, crafter's inventory dict), so they
can be tested on hand-written states without running crafter.

Geometry: ``grid[row][col]`` is the view as drawn on screen, row 0 at the top. The player
stands at the centre cell, ``(len(grid) // 2, len(grid[0]) // 2)``. North is up on the screen,
which is **-y** in crafter's world coordinates (crafter's ``move_up`` adds ``(0, -1)`` to the
position and its renderer draws world ``(x, y)`` at image row ``y``, column ``x``); east is
right, +x. ``facing`` is crafter's ``player.facing``, an ``(dx, dy)`` world vector.
Names are crafter's material names and lowercased object class names (``"cow"``,
``"zombie"``, ``"plant"``, ...); ``""`` or None marks a cell outside the world.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

#: Crafter caps every inventory entry, the vitals included, at 9 (``data.yaml``).
ITEM_MAX = 9
VITALS: tuple[str, ...] = ("health", "food", "drink", "energy")
_VITAL_SET = frozenset(VITALS)
#: ELLM's feeling for each vital that is below its threshold, in ELLM's order.
FEELINGS: dict[str, str] = {
    "health": "hurt",
    "food": "hungry",
    "drink": "thirsty",
    "energy": "sleepy",
}
#: ELLM leaves these out of "you see ..." (nothing to interact with) ...
ELLM_UNSEEN: frozenset[str] = frozenset({"player", "sand", "arrow"})
#: ... and does not say it targets these materials.
ELLM_UNTARGETED: frozenset[str] = frozenset({"path", "sand", "lava"})
_ELLM_RENAME = {"table": "crafting table", "sapling": "plant"}

_ROW_WORD = {-1: "north", 0: "", 1: "south"}
_COL_WORD = {-1: "west", 0: "", 1: "east"}


def _sign(v: int) -> int:
    return (v > 0) - (v < 0)


def direction_word(dx: int, dy: int) -> str:
    """Compass word for a world offset: ``(1, -2) -> "north-east"``, ``(0, 0) -> ""``."""
    ns, ew = _ROW_WORD[_sign(dy)], _COL_WORD[_sign(dx)]
    return f"{ns}-{ew}" if ns and ew else ns or ew


def _steps(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def _pretty(name: str) -> str:
    return name.replace("_", " ")


def join_and(words: Sequence[str]) -> str:
    """``a``; ``a and b``; ``a, b, and c``."""
    if len(words) <= 2:
        return " and ".join(words)
    return ", ".join(words[:-1]) + ", and " + words[-1]


@lru_cache(maxsize=8)
def _scan_order(rows: int, cols: int) -> tuple[tuple[int, int, int, str], ...]:
    """Cells of a ``rows × cols`` view, nearest the centre first, as (row, col, dist, phrase).

    Ties in distance go north before south, then west before east (row-major), so the
    nearest occurrence of a name is chosen the same way every time.
    """
    cr, cc = rows // 2, cols // 2
    cells = []
    for r in range(rows):
        for c in range(cols):
            if (r, c) == (cr, cc):
                continue
            dist = abs(r - cr) + abs(c - cc)
            phrase = f"{_steps(dist)} to your {direction_word(c - cc, r - cr)}"
            cells.append((dist, r, c, phrase))
    cells.sort()
    return tuple((r, c, d, p) for d, r, c, p in cells)


def faced_name(grid: Sequence[Sequence[str | None]], facing: Sequence[int]) -> str | None:
    """Name of the cell the player faces (None outside the world)."""
    rows, cols = len(grid), len(grid[0])
    name = grid[rows // 2 + int(facing[1])][cols // 2 + int(facing[0])]
    return name or None


def caption_smartplay(
    grid: Sequence[Sequence[str | None]],
    facing: Sequence[int],
    inventory: Mapping[str, int],
    sleeping: bool = False,
) -> str:
    """Describes one Crafter state in BK's SmartPlay-style layout.

    Args:
        grid: the local view, ``grid[row][col]``, player at the centre (see module docstring).
        facing: crafter's ``player.facing``, ``(dx, dy)`` with north = ``(0, -1)``.
        inventory: crafter's ``player.inventory``: the four vitals and the items, in
            crafter's order (items are listed in that order).
        sleeping: whether the player is asleep.

    Returns:
        Sentences separated by spaces, each ending with a full stop.
    """
    sentences = []
    if inventory.get("health", ITEM_MAX) <= 0:
        sentences.append("You died.")
    elif sleeping:
        sentences.append("You are sleeping.")

    # Nearest occurrence of each name: the first time it comes up in scan order.
    nearest: dict[str, tuple[int, str]] = {}
    for r, c, dist, phrase in _scan_order(len(grid), len(grid[0])):
        name = grid[r][c]
        if name and name != "player" and name not in nearest:
            nearest[name] = (dist, phrase)
    if nearest:
        seen = sorted((dist, name, phrase) for name, (dist, phrase) in nearest.items())
        sentences.append("You see: " + ", ".join(f"{n} {p}" for _, n, p in seen) + ".")
    else:
        sentences.append("You see nothing around you.")

    where = direction_word(int(facing[0]), int(facing[1]))
    faced = faced_name(grid, facing)
    sentences.append(f"You face {faced or 'the edge of the world'} to your {where}.")

    vitals = ", ".join(f"{v} {inventory.get(v, 0)}/{ITEM_MAX}" for v in VITALS)
    sentences.append(vitals[0].upper() + vitals[1:] + ".")

    held = [f"{n} {_pretty(k)}" for k, n in inventory.items() if k not in _VITAL_SET and n > 0]
    sentences.append(
        f"You have {', '.join(held)}." if held else "You have nothing in your inventory."
    )
    return " ".join(sentences)


def caption_ellm(
    grid: Sequence[Sequence[str | None]],
    facing: Sequence[int],
    inventory: Mapping[str, int],
    sleeping: bool = False,
    feel_below: int = ITEM_MAX,
) -> str:
    """Describes one Crafter state the way ELLM's text Crafter does, in lowercase.

    Args:
        grid, facing, inventory: as for :func:`caption_smartplay`.
        sleeping: accepted for a common signature; ELLM's text says nothing about sleep.
        feel_below: a vital below this is felt (``hurt``, ``hungry``, ``thirsty``,
            ``sleepy``); ELLM's value, 9, reports any loss at all.

    Returns:
        ``you see ... . [you are targeting ... .] [you have in your inventory ... .]
        [you feel ... .]``: sentences without content are left out, except the first.
    """
    del sleeping
    names = set()
    for row in grid:
        names.update(row)
    names.discard(None)
    names.discard("")
    names -= ELLM_UNSEEN
    seen = sorted(_ELLM_RENAME.get(n, n) for n in names)
    sentences = [f"you see {join_and(seen)}." if seen else "you see nothing."]

    faced = faced_name(grid, facing)
    if faced and faced not in ELLM_UNTARGETED:
        sentences.append(f"you are targeting {_ELLM_RENAME.get(faced, faced)}.")

    held = [
        _pretty(_ELLM_RENAME.get(k, k))
        for k, n in inventory.items()
        if k not in _VITAL_SET and n > 0
    ]
    if held:
        sentences.append(f"you have in your inventory {join_and(held)}.")
    feelings = [word for v, word in FEELINGS.items() if inventory.get(v, ITEM_MAX) < feel_below]
    if feelings:
        sentences.append(f"you feel {join_and(feelings)}.")
    return " ".join(sentences)


#: Caption styles by name, for ``env_config["caption_style"]``.
CAPTIONERS = {"smartplay": caption_smartplay, "ellm": caption_ellm}
