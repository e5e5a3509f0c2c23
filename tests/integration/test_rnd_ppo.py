"""RND-PPO inside RLlib: the connectors on real episodes, and training through the task path."""

import gymnasium as gym
import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

from rl_bk.callbacks import EpisodeMetricsCallback
from rl_bk.experiments.ppo_config import base_ppo_config
from rl_bk.experiments.task_config import load_task
from rl_bk.knowledge.dataset import COLUMNS, read_episodes, read_metadata
from rl_bk.methods.rnd import RNDPPOConfig
from rl_bk.methods.rnd.advantages import two_headed_advantages
from rl_bk.methods.rnd.rl_module import RND_MODULE_ID

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


def episode(steps: int, terminated: bool, seed: int) -> SingleAgentEpisode:
    rng = np.random.default_rng(seed)
    return SingleAgentEpisode(
        observations=list(rng.uniform(-1, 1, (steps + 1, 3)).astype(np.float32)),
        actions=[0] * steps,
        rewards=list(rng.uniform(size=steps)),
        terminated=terminated,
        extra_model_outputs={
            Columns.ACTION_LOGP: [0.0] * steps,
            Columns.ACTION_DIST_INPUTS: [np.zeros(2, np.float32)] * steps,
        },
        len_lookback_buffer=0,
    ).to_numpy()


def test_learner_pipeline_aligns_rewards_and_targets_with_each_chunk():
    """A terminated chunk and a cut one through the learner's real connector pipeline."""
    config = (
        RNDPPOConfig()
        .environment(observation_space=OBS_SPACE, action_space=ACT_SPACE)
        .training(gamma=0.9, int_gamma=0.5, lambda_=0.8)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[8]))
    )
    learner = config.build_learner(spaces={DEFAULT_MODULE_ID: (OBS_SPACE, ACT_SPACE)})
    episodes = [episode(3, terminated=True, seed=0), episode(4, terminated=False, seed=1)]
    observations = np.concatenate([ep.get_observations() for ep in episodes])
    rewards = [ep.get_rewards().copy() for ep in episodes]
    batch = learner._learner_connector(
        rl_module=learner.module,
        batch={},
        episodes=episodes,
        shared_data={},
        metrics=learner.metrics,
    )
    policy = batch[DEFAULT_MODULE_ID]
    assert "general_advantage_estimation" not in str(learner._learner_connector.connectors)

    rnd, module = learner.module[RND_MODULE_ID], learner.module[DEFAULT_MODULE_ID]
    with torch.no_grad():
        obs = torch.as_tensor(observations)
        novelty = rnd.novelty(obs).numpy() / np.sqrt(rnd.intrinsic_return_var + 1e-8)
        ext_values = module.compute_values({Columns.OBS: obs}).numpy()
        int_values = module.compute_intrinsic_values({Columns.OBS: obs}).numpy()
    # Rows: 4 of the terminated chunk (3 steps + PPO's artificial step), then 5 of the cut one.
    np.testing.assert_allclose(
        policy[Columns.INTRINSIC_REWARDS].numpy(),
        [*novelty[1:4], 0.0, *novelty[5:9], 0.0],
        rtol=1e-5,
    )
    combined = []
    for start, steps, terminated, ext_rewards in [
        (0, 3, True, rewards[0]),
        (4, 4, False, rewards[1]),
    ]:
        rows = slice(start, start + steps + 1)
        heads = two_headed_advantages(
            ext_rewards,
            novelty[start + 1 : start + steps + 1],
            ext_values[rows],
            int_values[rows],
            terminated,
            gamma=0.9,
            int_gamma=0.5,
            lambda_=0.8,
        )
        real = slice(start, start + steps)
        np.testing.assert_allclose(
            policy["value_targets"].numpy()[real], heads.ext_returns, rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(
            policy["int_value_targets"].numpy()[real], heads.int_returns, rtol=1e-5, atol=1e-6
        )
        combined.append(2.0 * heads.ext_advantages + heads.int_advantages)
    combined = np.concatenate(combined)
    mask = policy[Columns.LOSS_MASK].numpy()
    standardized = (combined - combined.mean()) / combined.std()
    np.testing.assert_allclose(policy["advantages"].numpy()[mask], standardized, rtol=1e-4)
    assert set(batch[RND_MODULE_ID]) == {Columns.OBS, Columns.LOSS_MASK}


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"int_coeff": -1.0}, "int_coeff"),
        ({"int_coeff": 0.0, "ext_coeff": 0.0}, "not both 0"),
        ({"int_gamma": 1.5}, "int_gamma"),
        ({"update_proportion": 0.0}, "update_proportion"),
        ({"rnd_hiddens": []}, "rnd_hiddens"),
        ({"rnd_lr": 0.0}, "rnd_lr"),
        ({"precollect_episodes": 0}, "precollect_episodes"),
    ],
)
def test_invalid_rnd_settings_are_reported(setting, message):
    config = RNDPPOConfig().environment(observation_space=OBS_SPACE, action_space=ACT_SPACE)
    with pytest.raises(ValueError, match=message):
        config.training(**setting).validate()


