"""Every env of every env runner plays levels of its own (``env_registry.seeding``).

RLlib seeds env runner r's vector env with ``seed + r`` and gymnasium seeds its sub-env i
with that plus i; these tests reset envs exactly so, without Ray."""

import numpy as np
import pytest
from ray.rllib.env.env_context import EnvContext

import env_registry
from env_registry.seeding import RUNNER_SEED_SPREAD, runner_seed_offset

ENV = "BabyAI-Text-GoToLocal-RedBall-S20-v0"
SEED, ENVS = 7, 4


def levels(make, runner: int, episodes: int = 3) -> list[list[bytes]]:
    """For each sub-env of runner ``runner``: the levels of its first ``episodes`` episodes
    (the grid, the agent's place and direction, the mission), reset as RLlib and gymnasium do
    (seeded once, then from the env's own generator)."""
    out = []
    for i in range(ENVS):
        env = make(EnvContext({}, worker_index=runner))
        seen = []
        for k in range(episodes):
            env.reset(seed=SEED + runner + i if k == 0 else None)
            level = env.unwrapped.level
            seen.append(
                level.grid.encode().tobytes()
                + bytes([*level.agent_pos, level.agent_dir])
                + level.mission.encode()
            )
        out.append(seen)
        env.close()
    return out


def test_rllibs_seeds_alone_make_two_runners_replay_each_others_levels():
    plain = env_registry.get_spec(ENV).build
    one, two = levels(plain, 1), levels(plain, 2)
    # runner 2's env i is runner 1's env i + 1, episode after episode
    assert [two[i] for i in range(ENVS - 1)] == [one[i + 1] for i in range(ENVS - 1)]


def test_every_env_of_every_runner_plays_its_own_levels():
    make = env_registry.rllib_env_creator(ENV)
    streams = [tuple(s) for r in (1, 2, 3) for s in levels(make, r)]
    assert len(set(streams)) == 3 * ENVS
    firsts = [s[0] for s in streams]
    assert len(set(firsts)) == len(firsts)


@pytest.mark.parametrize("runner", [0, 1])
def test_one_runner_layouts_keep_rllibs_seeds(runner):
    plain = env_registry.get_spec(ENV).build
    assert levels(env_registry.rllib_env_creator(ENV), runner) == levels(plain, runner)


def test_offsets():
    assert [runner_seed_offset(r) for r in range(4)] == [
        0,
        0,
        RUNNER_SEED_SPREAD,
        2 * RUNNER_SEED_SPREAD,
    ]
    # runners' seed ranges never meet, nor reach RLlib's evaluation runners' (+1e6)
    ranges = [set(SEED + r + runner_seed_offset(r) + np.arange(64)) for r in range(1, 99)]
    assert sum(len(r) for r in ranges) == len(set().union(*ranges))
    assert max(max(r) for r in ranges) < SEED + 1_000_000
