"""``info["achieved"]``: what each step achieved, in the goal vocabulary, for ELLM's reward.

Crafter on seed 0's world with the cell in front of the player edited by hand (as
test_crafter_env does); BabyAI on an emptied 8×8 room with hand-placed objects. Both are
driven by scripted actions, one step per expected outcome.
"""

from __future__ import annotations

import pytest
from minigrid.core.world_object import Ball, Box, Door, Key

import env_registry
from env_registry.babyai.env import BabyAITextEnv, _front_cell
from env_registry.crafter import env as fam
from env_registry.crafter.vocabulary import GOALS as CRAFTER_GOALS
from rl_bk.labeling.grammars import ENV_VOCABULARY

NOOP, DO, SLEEP, PLACE_TABLE, MAKE_WOOD_PICKAXE = 0, 5, 6, 8, 11
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE = 0, 1, 2, 3, 4, 5


# --------------------------------------------------------------------------------------------
# Crafter
# --------------------------------------------------------------------------------------------
def test_crafter_table_covers_every_achievement_in_the_goal_vocabulary():
    texts = [t for t in fam.ACHIEVED_TEXT.values() if t]
    assert set(fam.ACHIEVED_TEXT) == set(fam.ACHIEVEMENTS)
    assert {*texts, fam.SLEEP_TEXT} <= set(CRAFTER_GOALS)
    assert len(set(texts)) == len(texts) and fam.SLEEP_TEXT not in texts  # no two alike
    assert fam.ACHIEVED_TEXT["wake_up"] is None  # "sleep" is reported on falling asleep
    assert fam.ACHIEVED_TEXT["place_table"] == "place crafting table"


@pytest.fixture(scope="module")
def crafter_env():
    return env_registry.make_env("Crafter-Text-v0")


def _front_south(env) -> tuple[object, tuple[int, int]]:
    """The game and the cell south of the player; seed 0 starts facing south onto grass."""
    game = env.unwrapped._game
    px, py = (int(v) for v in game._player.pos)
    assert tuple(game._player.facing) == (0, 1)
    return game, (px, py + 1)


def test_crafter_reports_each_achievement_on_its_step_every_time(crafter_env):
    env = crafter_env
    _, info = env.reset(seed=0)
    assert info["achieved"] == []
    assert env.step(NOOP)[4]["achieved"] == []
    game, front = _front_south(env)

    game._world[front] = "tree"
    assert env.step(DO)[4]["achieved"] == ["collect wood"]
    game._world[front] = "tree"  # crafter 1.8.3 leaves grass where a tree was cut
    info = env.step(DO)[4]
    assert info["achieved"] == ["collect wood"]  # counted again, not only the first time
    assert info["achievements"]["collect_wood"] == 2
    assert env.step(NOOP)[4]["achieved"] == []

    game._world[front] = "grass"
    game._player.inventory["wood"] = 5
    assert env.step(PLACE_TABLE)[4]["achieved"] == ["place crafting table"]
    assert env.step(MAKE_WOOD_PICKAXE)[4]["achieved"] == ["make wood pickaxe"]

    # "sleep" on the step the player falls asleep (ELLM pays its sleep goal there) ...
    game._player.inventory["energy"] = 2  # sleepy
    assert env.step(SLEEP)[4]["achieved"] == ["sleep"]
    assert game._player.sleeping
    # ... and not when crafter counts wake_up: asleep with full energy wakes on the next step.
    game._player.inventory["energy"] = 9
    info = env.step(NOOP)[4]
    assert info["achieved"] == [] and info["achievements"]["wake_up"] == 1


def test_crafter_counts_restart_with_the_episode(crafter_env):
    """After a reset the first wood is new again, though the last episode collected more."""
    env = crafter_env
    env.reset(seed=0)
    game, front = _front_south(env)
    for _ in range(2):
        game._world[front] = "tree"
        env.step(DO)
    _, info = env.reset(seed=0)
    assert info["achieved"] == [] and info["achievements"]["collect_wood"] == 0
    game, front = _front_south(env)
    game._world[front] = "tree"
    assert env.step(DO)[4]["achieved"] == ["collect wood"]


# --------------------------------------------------------------------------------------------
# BabyAI
# --------------------------------------------------------------------------------------------
@pytest.fixture
def room():
    """An 8×8 room (walls on its border) emptied of objects, the agent at (2, 3) facing east.

    The env is built without gymnasium's wrappers, so steps after the level's own mission
    ends (it may, by chance) go on; ``achieved`` does not read the mission."""
    env = BabyAITextEnv(
        {"level": "LocalTargetLevel", "level_kwargs": {"room_size": 8, "num_dists": 0}}
    )
    _, info = env.reset(seed=0)
    assert info["achieved"] == []
    level = env.level
    for x in range(1, 7):
        for y in range(1, 7):
            level.grid.set(x, y, None)
    level.agent_pos, level.agent_dir = (2, 3), 0  # dir 0: east, +x
    level.carrying = None
    return env


def _achieved(env, action: int) -> list[str]:
    return env.step(action)[4]["achieved"]


def test_babyai_go_to_when_a_step_brings_an_object_in_front(room):
    grid = room.level.grid
    grid.set(4, 3, Ball("red"))
    grid.set(3, 2, Box("purple"))
    assert _achieved(room, FORWARD) == ["go to the red ball"]  # (3, 3): the ball ahead
    assert _achieved(room, TOGGLE) == []  # same cell, same object: nothing new
    assert _achieved(room, LEFT) == ["go to the purple box"]  # facing north, (3, 2)
    assert _achieved(room, RIGHT) == ["go to the red ball"]  # back to it: in front again
    assert _achieved(room, RIGHT) == []  # south: empty floor
    room.level.agent_pos, room.level.agent_dir = (2, 1), 0
    assert _achieved(room, LEFT) == []  # north: the wall, not a goal's object


def test_babyai_front_cell_is_minigrids_in_every_direction(room):
    level = room.level
    for direction in range(4):
        level.agent_dir = direction
        assert _front_cell(level) == tuple(int(v) for v in level.front_pos)


def test_babyai_pick_up_then_drop(room):
    room.level.grid.set(3, 3, Key("yellow"))
    assert _achieved(room, PICKUP) == ["pick up the yellow key"]
    assert room.level.carrying is not None
    assert _achieved(room, PICKUP) == []  # nothing in front, already holding
    # Dropping puts the key in front, but the agent went nowhere: not a "go to".
    assert _achieved(room, DROP) == []
    assert _achieved(room, PICKUP) == ["pick up the yellow key"]


def test_babyai_open_door_only_on_the_step_it_opens(room):
    level = room.level
    level.grid.set(4, 3, Door("green", is_locked=True))
    assert _achieved(room, FORWARD) == ["go to the green door"]
    assert _achieved(room, TOGGLE) == []  # locked, no key
    level.carrying = Key("green")
    assert _achieved(room, TOGGLE) == ["open the green door"]
    assert _achieved(room, TOGGLE) == []  # closes it
    assert _achieved(room, TOGGLE) == ["open the green door"]  # opened again
    assert _achieved(room, FORWARD) == []  # into the doorway, empty floor ahead


def test_babyai_texts_are_in_the_goal_vocabulary(room):
    goals = ENV_VOCABULARY["babyai"].goals
    grid = room.level.grid
    grid.set(3, 3, Ball("grey"))
    grid.set(2, 2, Door("blue"))
    texts = _achieved(room, PICKUP) + _achieved(room, LEFT) + _achieved(room, TOGGLE)
    assert texts == ["pick up the grey ball", "go to the blue door", "open the blue door"]
    assert set(texts) <= goals
