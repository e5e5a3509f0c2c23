"""Crafter-Text: the captioners on hand-written states, and the env's contract on real worlds
(orientation, termination, seeding, single-task rewards, gymnasium's checker).

The first crafter reset in a fresh environment compiles opensimplex with numba (~5-7 s);
later resets of a 64×64 world take ~0.1 s, so the env tests keep their resets few.
"""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import env_registry
from env_registry.crafter import env as fam
from env_registry.crafter.captioner import caption_ellm, caption_smartplay, direction_word

CRAFTER_NAMES = [s.name for s in fam.SPECS]
NOOP, MOVE_UP, DO, PLACE_TABLE, MAKE_WOOD_PICKAXE = 0, 3, 5, 8, 11
G = "grass"


# --------------------------------------------------------------------------------------------
# Captions on hand-written states
# --------------------------------------------------------------------------------------------
def _inventory(**counts: int) -> dict[str, int]:
    inv = {name: 0 for name in fam.ITEMS}
    inv.update(health=9, food=9, drink=9, energy=9)
    inv.update(counts)
    return inv


def _grid(cells: dict[tuple[int, int], str]) -> list[list[str]]:
    """A 7×9 view of grass with the player at (3, 4) and ``cells`` set by (row, col)."""
    grid = [[G] * 9 for _ in range(7)]
    grid[3][4] = "player"
    for (r, c), name in cells.items():
        grid[r][c] = name
    return grid


# Tree 2 north + 2 east (and a farther one in the corner), water 2 west, a cow just south,
# one cell off the world's edge.
SCENE = _grid({(1, 6): "tree", (0, 0): "tree", (3, 2): "water", (4, 4): "cow", (6, 8): ""})
SCENE_INV = _inventory(health=7, food=5, energy=3, sapling=1, wood=2, wood_pickaxe=1)


def test_direction_words_use_north_for_minus_y():
    assert direction_word(1, -2) == "north-east"
    assert direction_word(-3, 1) == "south-west"
    assert direction_word(0, 3) == "south"
    assert direction_word(-1, 0) == "west"
    assert direction_word(0, 0) == ""


def test_smartplay_caption_of_a_hand_written_state():
    text = caption_smartplay(SCENE, (0, 1), SCENE_INV)
    assert text == (
        "You see: cow 1 step to your south, grass 1 step to your north, "
        "water 2 steps to your west, tree 4 steps to your north-east. "
        "You face cow to your south. "
        "Health 7/9, food 5/9, drink 9/9, energy 3/9. "
        "You have 1 sapling, 2 wood, 1 wood pickaxe."
    )


def test_smartplay_caption_sleeping_empty_inventory_and_death():
    grid = _grid({(2, 4): "table", (5, 1): "zombie"})
    asleep = caption_smartplay(grid, (0, -1), _inventory(energy=2), sleeping=True)
    assert asleep == (
        "You are sleeping. "
        "You see: grass 1 step to your west, table 1 step to your north, "
        "zombie 5 steps to your south-west. "
        "You face table to your north. "
        "Health 9/9, food 9/9, drink 9/9, energy 2/9. "
        "You have nothing in your inventory."
    )
    dead = caption_smartplay(grid, (-1, 0), _inventory(health=0))
    assert dead.startswith("You died. You see: ")
    assert "You face grass to your west." in dead


def test_ellm_caption_of_a_hand_written_state():
    text = caption_ellm(SCENE, (0, 1), SCENE_INV)
    assert text == (
        "you see cow, grass, tree, and water. you are targeting cow. "
        "you have in your inventory plant, wood, and wood pickaxe. "
        "you feel hurt, hungry, and sleepy."
    )
    # A raised feeling threshold drops the vitals that are not below it.
    assert caption_ellm(SCENE, (0, 1), SCENE_INV, feel_below=5).endswith("you feel sleepy.")


def test_ellm_caption_renames_and_leaves_out_what_ellm_leaves_out():
    # Sand, arrows and the player are not "seen"; facing sand targets nothing; full vitals
    # and an empty inventory say nothing; a table is a crafting table.
    grid = _grid({(4, 4): "sand", (0, 8): "arrow", (1, 1): "table"})
    assert caption_ellm(grid, (0, 1), _inventory()) == "you see crafting table and grass."
    assert caption_ellm(grid, (0, 1), _inventory(), sleeping=True) == (
        "you see crafting table and grass."
    )
    assert caption_ellm(grid, (-1, 0), _inventory()) == (
        "you see crafting table and grass. you are targeting grass."
    )


