"""Crafter's world generation (crafter 1.8.3, ``crafter/worldgen.py``), with the noise drawn
for the whole map at once.

crafter generates a 64×64 world cell by cell, calling OpenSimplex's scalar ``noise3`` up to
eleven times per cell through Python: about a quarter of a second per reset, which a random
or early policy (episodes of ~200 steps) pays every episode, more than its steps cost. Here
every noise field is one ``noise3array`` call over the grid (the same numbers as ``noise3``,
bit for bit), the materials that need no random draw are set by array masks, and only the
cells whose branch draws from the world's RNG are walked in crafter's order (x-major), making
the same draws in the same order. The world that comes out is crafter's, to the bit: the same
materials, the same creatures at the same places, and the RNG in the same state after
(``tests/unit/test_crafter_worldgen.py`` checks it against crafter's own function).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import opensimplex


def _same(v: np.ndarray) -> np.ndarray:
    return v


def _double(v: np.ndarray) -> np.ndarray:
    return 2 * v


def _fifth(v: np.ndarray) -> np.ndarray:
    return v / 5  # as crafter writes it: y / 5, not y * 0.2 (not the same float)


#: crafter's noise fields: (name, x transform, y transform, z, {size: weight}, normalise).
_FIELDS = (
    ("start", _same, _same, 8, {3: 1}, True),
    ("water", _same, _same, 3, {15: 1, 5: 0.15}, False),
    ("mountain", _same, _same, 0, {15: 1, 5: 0.3}, True),
    ("cave", _same, _same, 6, {7: 1}, True),
    ("horizontal", _double, _fifth, 7, {3: 1}, True),
    ("vertical", _fifth, _double, 7, {3: 1}, True),
    ("coal", _same, _same, 1, {8: 1}, True),
    ("iron", _same, _same, 2, {6: 1}, True),
    ("lava", _same, _same, 6, {5: 1}, True),
    ("sand", _same, _same, 4, {9: 1}, True),
    ("tree", _same, _same, 5, {7: 1}, True),
)


def _noise_fields(simplex: opensimplex.OpenSimplex, area: tuple[int, int]) -> dict[str, Any]:
    """Each field at every cell, ``[x, y]``, as crafter's ``_simplex`` computes it."""
    xs, ys = np.arange(area[0], dtype=np.float64), np.arange(area[1], dtype=np.float64)
    fields = {}
    with _one_numba_thread():
        for name, fx, fy, z, sizes, normalize in _FIELDS:
            fields[name] = _field(simplex, xs, ys, fx, fy, z, sizes, normalize)
    return fields


@contextlib.contextmanager
def _one_numba_thread():
    """noise3array is numba-parallel; on the few, busy cores of an env runner its threads
    cost more than they save on a 64x64 field (their start and sync outweigh the work)."""
    try:
        import numba
    except ImportError:  # opensimplex then runs in plain Python
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _field(
    simplex: opensimplex.OpenSimplex,
    xs: np.ndarray,
    ys: np.ndarray,
    fx: Any,
    fy: Any,
    z: int,
    sizes: dict[int, float],
    normalize: bool,
) -> np.ndarray:
    value = np.zeros((len(xs), len(ys)))
    for size, weight in sizes.items():
        # noise3array(x, y, z) is indexed [z, y, x]; crafter calls noise3(x / size, ...)
        noise = simplex.noise3array(fx(xs) / size, fy(ys) / size, np.array([float(z)]))
        value = value + weight * noise[0].T
    return value / sum(sizes.values()) if normalize else value


