"""The greedy-failure diagnosis (bench/greedy_loops.py): an episode says whether it came back
to a state and whether the target was ever in view, on a real BabyAI level."""

from __future__ import annotations

import numpy as np
import torch
from ray.rllib.core.columns import Columns

import env_registry
from bench import greedy_loops

ENV = "BabyAI-Text-GoToLocal-RedBall-S20-v0"
DONE = 6  # minigrid's "done": it neither moves the agent nor ends a GoTo episode


class AlwaysDone:
    """A policy that never moves: the agent sees only what it saw at reset."""

    def forward_inference(self, batch):
        logits = torch.full((1, 7), -10.0)
        logits[0, DONE] = 10.0
        return {Columns.ACTION_DIST_INPUTS: logits}


def target_in_view_at_reset(env, seed: int) -> bool:
    env.reset(seed=seed)
    level = env.unwrapped.level
    return any(level.in_view(*obj.cur_pos) for obj in level.instrs.desc.obj_set)


def test_a_policy_that_never_moves_loops_and_saw_the_target_only_if_it_was_in_view_at_reset():
    env = env_registry.make_env(ENV, {})
    seeds = range(10_000, 10_060)
    visible = next(s for s in seeds if target_in_view_at_reset(env, s))
    hidden = next(s for s in seeds if not target_in_view_at_reset(env, s))
    rng = np.random.default_rng(0)
    seen = greedy_loops.play(env, AlwaysDone(), visible, greedy=True, rng=rng)
    unseen = greedy_loops.play(env, AlwaysDone(), hidden, greedy=True, rng=rng)
    for episode in (seen, unseen):
        assert episode["looped"] and not episode["success"]
        assert set(episode["actions"]) == {DONE}
    assert seen["saw_target"] and not unseen["saw_target"]
    assert seen["target_in_view_at_reset"] and not unseen["target_in_view_at_reset"]
