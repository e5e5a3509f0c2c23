"""PTGM's KL reward: ``r'_t = r_t − kl_coeff · KL(π_θ(·|s_t) ‖ π_p(·|s_t))``, once per batch.

Where it sits: a reward term of the learner's
:class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards` piece, after PPO's
artificial-step piece and before GAE, as every reward rewrite in this repo.

Direction: KL(policy ‖ prior), as PTGM's code computes it (``kl_divergence(logits_q=policy,
logits_p=prior)`` in its VPT action head; the paper's text writes the other order). This is
the KL of KL-regularised RL, ``max E[Σ r] − α·KL(π ‖ π_p)``: it is mode-seeking, so the policy
pays for putting mass on goals the prior thinks unlikely in this state, but not for ignoring
some of the goals the prior likes. The reverse, KL(π_p ‖ π), would push the high-level policy
to cover every goal the prior covers, which is the prior's job, not the learner's.

π_θ is the policy that sampled the step (its ``action_dist_inputs``, stored by the env
runner), so the reward is a fixed number per step, as the env's reward is: PTGM computes it
in the rollout, before the update, too. π_p is the frozen goal prior, run here on the batch's
observations in one forward pass. The artificial last step PPO appends is left untouched.
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
    """``−kl_coeff · KL(π_θ ‖ π_p)`` on every real step (see the module), a
    :class:`~rl_bk.connectors.learner.reward_rewrite.RewardTerm` of
    :class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards`.

    Args:
        prior_logits: observations (B, O) float32 tensor → prior logits (B, N): the frozen
            goal prior (:class:`PriorLogits` loads a built PTGM folder's on first use, so
            the models are not pickled with the connector).
        kl_coeff: PTGM's ``kl_reward`` (0.05 in its README command; 0 turns the term off).
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