def test_several_learners_are_refused():
    config = RNDPPOConfig().environment(observation_space=OBS_SPACE, action_space=ACT_SPACE)
    with pytest.raises(ValueError, match="one learner"):
        config.learners(num_learners=2).validate()


def test_recurrent_policies_are_refused():
    config = RNDPPOConfig().rl_module(model_config=DefaultModelConfig(use_lstm=True))
    with pytest.raises(ValueError, match="recurrent"):
        config.validate()


@pytest.mark.ray
def test_rnd_ppo_trains_through_the_task_path_and_precollects(ray_session, tmp_path):
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    params = {
        "train_batch_size_per_learner": 256,
        "minibatch_size": 64,
        "num_epochs": 1,
        "precollect_dir": str(tmp_path / "dataset"),
        "precollect_every_timesteps": 256,
        "precollect_episodes": 1,
    }
    # Exactly how the lead's method registry builds it: training(...) before callbacks(...).
    config = base_ppo_config(task, 0, params, config=RNDPPOConfig())
    config.env_runners(num_env_runners=1, num_envs_per_env_runner=4)
    algo = config.build_algo()
    try:
        callbacks = {type(c).__name__ for c in algo.callbacks}
        assert {EpisodeMetricsCallback.__name__, "PrecollectEpisodes"} <= callbacks
        results = [algo.train() for _ in range(2)]
        policy_on_runner = algo.get_module()
        assert algo.precollect_now() == 1  # once more at the end, on demand
    finally:
        algo.stop()

    learners = results[-1]["learners"]
    policy, rnd = learners[DEFAULT_MODULE_ID], learners[RND_MODULE_ID]
    for key in ("intrinsic_reward_mean", "intrinsic_reward_raw_mean", "int_vf_loss", "vf_loss"):
        assert np.isfinite(policy[key]), key
    assert policy["intrinsic_reward_raw_mean"] > 0 and policy["intrinsic_reward_mean"] > 0
    assert np.isfinite(rnd["rnd_predictor_loss"]) and rnd["rnd_predictor_loss"] > 0
    pieces = learners["__all_modules__"]["learner_connector"]["timers"]["connectors"]
    assert {"compute_intrinsic_rewards", "two_headed_general_advantage_estimation"} <= set(pieces)
    assert "general_advantage_estimation" not in pieces
    # The env runners act with the policy alone: no RND module, no value heads.
    assert not hasattr(policy_on_runner, "int_vf") and not hasattr(policy_on_runner, "predictor")

    assert results[-1]["precollect"]["episodes_written"] == 2  # at 256 and at 512 steps
    parts = sorted((tmp_path / "dataset").glob("part-*.parquet"))
    assert len(parts) == 3 and tuple(pq.read_schema(parts[0]).names) == COLUMNS
    episodes = read_episodes(tmp_path / "dataset")
    assert len(episodes) == 3 and all(ep.captions[0] for ep in episodes)
    assert read_metadata(tmp_path / "dataset")["env"] == task.env
