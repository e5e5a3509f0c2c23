"""rl-bk's APPO module: its target policy gives RLlib's target logits without running the old
critic network, and rl-bk's APPO configs build it."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.algorithms.appo.torch.default_appo_torch_rl_module import (
    DefaultAPPOTorchRLModule,
)
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.target_network_api import TARGET_NETWORK_ACTION_DIST_INPUTS
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

from rl_bk.algorithms.appo.rl_module import ActorTargetAPPOTorchRLModule

OBS = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
ACTIONS = gym.spaces.Discrete(4)


def _module(cls, vf_share_layers: bool):
    torch.manual_seed(0)
    config = DefaultModelConfig(fcnet_hiddens=[8, 8], vf_share_layers=vf_share_layers)
    module = cls(observation_space=OBS, action_space=ACTIONS, model_config=config)
    module.make_target_networks()
    return module


def _perturb_online_weights(*modules):
    # The target networks are copies taken at build time; moving the online weights shows
    # that forward_target reads the old networks, not the current ones.
    for module in modules:
        with torch.no_grad():
            for p in module.encoder.parameters():
                p.add_(0.5)


@pytest.mark.parametrize("vf_share_layers", [False, True])
def test_target_logits_are_rllibs(vf_share_layers):
    ours = _module(ActorTargetAPPOTorchRLModule, vf_share_layers)
    rllibs = _module(DefaultAPPOTorchRLModule, vf_share_layers)
    rllibs.load_state_dict(ours.state_dict())
    _perturb_online_weights(ours, rllibs)
    batch = {Columns.OBS: torch.from_numpy(np.stack([OBS.sample() for _ in range(5)]))}

    got = ours.forward_target(batch)[TARGET_NETWORK_ACTION_DIST_INPUTS]
    want = rllibs.forward_target(batch)[TARGET_NETWORK_ACTION_DIST_INPUTS]
    assert torch.equal(got, want)
    assert not torch.equal(got, ours.forward_train(batch)[Columns.ACTION_DIST_INPUTS])


def test_target_policy_leaves_the_old_critic_network_out():
    module = _module(ActorTargetAPPOTorchRLModule, vf_share_layers=False)
    calls = []
    module._old_encoder.critic_encoder.register_forward_hook(lambda *_: calls.append(1))
    module._old_encoder.actor_encoder.register_forward_hook(lambda *_: calls.append(0))
    module.forward_target({Columns.OBS: torch.zeros(3, 6)})
    assert calls == [0]


@pytest.mark.parametrize(
    ("task_name", "method"),
    [("babyai-gotolocal-redball-s20", "ppo"), ("nethack-score-appo", "oni-none")],
)
def test_appo_configs_build_rlbks_module(task_name, method):
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.registry import get_method

    task = load_task(task_name).model_copy(update={"algorithm": "appo"})
    config = get_method(method).build(task, 0, {})
    assert config.get_default_rl_module_spec().module_class is ActorTargetAPPOTorchRLModule