# --------------------------------------------------------------------------------------------
# The env on real worlds
# --------------------------------------------------------------------------------------------
def _game(env):
    return env.unwrapped._game


@pytest.mark.parametrize("name", CRAFTER_NAMES)
def test_check_env_passes(name):
    # The API contract does not depend on the world's size: a 32×32 world resets 4x faster
    # (check_env resets 10 times); the plain full game is checked at its default size.
    env = env_registry.make_env(name, None if name == "Crafter-Text-v0" else {"area": (32, 32)})
    check_env(env, skip_render_check=True)
    assert env.observation_space.shape == (fam.OBS_SIZE,)
    _, info = env.reset(seed=0)
    for key in (
        "caption",
        "mission",
        "success",
        "achievements",
        "achievements_unlocked",
        "inventory",
    ):
        assert key in info
    assert sorted(info["achievements"]) == sorted(fam.ACHIEVEMENTS)
    assert "semantic" not in info  # render_pixels=False computes no world map


def test_specs_defaults():
    specs = {s.name: s for s in fam.SPECS}
    assert set(specs) == {
        "Crafter-Text-v0",
        "Crafter-Text-ELLM-v0",
        "Crafter-Text-PlaceTable-v0",
        "Crafter-Text-MakeWoodPickaxe-v0",
        "Crafter-Text-CollectDrink-v0",
        "Crafter-Text-EatCow-v0",
    }
    assert all(s.family == "crafter" for s in specs.values())
    assert specs["Crafter-Text-v0"].defaults["length"] == 10000
    assert specs["Crafter-Text-ELLM-v0"].defaults["length"] == 400
    assert specs["Crafter-Text-ELLM-v0"].defaults["caption_style"] == "ellm"
    assert specs["Crafter-Text-EatCow-v0"].defaults["task"] == "eat_cow"


