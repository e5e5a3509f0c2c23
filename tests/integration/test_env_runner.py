"""LeanEnvRunner samples exactly what RLlib's SingleAgentEnvRunner samples, without its
connector timers, and refuses a continuous action space it would leave unnormalised."""

import numpy as np
import pytest
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

import env_registry
from rl_bk.algorithms.env_runner import LeanEnvRunner
from rl_bk.experiments.task_config import load_task
from rl_bk.methods.registry import get_method


def _sampled(cls, config):
    runner = cls(config=config)
    try:
        episodes = runner.sample(num_timesteps=300)
        return (
            np.concatenate([e.get_actions() for e in episodes]),
            np.concatenate([e.get_observations() for e in episodes]),
            runner.get_metrics(),
        )
    finally:
        runner.stop()


@pytest.mark.parametrize("network", ["bk-conv", "mlp"])
def test_lean_runner_samples_what_rllibs_runner_samples(network):
    env_registry.register_all()
    task = load_task("babyai-gotolocal-redball-s20")
    task = task.model_copy(
        update={
            "model": task.model.model_copy(update={"network": network}),
            "env_runners": task.env_runners.model_copy(
                update={"num_env_runners": 0, "num_envs_per_env_runner": 4}
            ),
        }
    )
    config = get_method("ppo").build(task, 0, {})
    assert config.env_runner_cls is LeanEnvRunner
    rllib_actions, rllib_obs, rllib_metrics = _sampled(SingleAgentEnvRunner, config)
    lean_actions, lean_obs, lean_metrics = _sampled(LeanEnvRunner, config)
    np.testing.assert_array_equal(lean_actions, rllib_actions)
    np.testing.assert_array_equal(lean_obs, rllib_obs)
    assert "env_to_module_connector" in rllib_metrics
    assert "env_to_module_connector" not in lean_metrics
    for kept in ("sample", "env_step_timer", "rlmodule_inference_timer", "num_env_steps_sampled"):
        assert kept in lean_metrics


def test_a_continuous_action_space_is_refused_unnormalised():
    config = (
        PPOConfig()
        .environment("Pendulum-v1", normalize_actions=False)
        .env_runners(env_runner_cls=LeanEnvRunner, num_env_runners=0)
    )
    with pytest.raises(ValueError, match="normalize_actions=True"):
        LeanEnvRunner(config=config)
