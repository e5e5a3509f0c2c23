"""RND-PPO's replacement for RLlib's ``GeneralAdvantageEstimation`` learner connector piece:
PPO's piece fits one value head to one reward, and RND-PPO has two of each, so this piece runs
in its place (last in the learner pipeline, after ``ComputeIntrinsicRewards``). What it writes
and how it reads the batch: :class:`TwoHeadedGeneralAdvantageEstimation`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override
from ray.rllib.utils.framework import try_import_torch

from rl_bk.methods.rnd.advantages import (
    combine_advantages,
    standardize,
    two_headed_advantages,
)

torch, _ = try_import_torch()

INT_VALUE_TARGETS = "int_value_targets"


class TwoHeadedGeneralAdvantageEstimation(ConnectorV2):
    """Advantages and value targets for a policy with extrinsic and intrinsic value heads.

    - ``Postprocessing.ADVANTAGES``: ``ext_coeff * A_ext + int_coeff * A_int``, standardised
      over the batch's real steps: what PPO's clipped surrogate follows;
    - ``Postprocessing.VALUE_TARGETS``: extrinsic returns, for PPO's own value loss (``vf``);
    - ``INT_VALUE_TARGETS``: intrinsic returns, for the intrinsic head's loss (``int_vf``).

    It reads the batch as RLlib's piece does: each episode chunk occupies ``n + 1``
    consecutive rows, the last being the artificial step ``AddOneTsToEpisodesAndTruncate``
    appended (loss mask False). Both heads' values on that row are the bootstrap values of
    the chunk's final observation. The numbers come from
    :func:`~rl_bk.methods.rnd.advantages.two_headed_advantages` (episodic extrinsic,
    non-episodic intrinsic); the artificial rows get advantage 0 and target = prediction.
    """

    def __init__(
        self,
        input_observation_space=None,
        input_action_space=None,
        *,
        gamma: float,
        int_gamma: float,
        lambda_: float,
        ext_coeff: float,
        int_coeff: float,
        **kwargs: Any,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.gamma, self.int_gamma, self.lambda_ = gamma, int_gamma, lambda_
        self.ext_coeff, self.int_coeff = ext_coeff, int_coeff

    @override(ConnectorV2)
    def __call__(
        self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs
    ):
        if DEFAULT_MODULE_ID not in batch:
            return batch
        policy_batch = batch[DEFAULT_MODULE_ID]
        module = rl_module[DEFAULT_MODULE_ID].unwrapped()
        with torch.no_grad():
            embeddings = module.compute_critic_embeddings(policy_batch)
            ext_values_t = module.compute_values(policy_batch, embeddings=embeddings)
            int_values = module.compute_intrinsic_values(policy_batch, embeddings=embeddings)
        device = ext_values_t.device
        ext_values = ext_values_t.cpu().numpy().astype(np.float64)
        int_values = int_values.cpu().numpy().astype(np.float64)
        ext_rewards = policy_batch[Columns.REWARDS].cpu().numpy().astype(np.float64)
        int_rewards = policy_batch[Columns.INTRINSIC_REWARDS].cpu().numpy().astype(np.float64)
        real = policy_batch[Columns.LOSS_MASK].cpu().numpy().astype(bool)

        advantages = np.zeros_like(ext_values)
        ext_targets, int_targets = ext_values.copy(), int_values.copy()
        start = 0
        for ep in self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False):
            n = len(ep) - 1  # real steps; the last row is the artificial bootstrap step
            steps, rows = slice(start, start + n), slice(start, start + n + 1)
            heads = two_headed_advantages(
                ext_rewards[steps],
                int_rewards[steps],
                ext_values[rows],
                int_values[rows],
                bool(ep.is_terminated),
                gamma=self.gamma,
                int_gamma=self.int_gamma,
                lambda_=self.lambda_,
            )
            advantages[steps] = combine_advantages(
                heads.ext_advantages,
                heads.int_advantages,
                ext_coeff=self.ext_coeff,
                int_coeff=self.int_coeff,
            )
            ext_targets[steps], int_targets[steps] = heads.ext_returns, heads.int_returns
            start += n + 1
        advantages[real] = standardize(advantages[real])

        def tensor(x: np.ndarray):
            return torch.as_tensor(x, dtype=torch.float32, device=device)

        policy_batch[Postprocessing.ADVANTAGES] = tensor(advantages)
        policy_batch[Postprocessing.VALUE_TARGETS] = tensor(ext_targets)
        # The sampled extrinsic values, for CleanRL's value clip (BasePPOTorchLearner).
        policy_batch[Columns.VF_PREDS] = ext_values_t
        policy_batch[INT_VALUE_TARGETS] = tensor(int_targets)
        return batch
