"""The intrinsic reward of every step of a train batch, in one learner connector piece
(:class:`ComputeIntrinsicRewards`), on the learner, once per train batch, after RLlib's
``NumpyToTensor`` and before the two-headed GAE that reads its column: the RND predictor's
error on the observation each step led to, scaled by the running std of its discounted sum.
The env runners never compute it. Details: docs/methods.md#rnd-ppos-pieces.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.utils.annotations import override
from ray.rllib.utils.framework import try_import_torch

from rl_bk.connectors.learner.rllib_internals import episode_id_of
from rl_bk.methods.rnd.advantages import scale_by_return_std
from rl_bk.methods.rnd.rl_module import RND_MODULE_ID
from rl_bk.running_stats import RewardForwardFilter

torch, _ = try_import_torch()

INTRINSIC_REWARD_MEAN_KEY = "intrinsic_reward_mean"  # after scaling: what GAE sees
INTRINSIC_REWARD_RAW_MEAN_KEY = "intrinsic_reward_raw_mean"  # the predictor's error
INTRINSIC_RETURN_STD_KEY = "intrinsic_return_std"  # the scale divided by


class ComputeIntrinsicRewards(ConnectorV2):
    """Adds ``Columns.INTRINSIC_REWARDS`` (scaled RND novelty) to the policy's train batch.

    Per train batch:

    1. updates the RND module's observation statistics with the batch's real observations
       (CleanRL updates them once per rollout too; here before computing rewards, so the
       rewards and the predictor's training see the same normalisation);
    2. novelty of every observation (the RND predictor's error, no gradient);
    3. the intrinsic reward of step ``t`` is the novelty of the observation it led to,
       ``s_{t+1}``. PPO's ``AddOneTsToEpisodesAndTruncate`` appended one artificial row per
       chunk that holds the chunk's last observation, so ``s_{t+1}`` is always the next row of
       the same chunk; the artificial row itself gets 0 (it is masked out of every loss);
    4. scales the rewards by the running std of their discounted sum
       (:class:`~rl_bk.running_stats.RewardForwardFilter` with ``int_gamma``; the variance is
       kept in the RND module, so it is checkpointed with it);
    5. writes them to the policy's batch as ``Columns.INTRINSIC_REWARDS``, and gives the RND
       module its own batch (observations and loss mask) for the predictor's loss.
    """

    def __init__(
        self,
        input_observation_space=None,
        input_action_space=None,
        *,
        int_gamma: float,
        **kwargs: Any,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.forward_filter = RewardForwardFilter(int_gamma)

    @override(ConnectorV2)
    def __call__(
        self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs
    ):
        if DEFAULT_MODULE_ID not in batch:
            return batch
        policy_batch = batch[DEFAULT_MODULE_ID]
        if Columns.LOSS_MASK not in policy_batch:
            raise ValueError(
                "ComputeIntrinsicRewards needs PPO's AddOneTsToEpisodesAndTruncate (the "
                "artificial last step holds each chunk's final observation); is the learner "
                "RND-PPO's, with add_default_connectors_to_learner_pipeline=True?"
            )
        rnd = rl_module[RND_MODULE_ID].unwrapped()
        obs, real = policy_batch[Columns.OBS], policy_batch[Columns.LOSS_MASK].bool()
        chunks = list(self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False))
        lengths = [len(ep) for ep in chunks]
        if sum(lengths) != obs.shape[0]:
            raise ValueError(
                f"the batch has {obs.shape[0]} rows but its chunks {sum(lengths)}: RND-PPO "
                "does not support recurrent (zero-padded) modules"
            )

        rnd.update_observation_stats(obs[real])
        novelty = rnd.novelty(obs).cpu().numpy().astype(np.float64)
        raw = np.zeros_like(novelty)
        streams, start = [], 0
        for ep, rows in zip(chunks, lengths):
            # Step t's reward is the novelty of s_{t+1}: the next row of the same chunk.
            raw[start : start + rows - 1] = novelty[start + 1 : start + rows]
            streams.append((episode_id_of(ep, renamed=True), raw[start : start + rows - 1]))
            start += rows
        rnd.update_intrinsic_return_stats(np.concatenate(self.forward_filter.update(streams)))
        scaled = scale_by_return_std(raw, rnd.intrinsic_return_var)

        policy_batch[Columns.INTRINSIC_REWARDS] = torch.as_tensor(
            scaled, dtype=torch.float32, device=obs.device
        )
        batch[RND_MODULE_ID] = {Columns.OBS: obs, Columns.LOSS_MASK: real}
        if metrics is not None:
            mask = real.cpu().numpy()
            metrics.log_dict(
                {
                    INTRINSIC_REWARD_RAW_MEAN_KEY: float(raw[mask].mean()),
                    INTRINSIC_REWARD_MEAN_KEY: float(scaled[mask].mean()),
                    INTRINSIC_RETURN_STD_KEY: float(np.sqrt(rnd.intrinsic_return_var)),
                },
                key=DEFAULT_MODULE_ID,
                window=1,
            )
        return batch
