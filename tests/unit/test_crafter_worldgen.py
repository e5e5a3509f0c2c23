"""The vectorised world generation makes crafter's worlds, to the bit."""

import numpy as np
import pytest

crafter = pytest.importorskip("crafter")

from crafter import objects, worldgen  # noqa: E402

from env_registry.crafter.worldgen import generate_world  # noqa: E402


def fresh_world(seed: int):
    world = crafter.engine.World((64, 64), crafter.constants.materials, (12, 12))
    world.reset(seed=seed)
    player = objects.Player(world, (32, 32))
    world.add(player)
    return world, player


def creatures(world):
    return sorted(
        (type(o).__name__, tuple(int(v) for v in o.pos)) for o in world.objects if o is not None
    )


@pytest.mark.parametrize("seed", [0, 1, 7, 123, 2024, 99991])
def test_the_world_and_the_rng_after_it_are_crafters(seed):
    theirs, their_player = fresh_world(seed)
    worldgen.generate_world(theirs, their_player)
    ours, our_player = fresh_world(seed)
    generate_world(ours, our_player)
    names = np.vectorize(lambda i: theirs._mat_names[i])(theirs._mat_map)
    our_names = np.vectorize(lambda i: ours._mat_names.get(i))(ours._mat_map)
    np.testing.assert_array_equal(our_names, names)
    assert creatures(ours) == creatures(theirs)
    assert ours.random.uniform() == theirs.random.uniform()  # the same draws were made
    assert len(set(names.ravel())) >= 6  # a real world: grass, water, stone, trees, ...