def test_orientation_north_is_minus_y_in_world_view_caption_and_frame():
    """A diamond written at world (x+2, y-1) is 2 east, 1 north: in the observation, in the
    caption, and in the rendered frame; move_up moves the player to y-1."""
    env = env_registry.make_env("Crafter-Text-v0", {"render_pixels": True})
    env.reset(seed=0)
    game = _game(env)
    world, (px, py) = game._world, (int(v) for v in game._player.pos)
    assert (px, py) == (32, 32)
    assert world[(px + 2, py - 1)] == ("grass", None)  # hand-checked for seed 0
    assert world[(px, py - 1)] == ("grass", None)

    # The rendered frame (unit 7 px) changes only in the cell at row 3-1, column 4+2.
    before = env.render().astype(int)
    world[(px + 2, py - 1)] = "diamond"
    after = env.render().astype(int)
    changed = np.argwhere(np.abs(after - before).sum(-1) > 0)
    assert changed.size and {(r // 7, c // 7) for r, c in changed} == {(2, 6)}

    assert env.unwrapped.local_view_names()[2][6] == "diamond"
    obs, _, _, _, info = env.step(NOOP)
    cell = (2 * fam.VIEW_COLS + 6) * fam.N_SEMANTIC
    diamond = fam.MATERIALS.index("diamond")
    assert obs[cell + diamond] == 1.0 and obs[cell : cell + fam.N_SEMANTIC].sum() == 1.0
    assert "diamond 3 steps to your north-east" in info["caption"]

    obs, _, _, _, info = env.step(MOVE_UP)
    assert tuple(int(v) for v in game._player.pos) == (px, py - 1)
    assert "diamond 2 steps to your east" in info["caption"]
    assert "You face grass to your north." in info["caption"]
    facing = obs[fam.OBS_SIZE - 6 : fam.OBS_SIZE - 2]
    assert facing.tolist() == [0.0, 0.0, 1.0, 0.0]  # west, east, north, south


def test_truncated_at_the_length_limit_and_terminated_on_death():
    env = env_registry.make_env("Crafter-Text-v0", {"length": 3})
    env.reset(seed=0)
    flags = [env.step(NOOP)[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]

    # Death on the last allowed step is a termination, not a truncation.
    env.reset(seed=0)
    env.step(NOOP)
    env.step(NOOP)
    _game(env)._player.health = 0
    _, _, terminated, truncated, _ = env.step(NOOP)
    assert (terminated, truncated) == (True, False)


def test_seeded_resets_are_reproducible():
    a = env_registry.make_env("Crafter-Text-v0")
    b = env_registry.make_env("Crafter-Text-v0")
    obs_a, info_a = a.reset(seed=7)
    obs_b, info_b = b.reset(seed=7)
    assert np.array_equal(obs_a, obs_b) and info_a["caption"] == info_b["caption"]
    assert not np.array_equal(obs_a, b.reset(seed=8)[0])  # another seed, another world
    obs_b, _ = b.reset(seed=7)  # re-seeding restarts the stream
    assert np.array_equal(obs_a, obs_b)

    # Same actions, same game, across deaths (unseeded resets continue the stream) and past
    # crafter's despawning (which, unpatched, depends on memory addresses).
    actions = np.random.default_rng(0).integers(0, fam.N_ACTIONS, 300)
    for action in actions:
        step_a, step_b = a.step(int(action)), b.step(int(action))
        assert np.array_equal(step_a[0], step_b[0])
        assert step_a[1:4] == step_b[1:4] and step_a[4]["caption"] == step_b[4]["caption"]
        if step_a[2] or step_a[3]:
            assert np.array_equal(a.reset()[0], b.reset()[0])


def test_rendering_does_not_change_the_game():
    # Seed 7 with no-ops survives into the night (step ~150 on), when frames draw noise.
    drawn = env_registry.make_env("Crafter-Text-v0", {"render_pixels": True, "caption": False})
    blind = env_registry.make_env("Crafter-Text-v0", {"caption": False})
    drawn.reset(seed=7)
    blind.reset(seed=7)
    steps = 0
    while steps < 230:
        step_d, step_b = drawn.step(NOOP), blind.step(NOOP)
        steps += 1
        assert drawn.render().shape == (64, 64, 3)
        assert np.array_equal(step_d[0], step_b[0]) and step_d[2] == step_b[2]
        if step_d[2]:
            break
    assert steps > 170, "the player died before nightfall: the test checked no night frame"
    assert "semantic" in step_d[4] and blind.render() is None


def _face_south_of_player(env):
    game = _game(env)
    px, py = (int(v) for v in game._player.pos)
    assert tuple(game._player.facing) == (0, 1)
    return game, (px, py + 1)


def _setup_collect_drink(env):
    game, target = _face_south_of_player(env)
    game._world[target] = "water"
    return DO


def _setup_place_table(env):
    game, _ = _face_south_of_player(env)
    game._player.inventory["wood"] = 2
    return PLACE_TABLE


def _setup_make_wood_pickaxe(env):
    game, target = _face_south_of_player(env)
    game._world[target] = "table"
    game._player.inventory["wood"] = 1
    return MAKE_WOOD_PICKAXE


def _setup_eat_cow(env):
    import crafter

    game, target = _face_south_of_player(env)
    cow = crafter.objects.Cow(game._world, target)
    cow.health = 1  # one hit
    game._world.add(cow)
    return DO


@pytest.mark.parametrize(
    "name, task, mission, setup",
    [
        ("Crafter-Text-CollectDrink-v0", "collect_drink", "drink water", _setup_collect_drink),
        ("Crafter-Text-PlaceTable-v0", "place_table", "place a crafting table", _setup_place_table),
        (
            "Crafter-Text-MakeWoodPickaxe-v0",
            "make_wood_pickaxe",
            "make a wood pickaxe",
            _setup_make_wood_pickaxe,
        ),
        ("Crafter-Text-EatCow-v0", "eat_cow", "eat a cow", _setup_eat_cow),
    ],
)
def test_single_task_rewards_the_unlocking_step_and_terminates(name, task, mission, setup):
    env = env_registry.make_env(name)
    _, info = env.reset(seed=0)  # seed 0: grass to the south, nothing on it
    assert info["mission"] == mission and info["success"] is False
    _, reward, terminated, truncated, info = env.step(NOOP)
    assert (reward, terminated, info["success"]) == (0.0, False, False)
    action = setup(env)  # after the no-op, so that a cow has no turn to walk away
    _, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["success"] is True and task in info["achievements_unlocked"]
    assert info["achievements"][task] == 1


def test_full_game_keeps_crafters_reward_and_never_succeeds():
    env = env_registry.make_env("Crafter-Text-v0")
    _, info = env.reset(seed=0)
    assert info["mission"] == "unlock as many achievements as you can"
    action = _setup_collect_drink(env)
    _, reward, terminated, _, info = env.step(action)
    assert reward == 1.0 and not terminated  # +1 for the first unlock, health unchanged
    assert info["success"] is False and info["achievements_unlocked"] == ["collect_drink"]
    _, reward, _, _, _ = env.step(action)  # the second drink unlocks nothing new
    assert reward == 0.0
