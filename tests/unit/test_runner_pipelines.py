"""Where the lean runner pipelines stand in for RLlib's, and where they must not; their
outputs against RLlib's are compared on real runners in tests/integration/test_env_runner.py."""

from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

from rl_bk.connectors.runner_pipelines import LatestObservationsToTensor, why_not_lean

BOX = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
FOUR = gym.spaces.Discrete(4)


def _config(**changes):
    fields = {
        "_env_to_module_connector": None,
        "_module_to_env_connector": None,
        "add_default_connectors_to_env_to_module_pipeline": True,
        "add_default_connectors_to_module_to_env_pipeline": True,
    }
    return SimpleNamespace(**{**fields, **changes})


def _env(obs=BOX, actions=FOUR):
    return SimpleNamespace(single_observation_space=obs, single_action_space=actions)


def _module(stateful=False):
    return SimpleNamespace(is_stateful=lambda: stateful)


def test_an_array_observation_and_a_discrete_action_take_the_lean_pipelines():
    assert why_not_lean(_config(), _env(), _module()) is None


@pytest.mark.parametrize(
    "config, env, module, device, reason",
    [
        (_config(_env_to_module_connector=object()), _env(), _module(), None, "its own"),
        (
            _config(add_default_connectors_to_module_to_env_pipeline=False),
            _env(),
            _module(),
            None,
            "default pieces",
        ),
        (_config(), _env(obs=gym.spaces.Dict({"a": BOX})), _module(), None, "Box"),
        (_config(), _env(actions=BOX), _module(), None, "not discrete"),
        (_config(), _env(), _module(stateful=True), None, "state"),
        (_config(), _env(), _module(), "cuda:0", "GPU"),
    ],
)
def test_rllibs_pipelines_stay_where_the_lean_ones_would_differ(
    config, env, module, device, reason
):
    assert reason in why_not_lean(config, env, module, device)


def test_the_module_sees_every_episodes_latest_observation_in_episode_order():
    episodes = []
    for start in (0.0, 0.5):
        episode = SingleAgentEpisode(observation_space=BOX, action_space=FOUR)
        episode.add_env_reset(observation=np.full(3, start, np.float32))
        episode.add_env_step(observation=np.full(3, start + 0.1, np.float32), action=1, reward=0.0)
        episodes.append(episode)
    batch = LatestObservationsToTensor()(rl_module=None, batch={}, episodes=episodes)
    expected = torch.tensor([[0.1] * 3, [0.6] * 3], dtype=torch.float32)
    assert torch.equal(batch[Columns.OBS], expected)


def test_a_categorical_samples_what_rllibs_distribution_samples():
    from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical

    from rl_bk.connectors.runner_pipelines import sample_categorical

    logits = torch.randn(64, 7, generator=torch.Generator().manual_seed(0)) * 3
    torch.manual_seed(1)
    dist = TorchCategorical.from_logits(logits)
    expected = dist.sample()
    expected_logp = dist.logp(expected)
    torch.manual_seed(1)
    actions, logp = sample_categorical(logits)
    assert torch.equal(actions, expected) and actions.dtype == expected.dtype
    assert torch.equal(logp, expected_logp)
    assert len(set(actions.tolist())) > 3  # a draw, not an argmax
