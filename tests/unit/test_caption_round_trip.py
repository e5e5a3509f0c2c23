"""Each family's captions parse back to what was captioned: the oracle reads captions with
regular expressions, so a caption whose wording changes would silently blind it. Real env
states (random actions, fixed seeds) for BabyAI and Crafter; NetHack's status numbers drawn
at random (a caption is a pure function of the message and blstats)."""

from __future__ import annotations

import numpy as np
import pytest
from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT

import env_registry
from env_registry.babyai.captioner import AGENT_X, AGENT_Y
from env_registry.babyai.oracle import parse_caption as parse_babyai_caption
from env_registry.crafter.oracle import parse_caption as parse_crafter_caption
from env_registry.nethack import captioner as nh
from env_registry.nethack.oracle import split_caption as split_nethack_caption


def test_babyai_objects_and_the_carried_one_parse_back_to_the_view():
    env = env_registry.make_env("BabyAI-Text-GoToLocal-RedBall-S20-v0")
    rng = np.random.default_rng(0)
    checked = objects = 0
    env.reset(seed=0)
    for _ in range(300):
        _, _, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        level = env.unwrapped.level if hasattr(env.unwrapped, "level") else env.level
        image = level.gen_obs()["image"]
        parsed, carrying = parse_babyai_caption(info["caption"])
        for o in parsed:  # each object sits where its offsets say, as the caption names it
            obj, color, state = image[AGENT_X + o.right, AGENT_Y - o.forward]
            assert (IDX_TO_OBJECT[obj], IDX_TO_COLOR[color]) == (o.kind, o.color), info["caption"]
            if o.kind == "door":
                assert o.state == {0: "open", 1: "closed", 2: "locked"}[state]
        # The agent's own cell shows what it carries; the caption says that separately.
        listed = sum(
            IDX_TO_OBJECT[image[x, y, 0]] in ("ball", "box", "key", "door")
            for x in range(7)
            for y in range(7)
            if (x, y) != (AGENT_X, AGENT_Y)
        )
        assert len(parsed) == listed, info["caption"]
        held = level.carrying
        assert carrying == ((held.color, held.type) if held is not None else None)
        checked, objects = checked + 1, objects + len(parsed)
        if terminated or truncated:
            env.reset(seed=int(rng.integers(1 << 30)))
    assert checked == 300 and objects > 100  # the states showed objects to parse


@pytest.mark.parametrize("style", ["smartplay", "ellm"])
def test_crafter_inventory_and_facing_parse_back(style):
    from env_registry.crafter.captioner import faced_name

    env = env_registry.make_env("Crafter-Text-v0", {"caption_style": style})
    game = env.unwrapped
    rng = np.random.default_rng(3)
    _, info = env.reset(seed=3)
    held_any = faced_any = False
    for _ in range(200):
        s = parse_crafter_caption(info["caption"])
        held = {
            k: n
            for k, n in info["inventory"].items()
            if k not in ("health", "food", "drink", "energy") and n > 0
        }
        if style == "smartplay":  # counts and vitals are in the caption
            assert s.inventory == held, info["caption"]
            low = {v for v in ("health", "food", "drink", "energy") if info["inventory"][v] <= 4}
            assert s.low == low, info["caption"]
        else:
            assert set(s.inventory) == set(held), info["caption"]
        faced = faced_name(game.local_view_names(), game._game._player.facing)
        if faced and faced not in ("grass", "sand", "path") and style == "smartplay":
            assert s.facing == faced, info["caption"]  # the oracle's name for it
            faced_any = True
        held_any |= bool(held)
        _, _, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            _, info = env.reset(seed=int(rng.integers(1 << 30)))
    assert held_any and (faced_any or style == "ellm")  # the states had something to check


def test_nethack_status_numbers_parse_back():
    rng = np.random.default_rng(0)
    for _ in range(500):
        b = np.zeros(nh.BLSTATS_SIZE, np.int64)
        b[nh.BL_HP], b[nh.BL_HPMAX] = rng.integers(-3, 60), rng.integers(1, 60)
        b[nh.BL_DEPTH], b[nh.BL_GOLD] = rng.integers(1, 50), rng.integers(0, 9999)
        b[nh.BL_XP] = rng.integers(1, 30)
        b[nh.BL_HUNGER], b[nh.BL_CAP] = rng.integers(0, 7), rng.integers(0, 6)
        b[nh.BL_CONDITION], b[nh.BL_TIME] = rng.integers(0, 1 << 13), rng.integers(1, 99999)
        message = rng.choice(["", "You hit the newt!", "It's a wall.", "You see 4 gold pieces."])
        text, status = split_nethack_caption(nh.caption_nethack(str(message), b))
        assert text == message
        assert status["hp"] == b[nh.BL_HP] and status["hpmax"] == b[nh.BL_HPMAX]
        assert (status["depth"], status["gold"], status["xl"]) == (
            b[nh.BL_DEPTH],
            b[nh.BL_GOLD],
            b[nh.BL_XP],
        )
        # hungry, weak, fainting, fainted; never "not hungry" (1), NetHack's normal state
        assert status.get("hungry", 0) == int(b[nh.BL_HUNGER] in (2, 3, 4, 5))
    over, status = split_nethack_caption(nh.caption_nethack("You die...", np.zeros(27, int)))
    assert over == "You die..." and status == {"dead": 1}
