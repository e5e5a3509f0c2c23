"""PPO's minibatches, RLlib's way and CleanRL's (BK's ``train_rs.py``): RLlib's first epoch
follows the episodes (``shuffle_first_epoch`` draws it at random), and RLlib's count covers its
artificial steps (``minibatches_from_env_steps`` counts env steps)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.connectors.learner.shuffled_rows import ShuffleTrainBatch

OBS = gym.spaces.Box(-1e3, 1e3, (2,), np.float32)
EPISODES, STEPS, MINIBATCH = 4, 63, 64


def chunks(steps: int = STEPS) -> list[SingleAgentEpisode]:
    """Four env slots' chunks; each observation is (slot, step), each action step % 2."""
    out = []
    for slot in range(EPISODES):
        obs = [np.array([slot, t], np.float32) for t in range(steps + 1)]
        out.append(
            SingleAgentEpisode(
                observations=obs,
                actions=[t % 2 for t in range(steps)],
                rewards=[float(t == steps - 1) for t in range(steps)],
                infos=[{}] * (steps + 1),
                extra_model_outputs={
                    Columns.ACTION_LOGP: [np.float32(-0.69)] * steps,
                    Columns.ACTION_DIST_INPUTS: [np.zeros(2, np.float32)] * steps,
                },
                len_lookback_buffer=0,
            )
        )
    return out


def first_minibatch_slots(shuffle: bool) -> tuple[set[int], list]:
    """(the env slots in the update's first minibatch, every minibatch's rows)."""
    learner = (
        BasePPOConfig()
        .environment(observation_space=OBS, action_space=gym.spaces.Discrete(2))
        .debugging(seed=0)
        .training(shuffle_first_epoch=shuffle)
    ).build_learner()
    seen = []
    update = learner._update

    def spy(batch, **kwargs):
        seen.append(
            {
                k: batch[DEFAULT_MODULE_ID][k].clone()
                for k in (Columns.OBS, Columns.ACTIONS, Columns.LOSS_MASK)
            }
        )
        return update(batch, **kwargs)

    learner._update = spy
    # as PPO's training_step calls it
    learner.update(
        episodes=chunks(), minibatch_size=MINIBATCH, num_epochs=2, shuffle_batch_per_epoch=True
    )
    return {int(s) for s in seen[0][Columns.OBS][:, 0]}, seen


def test_rllib_first_epoch_follows_the_episodes():
    slots, _ = first_minibatch_slots(shuffle=False)
    assert slots == {0}  # 63 steps + RLlib's one added step of slot 0: the whole minibatch


def test_shuffled_first_epoch_mixes_the_env_slots_and_keeps_every_row_whole():
    slots, minibatches = first_minibatch_slots(shuffle=True)
    assert len(slots) == EPISODES
    first_epoch = {k: torch.cat([m[k] for m in minibatches[:4]]) for k in minibatches[0]}
    real = first_epoch[Columns.LOSS_MASK]
    obs, actions = first_epoch[Columns.OBS][real], first_epoch[Columns.ACTIONS][real]
    # every real row once, each with its own action
    assert sorted(map(tuple, obs.tolist())) == [
        (s, t) for s in range(EPISODES) for t in range(STEPS)
    ]
    assert torch.equal(actions, (obs[:, 1] % 2).long())


def test_shuffle_runs_last_in_the_ppo_pipeline_and_only_when_asked():
    from ray.rllib.connectors.learner import GeneralAdvantageEstimation

    def pieces(**training):
        config = (
            BasePPOConfig()
            .environment(observation_space=OBS, action_space=gym.spaces.Discrete(2))
            .training(**training)
        )
        return [type(p) for p in config.build_learner()._learner_connector.connectors]

    shuffled = pieces(shuffle_first_epoch=True)
    assert shuffled[-1] is ShuffleTrainBatch
    assert shuffled.index(GeneralAdvantageEstimation) < shuffled.index(ShuffleTrainBatch)
    assert ShuffleTrainBatch not in pieces()


def test_shuffle_refuses_columns_of_different_lengths():
    batch = {"m": {"a": np.arange(4), "b": np.arange(3)}}
    with pytest.raises(ValueError, match="different lengths"):
        ShuffleTrainBatch()(rl_module={}, batch=batch, episodes=[])


def minibatches_taken(from_env_steps: bool) -> int:
    """How many minibatches one update on 4 x 64 env steps (+ RLlib's 4 artificial steps)
    takes, 2 epochs of 64."""
    learner = (
        BasePPOConfig()
        .environment(observation_space=OBS, action_space=gym.spaces.Discrete(2))
        .training(
            train_batch_size_per_learner=EPISODES * 64, minibatches_from_env_steps=from_env_steps
        )
    ).build_learner()
    calls = []
    update = learner._update
    learner._update = lambda batch, **kw: (calls.append(1), update(batch, **kw))[1]
    learner.update(
        episodes=chunks(64), minibatch_size=64, num_epochs=2, shuffle_batch_per_epoch=True
    )  # as PPO's training_step calls it
    return len(calls)


def test_minibatch_count_rllib_counts_artificial_steps_cleanrl_counts_env_steps():
    assert minibatches_taken(from_env_steps=False) == 9  # ceil(2 x 260 / 64)
    assert minibatches_taken(from_env_steps=True) == 8  # 2 x 256 / 64, as CleanRL's loop
