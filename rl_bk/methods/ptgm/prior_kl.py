"""PTGM's KL reward, ``r'_t = r_t − kl_coeff · KL(π_θ(·|s_t) ‖ π_p(·|s_t))``, once per batch: a
reward term of the learner's :class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards`
piece, before GAE. KL(policy ‖ prior), as PTGM's code computes it (the paper's text writes the
other order), with π_θ the policy that sampled the step. Why that direction:
docs/methods.md#ptgms-pre-training-and-its-kl.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from rl_bk.connectors.learner.episode_chunks import EpisodeChunk
from rl_bk.methods.ptgm.high_level_env import _models

PRIOR_KL_MEAN = "ptgm/prior_kl_mean"
KL_REWARD_MEAN = "ptgm/kl_reward_mean"
AGREEMENT = "ptgm/prior_agreement"  # how often the policy's likeliest goal is the prior's


def categorical_kl(policy_logits: torch.Tensor, prior_logits: torch.Tensor) -> torch.Tensor:
    """KL(Cat(policy_logits) ‖ Cat(prior_logits)) per row, in nats."""
    log_p = torch.log_softmax(policy_logits, dim=-1)
    log_q = torch.log_softmax(prior_logits, dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(dim=-1)


class PriorKLPenalty:
    """``−kl_coeff · KL(π_θ ‖ π_p)`` on every real step, a
    :class:`~rl_bk.connectors.learner.reward_rewrite.RewardTerm` of
    :class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards`.

    Args:
        prior_logits: observations (B, O) float32 tensor → prior logits (B, N): the frozen
            goal prior (:class:`PriorLogits` loads a built PTGM folder's on first use, so
            the models are not pickled with the connector).
        kl_coeff: PTGM's ``kl_reward`` (0.05 in its README command; 0 turns the term off).

    π_θ is the policy that sampled the step (its ``action_dist_inputs``, stored by the env
    runner), so the reward is a fixed number per step, as the env's reward is: PTGM computes it
    in the rollout, before the update, too. π_p is the frozen goal prior, run on the batch's
    observations in one forward pass. The artificial last step PPO appends is left untouched.
    """

    def __init__(self, *, prior_logits: Any, kl_coeff: float):
        self.prior_logits, self.kl_coeff = prior_logits, float(kl_coeff)
        self._metrics: dict[str, float] = {}

    def __call__(self, found: Sequence[EpisodeChunk], rl_module: Any = None) -> list[np.ndarray]:
        live = [c for c in found if c.steps]
        obs = np.concatenate([c.observations[: c.steps] for c in live])
        logits = np.concatenate([c.action_dist_inputs for c in live])
        with torch.no_grad():
            policy = torch.as_tensor(logits)
            prior = self.prior_logits(torch.as_tensor(obs))
            kl = categorical_kl(policy, prior).numpy().astype(np.float64)
            agree = (policy.argmax(-1) == prior.argmax(-1)).float().mean().item()
        self._metrics = {
            PRIOR_KL_MEAN: float(kl.mean()),
            KL_REWARD_MEAN: -self.kl_coeff * float(kl.mean()),
            AGREEMENT: agree,
        }
        added, start = [], 0
        for c in found:
            added.append(-self.kl_coeff * kl[start : start + c.steps])
            start += c.steps
        return added

    def batch_metrics(self) -> dict[str, float]:
        return self._metrics


class PriorLogits:
    """The goal prior of a built PTGM folder, loaded where it is first called (the learner)."""

    def __init__(self, folder: str):
        self.folder = folder

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        return _models(self.folder).prior_logits(obs)