def generate_world(world: Any, player: Any) -> None:
    """Fills ``world`` around ``player`` exactly as ``crafter.worldgen.generate_world``."""
    from crafter import objects

    rng = world.random
    simplex = opensimplex.OpenSimplex(seed=rng.randint(0, 2**31 - 1))
    area = tuple(world.area)
    f = _noise_fields(simplex, area)
    x, y = np.meshgrid(np.arange(area[0]), np.arange(area[1]), indexing="ij")
    start = 4 - np.sqrt((x - player.pos[0]) ** 2 + (y - player.pos[1]) ** 2)
    start = 1 / (1 + np.exp(-(start + 2 * f["start"])))
    water = f["water"] + 0.1 - 2 * start
    # The same operations in the same order as crafter's scalar code, so the same floats.
    mountain = f["mountain"] - (4 * start + 0.3 * water)

    # The branches that draw no random number, as masks.
    grass_start = start > 0.5
    mountains = ~grass_start & (mountain > 0.15)
    cave = mountains & (f["cave"] > 0.15) & (mountain > 0.3)
    horizontal = mountains & ~cave & (f["horizontal"] > 0.4)
    vertical = mountains & ~cave & ~horizontal & (f["vertical"] > 0.4)
    rock = mountains & ~cave & ~horizontal & ~vertical  # coal, iron, diamond, lava or stone
    lowland = ~grass_start & ~mountains
    sand = lowland & (0.25 < water) & (water <= 0.35) & (f["sand"] > -0.2)
    water_cells = lowland & ~sand & (0.3 < water)
    grassland = lowland & ~sand & ~water_cells
    tunnels = horizontal | vertical

    names = np.full(area, "grass", dtype=object)
    names[cave | horizontal | vertical] = "path"
    names[sand] = "sand"
    names[water_cells] = "water"
    # The cells whose branch may draw, in crafter's order (x-major), with crafter's
    # conditions (a rock cell draws unless none of coal, iron and diamond is possible; its
    # material is decided here either way).
    uniform = rng.uniform
    drawing = rock | (grassland & (f["tree"] > 0))
    for i, j in zip(*np.nonzero(drawing)):  # np.nonzero walks x-major, as crafter's loops
        if rock[i, j]:
            m = mountain[i, j]
            if f["coal"][i, j] > 0 and uniform() > 0.85:
                names[i, j] = "coal"
            elif f["iron"][i, j] > 0.4 and uniform() > 0.75:
                names[i, j] = "iron"
            elif m > 0.18 and uniform() > 0.994:
                names[i, j] = "diamond"
            elif m > 0.3 and f["lava"][i, j] > 0.35:
                names[i, j] = "lava"
            else:
                names[i, j] = "stone"
        elif uniform() > 0.8:
            names[i, j] = "tree"

    ids = world._mat_ids
    for name in set(names.ravel()):
        if name not in ids:  # as World.__setitem__ numbers a new material
            ids[name] = len(ids)
    world._mat_map[:] = np.vectorize(ids.__getitem__, otypes=[np.uint8])(names)

    _place_objects(world, player, names, tunnels, objects)


def _place_objects(
    world: Any, player: Any, names: np.ndarray, tunnels: np.ndarray, objects: Any
) -> None:
    """crafter's ``_set_object`` over every cell, x-major: only walkable cells can draw."""
    from crafter import constants

    if set(constants.walkable) != {"grass", "sand", "path"}:
        raise RuntimeError(
            f"crafter's walkable materials changed ({constants.walkable}); "
            "this generator follows crafter 1.8.3"
        )
    uniform = world.random.uniform
    x, y = np.meshgrid(np.arange(names.shape[0]), np.arange(names.shape[1]), indexing="ij")
    dist = np.sqrt((x - player.pos[0]) ** 2 + (y - player.pos[1]) ** 2)
    grass, path = names == "grass", names == "path"
    # crafter's walkable materials are grass, sand and path; a sand cell draws only when far.
    may_draw = (
        (grass & (dist > 3)) | ((grass | path | (names == "sand")) & (dist > 10)) | (path & tunnels)
    )
    cells = np.nonzero(may_draw)  # x-major, as crafter's loops
    for i, j, d, is_grass, in_tunnel in zip(
        *cells, dist[cells].tolist(), grass[cells].tolist(), (path & tunnels)[cells].tolist()
    ):
        pos = (int(i), int(j))
        if d > 3 and is_grass and uniform() > 0.985:
            world.add(objects.Cow(world, pos))
        elif d > 10 and uniform() > 0.993:
            world.add(objects.Zombie(world, pos, player))
        elif in_tunnel and uniform() > 0.95:
            world.add(objects.Skeleton(world, pos, player))
