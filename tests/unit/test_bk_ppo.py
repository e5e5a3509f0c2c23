"""BK's PPO (``rl_bk.algorithms.ppo``): CleanRL's value clip and minibatch advantage
normalisation checked by hand on tiny batches, the whole loss against the formula, Adam's
epsilon, and the conv network's shapes and view decoding."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.evaluation.postprocessing import Postprocessing

from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.algorithms.ppo.grid_conv_module import GridConvPPOModule, grid_from_observation
from rl_bk.algorithms.ppo.learner import cleanrl_value_loss, minibatch_normalized

OBS = gym.spaces.Box(0.0, 25.5, (147 + 4,), np.float32)
ACTIONS = gym.spaces.Discrete(7)


def test_value_clip_by_hand():
    # Row 0: the new value 1.0 moved 0.5 from the old 0.5; clipped it moves 0.1, to 0.6.
    # unclipped (1 - 2)^2 = 1, clipped (0.6 - 2)^2 = 1.96: the larger, halved: 0.98.
    # Row 1: new 0.0, old 0.5, target 0: unclipped 0, clipped (0.4 - 0)^2 = 0.16 -> 0.08.
    # Row 2: a change inside the clip: both errors are (0.55 - 1)^2 = 0.2025 -> 0.10125.
    loss = cleanrl_value_loss(
        torch.tensor([1.0, 0.0, 0.55]),
        torch.tensor([0.5, 0.5, 0.5]),
        torch.tensor([2.0, 0.0, 1.0]),
        clip=0.1,
    )
    assert loss.tolist() == pytest.approx([0.98, 0.08, 0.10125])


def test_minibatch_normalisation_uses_the_real_rows_only():
    adv = torch.tensor([1.0, 2.0, 3.0, 100.0])
    mask = torch.tensor([True, True, True, False])  # the last row is PPO's artificial step
    out = minibatch_normalized(adv, mask)
    # mean 2, unbiased std 1 over the three real rows
    assert out[:3].tolist() == pytest.approx([-1.0, 0.0, 1.0], abs=1e-6)
    assert minibatch_normalized(adv[:3]).tolist() == pytest.approx([-1.0, 0.0, 1.0], abs=1e-6)


def bk_config(**training):
    return (
        BasePPOConfig()
        .environment(observation_space=OBS, action_space=ACTIONS)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=GridConvPPOModule))
        .training(clip_param=0.1, vf_loss_coeff=0.5, entropy_coeff=0.01, **training)
    )


def tiny_batch(module, n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 6, (n, 147), generator=g).float() / 10.0
    obs = torch.cat([obs, torch.zeros(n, 4)], dim=1)
    with torch.no_grad():
        logits = module.forward_train({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
        old_values = module.compute_values({Columns.OBS: obs})
    actions = torch.randint(0, 7, (n,), generator=g)
    # The sampled log-probs are a little off the current ones, so ratios differ from 1.
    logp = torch.log_softmax(logits, -1).gather(1, actions[:, None]).squeeze(1)
    logp = logp + torch.linspace(-0.3, 0.3, n)
    return {
        Columns.OBS: obs,
        Columns.ACTIONS: actions,
        Columns.ACTION_LOGP: logp,
        Columns.ACTION_DIST_INPUTS: logits,
        Columns.VF_PREDS: old_values + 0.05,
        Columns.LOSS_MASK: torch.tensor([True] * (n - 1) + [False]),
        Postprocessing.ADVANTAGES: torch.tensor([1.0, -2.0, 0.5, 3.0, -1.0, 9.0][:n]),
        Postprocessing.VALUE_TARGETS: torch.tensor([0.3, -0.2, 1.5, 0.0, 0.1, 5.0][:n]),
    }


def loss_on_tiny_batch(learner, edit_batch=lambda batch: None):
    """(the learner's loss on a tiny batch, its module, the batch, the forward output);
    ``edit_batch`` changes the batch in place before the loss is taken."""
    module = learner.module[DEFAULT_MODULE_ID].unwrapped()
    batch = tiny_batch(module)
    edit_batch(batch)
    fwd = module.forward_train(batch)
    loss = learner.compute_loss_for_module(
        module_id=DEFAULT_MODULE_ID, config=learner.config, batch=batch, fwd_out=fwd
    )
    return loss, module, batch, fwd


def policy_terms_by_hand(batch, fwd):
    """BK's ``train_rs.py`` on the real rows: the clipped surrogate (clip 0.1) on advantages
    normalised over the minibatch, and the mean entropy."""
    real = batch[Columns.LOSS_MASK]
    logits = fwd[Columns.ACTION_DIST_INPUTS][real]
    logp_new = torch.log_softmax(logits, -1).gather(1, batch[Columns.ACTIONS][real, None])[:, 0]
    ratio = torch.exp(logp_new - batch[Columns.ACTION_LOGP][real])
    a = batch[Postprocessing.ADVANTAGES][real]
    a = (a - a.mean()) / (a.std() + 1e-8)
    pg = torch.max(-a * ratio, -a * torch.clamp(ratio, 0.9, 1.1)).mean()
    entropy = torch.distributions.Categorical(logits=logits).entropy().mean()
    return pg, entropy


def test_cleanrl_loss_is_bk_formula():
    learner = bk_config(value_loss="cleanrl", advantage_normalization="minibatch").build_learner()
    loss, module, batch, fwd = loss_on_tiny_batch(learner)

    # BK's train_rs.py, on the five real rows
    pg, entropy = policy_terms_by_hand(batch, fwd)
    real = batch[Columns.LOSS_MASK]
    v = module.compute_values(batch, embeddings=fwd[Columns.EMBEDDINGS])[real]
    v_old, ret = batch[Columns.VF_PREDS][real], batch[Postprocessing.VALUE_TARGETS][real]
    v_clipped = v_old + torch.clamp(v - v_old, -0.1, 0.1)
    v_loss = 0.5 * torch.max((v - ret) ** 2, (v_clipped - ret) ** 2).mean()
    expected = pg - 0.01 * entropy + 0.5 * v_loss
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_rllib_loss_is_unchanged_by_default():
    """With RLlib's options the loss is RLlib's own (the squared error, no 0.5, no clip)."""
    loss, module, batch, fwd = loss_on_tiny_batch(bk_config().build_learner())
    real = batch[Columns.LOSS_MASK]
    v = module.compute_values(batch, embeddings=fwd[Columns.EMBEDDINGS])[real]
    ret = batch[Postprocessing.VALUE_TARGETS][real]
    cleanrl = bk_config(value_loss="cleanrl").build_learner()
    cleanrl.module[DEFAULT_MODULE_ID].unwrapped().load_state_dict(module.state_dict())
    other = cleanrl.compute_loss_for_module(
        module_id=DEFAULT_MODULE_ID, config=cleanrl.config, batch=batch, fwd_out=fwd
    )
    v_old = batch[Columns.VF_PREDS][real]
    v_clipped = v_old + torch.clamp(v - v_old, -0.1, 0.1)
    rllib_v = ((v - ret) ** 2).mean()
    cleanrl_v = 0.5 * torch.max((v - ret) ** 2, (v_clipped - ret) ** 2).mean()
    # Same policy and entropy terms: the two losses differ by exactly the value terms.
    assert (loss - other).item() == pytest.approx(0.5 * (rllib_v - cleanrl_v).item(), rel=1e-4)


def test_rllib_value_loss_with_minibatch_advantages_is_rllib_formula_on_normalised_advantages():
    """RLlib's value loss (the squared error, clipped at ``vf_clip_param``) with CleanRL's
    per-minibatch advantage normalisation: rl-bk's loss, not RLlib's, which has no such
    option. A value target far off makes the clip act on one row."""
    learner = bk_config(advantage_normalization="minibatch", vf_clip_param=3.0).build_learner()

    def far_target(batch):
        batch[Postprocessing.VALUE_TARGETS][0] = 4.0

    loss, module, batch, fwd = loss_on_tiny_batch(learner, far_target)
    pg, entropy = policy_terms_by_hand(batch, fwd)
    real = batch[Columns.LOSS_MASK]
    v = module.compute_values(batch, embeddings=fwd[Columns.EMBEDDINGS])[real]
    squared = (v - batch[Postprocessing.VALUE_TARGETS][real]) ** 2
    assert squared[0] > 3.0 and (squared[1:] < 3.0).all()  # the clip acts on row 0 only
    v_loss = torch.clamp(squared, 0.0, 3.0).mean()
    assert loss.item() == pytest.approx((pg + 0.5 * v_loss - 0.01 * entropy).item(), rel=1e-5)


def test_adam_epsilon_reaches_the_optimiser():
    learner = bk_config(adam_epsilon=1e-5).build_learner()
    (optimizer,) = [o for _, o in learner.get_optimizers_for_module(DEFAULT_MODULE_ID)]
    assert optimizer.param_groups[0]["eps"] == 1e-5


def test_cleanrl_value_loss_refuses_a_batch_without_sampled_values():
    learner = bk_config(value_loss="cleanrl").build_learner()
    module = learner.module[DEFAULT_MODULE_ID].unwrapped()
    batch = tiny_batch(module)
    del batch[Columns.VF_PREDS]
    with pytest.raises(ValueError, match="VF_PREDS"):
        learner.compute_loss_for_module(
            module_id=DEFAULT_MODULE_ID,
            config=learner.config,
            batch=batch,
            fwd_out=module.forward_train(batch),
        )


def test_conv_network_shapes_and_shared_torso():
    module = GridConvPPOModule(observation_space=OBS, action_space=ACTIONS, model_config={})
    out = module.forward_train({Columns.OBS: torch.zeros(5, OBS.shape[0])})
    assert out[Columns.ACTION_DIST_INPUTS].shape == (5, 7)
    assert out[Columns.EMBEDDINGS].shape == (5, 512)
    assert module.compute_values({Columns.OBS: torch.zeros(5, OBS.shape[0])}).shape == (5,)
    intrinsic = module.compute_intrinsic_values({Columns.OBS: torch.zeros(3, OBS.shape[0])})
    assert intrinsic.shape == (3,)
    convs = [m for m in module.torso if isinstance(m, torch.nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size) for c in convs] == [
        (3, 32, (3, 3)),
        (32, 64, (3, 3)),
        (64, 64, (3, 3)),
    ]
    assert module.torso[-1].in_features == 64 * 7 * 7 and module.torso[-1].out_features == 512
    # One torso: policy and values share it (BK's IntrinsicAgent), so a value loss moves it.
    module.compute_values({Columns.OBS: torch.rand(4, OBS.shape[0])}).sum().backward()
    assert module.torso[0].weight.grad is not None and module.torso[0].weight.grad.abs().sum() > 0


def test_view_is_decoded_as_bk_scales_it():
    # minigrid's view (x, y, channel) with object 5 (key), colour 4 (yellow), state 2 at x=1, y=3
    view = np.zeros((7, 7, 3), np.float32)
    view[1, 3] = [5, 4, 2]
    obs = torch.as_tensor(np.concatenate([view.reshape(-1) / 10.0, np.ones(4, np.float32)]))
    grid = grid_from_observation(obs[None])
    assert grid.shape == (1, 3, 7, 7)
    # BK: image.transpose(2, 0, 1), then channels divided by 10, 5 and 3
    assert grid[0, :, 1, 3].tolist() == pytest.approx([0.5, 0.8, 2 / 3])
    assert math.isclose(float(grid.sum()), 0.5 + 0.8 + 2 / 3, rel_tol=1e-6)


def test_conv_network_refuses_an_observation_without_the_view():
    with pytest.raises(ValueError, match="7x7x3 view"):
        GridConvPPOModule(
            observation_space=gym.spaces.Box(0, 1, (10,), np.float32),
            action_space=ACTIONS,
            model_config={},
        )


def episode(truncated=False, terminated=False):
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    return SingleAgentEpisode(
        observations=[0, 1, 2],
        actions=[0, 1],
        rewards=[0.0, 0.0],
        infos=[{}, {}, {}],
        truncated=truncated,
        terminated=terminated,
        len_lookback_buffer=0,
    )


def test_time_limit_ends_the_episode_for_the_learner_only_when_the_env_cut_it():
    from rl_bk.connectors.learner.time_limits import TimeLimitAsTermination

    cut_by_limit, mid_chunk, reached_goal = (
        episode(truncated=True),
        episode(),
        episode(terminated=True),
    )
    TimeLimitAsTermination()(
        rl_module=None, batch={}, episodes=[cut_by_limit, mid_chunk, reached_goal]
    )
    assert cut_by_limit.is_terminated and not cut_by_limit.is_truncated
    assert not mid_chunk.is_done  # a chunk boundary keeps its bootstrap
    assert reached_goal.is_terminated and not reached_goal.is_truncated


def test_bk_learner_pipeline_has_its_pieces_in_order():
    from ray.rllib.connectors.learner import (
        AddOneTsToEpisodesAndTruncate,
        GeneralAdvantageEstimation,
    )

    from rl_bk.algorithms.ppo.learner import KeepValuePredictions
    from rl_bk.connectors.learner.time_limits import TimeLimitAsTermination

    learner = bk_config(value_loss="cleanrl", bootstrap_time_limits=False).build_learner()
    names = [type(p) for p in learner._learner_connector.connectors]
    assert names.index(TimeLimitAsTermination) < names.index(AddOneTsToEpisodesAndTruncate)
    assert names.index(KeepValuePredictions) == names.index(GeneralAdvantageEstimation) - 1
    plain = [type(p) for p in bk_config().build_learner()._learner_connector.connectors]
    assert TimeLimitAsTermination not in plain and KeepValuePredictions not in plain
