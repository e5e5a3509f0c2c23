"""LeanEnvRunner samples exactly what RLlib's SingleAgentEnvRunner samples (actions,
observations and what the module output beside them, exploring and greedy), without its
connector timers and with its own pipelines, and refuses a continuous action space it would
leave unnormalised."""

import numpy as np
import pytest
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

import env_registry
from rl_bk.algorithms.env_runner import LeanEnvRunner
from rl_bk.connectors.runner_pipelines import ActionsToVectorEnv, LatestObservationsToTensor
from rl_bk.experiments.task_config import load_task
from rl_bk.methods.registry import get_method


def _sampled(cls, config, explore, steps):
    runner = cls(config=config)
    try:
        episodes = runner.sample(num_timesteps=steps, explore=explore)
        outputs = {
            key: np.concatenate([e.get_extra_model_outputs(key) for e in episodes])
            for key in episodes[0].extra_model_outputs
        }
        return (
            np.concatenate([e.get_actions() for e in episodes]),
            np.concatenate([e.get_observations() for e in episodes]),
            outputs,
            [info for e in episodes for info in e.get_infos()],
            runner,
        )
    finally:
        runner.stop()


@pytest.mark.parametrize("explore", [True, False])
@pytest.mark.parametrize(
    "task_name, method, network, steps",
    [
        ("babyai-gotolocal-redball-s20", "ppo", "bk-conv", 300),
        ("babyai-gotolocal-redball-s20", "ppo", "mlp", 300),
        ("babyai-gotoredball-glam", "glam", None, 24),  # an LLM as the policy (a tiny one)
        ("nethack-score", "ppo", None, 600),  # text in the infos, episodes that end
    ],
)
def test_lean_runner_samples_what_rllibs_runner_samples(task_name, method, network, steps, explore):
    env_registry.register_all()
    task = load_task(task_name, smoke=True)
    model = task.model if network is None else task.model.model_copy(update={"network": network})
    runners = task.env_runners.model_copy(
        update={"num_env_runners": 0, "num_envs_per_env_runner": 4}
    )
    task = task.model_copy(update={"model": model, "env_runners": runners})
    config = get_method(method).build(task, 0, {})
    assert config.env_runner_cls is LeanEnvRunner
    rllib_actions, rllib_obs, rllib_outputs, rllib_infos, rllib = _sampled(
        SingleAgentEnvRunner, config, explore, steps
    )
    lean_actions, lean_obs, lean_outputs, lean_infos, lean = _sampled(
        LeanEnvRunner, config, explore, steps
    )
    assert [type(c) for c in lean._env_to_module.connectors] == [LatestObservationsToTensor]
    assert [type(c) for c in lean._module_to_env.connectors] == [ActionsToVectorEnv]
    np.testing.assert_array_equal(lean_actions, rllib_actions)
    assert lean_actions.dtype == rllib_actions.dtype
    np.testing.assert_array_equal(lean_obs, rllib_obs)
    assert set(lean_outputs) == set(rllib_outputs)
    for key, values in rllib_outputs.items():
        np.testing.assert_array_equal(lean_outputs[key], values)
        assert lean_outputs[key].dtype == values.dtype
    assert len(lean_infos) == len(rllib_infos)
    for lean_info, rllib_info in zip(lean_infos, rllib_infos):
        assert lean_info.keys() == rllib_info.keys()
        for key, value in rllib_info.items():
            assert np.array_equal(lean_info[key], value), key
    rllib_metrics, lean_metrics = rllib.get_metrics(), lean.get_metrics()
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


class _CountsSteps(RLlibCallback):
    steps = 0

    def on_episode_step(self, **kwargs):
        type(self).steps += 1


def test_on_episode_step_reaches_a_callback_that_has_one_and_is_skipped_where_none_has():
    env_registry.register_all()
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    runners = task.env_runners.model_copy(
        update={"num_env_runners": 0, "num_envs_per_env_runner": 2}
    )
    config = get_method("ppo").build(task.model_copy(update={"env_runners": runners}), 0, {})
    plain = LeanEnvRunner(config=config)
    counting = LeanEnvRunner(config=config.copy(copy_frozen=False).callbacks(_CountsSteps))
    try:
        assert not plain._calls_on_episode_step
        assert counting._calls_on_episode_step
        episodes = counting.sample(num_timesteps=64, explore=True)
        # every env step but each episode's first observation (its on_episode_start)
        assert _CountsSteps.steps == sum(len(e) for e in episodes) > 0
    finally:
        plain.stop()
        counting.stop()
