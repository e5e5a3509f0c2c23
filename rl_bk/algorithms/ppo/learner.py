"""PPO's loss with the options of :class:`~rl_bk.algorithms.ppo.config.BasePPOConfig`: with
RLlib's options it is RLlib's own, otherwise CleanRL's, computed per minibatch as BK's
``train_rs.py`` computes it (mansicer/background-knowledge-rl); :class:`BasePPOTorchLearner`
gives the formula.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.ppo.ppo import (
    LEARNER_RESULTS_KL_KEY,
    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,
    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY,
)
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.connectors.learner import (
    AddOneTsToEpisodesAndTruncate,
    GeneralAdvantageEstimation,
)
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override
from ray.rllib.utils.framework import try_import_torch
from ray.rllib.utils.torch_utils import explained_variance

from rl_bk.connectors.learner.shuffled_rows import ShuffleTrainBatch
from rl_bk.connectors.learner.time_limits import TimeLimitAsTermination

torch, nn = try_import_torch()

#: CleanRL's epsilon in the minibatch advantage normalisation.
ADVANTAGE_STD_EPSILON = 1e-8


class KeepValuePredictions(ConnectorV2):
    """Puts each module's value predictions of the train batch in ``Columns.VF_PREDS``,
    before the update changes the critic: CleanRL's value clip measures the change from them.
    A module whose batch already has them (RND's two-headed GAE writes them) is skipped."""

    @override(ConnectorV2)
    def __call__(
        self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs
    ):
        for module_id, module_batch in batch.items():
            if Columns.VF_PREDS in module_batch or module_id not in rl_module.keys():
                continue
            module = rl_module[module_id].unwrapped()
            if not isinstance(module, ValueFunctionAPI):
                continue
            with torch.no_grad():
                module_batch[Columns.VF_PREDS] = module.compute_values(module_batch)
        return batch


def minibatch_normalized(advantages, mask=None):
    """``(A - mean) / (std + 1e-8)`` over the minibatch's real rows (torch's unbiased std,
    as CleanRL); padded rows keep their values, which the loss masks out anyway."""
    real = advantages if mask is None else advantages[mask]
    return (advantages - real.mean()) / (real.std() + ADVANTAGE_STD_EPSILON)


def cleanrl_value_loss(values, old_values, targets, clip: float):
    """Per-row ``0.5 * max((V - R)^2, (V_old + clip(V - V_old, -clip, clip) - R)^2)``."""
    unclipped = (values - targets) ** 2
    clipped = (old_values + torch.clamp(values - old_values, -clip, clip) - targets) ** 2
    return 0.5 * torch.max(unclipped, clipped)


class BasePPOTorchLearner(PPOTorchLearner):
    """RLlib's PPO loss with RLlib's options (``value_loss="rllib"``,
    ``advantage_normalization="batch"``); otherwise CleanRL's::

        A     = (A - mean(A)) / (std(A) + 1e-8)                  # "minibatch": per minibatch
        L_pi  = mean(max(-A r, -A clip(r, 1 - eps, 1 + eps)))
        L_v   = 0.5 mean(max((V - R)^2, (V_old + clip(V - V_old, -eps, eps) - R)^2))  # "cleanrl"
        loss  = L_pi + vf_loss_coeff L_v - entropy_coeff mean(H)

    ``V_old`` is the value the critic gave the sample before the update; RLlib's GAE connector
    drops it after use, so :class:`KeepValuePredictions` keeps it in the batch (one more critic
    pass per train batch). The 0.5 is CleanRL's: with ``vf_loss_coeff`` 0.5 the squared
    error's weight is 0.25, half of RLlib's.
    """

    @override(PPOTorchLearner)
    def build(self) -> None:
        super().build()
        pipeline = self._learner_connector
        if pipeline is None:
            return
        if self.config.value_loss == "cleanrl":
            pipeline.insert_before(GeneralAdvantageEstimation, KeepValuePredictions())
        if not self.config.bootstrap_time_limits:
            pipeline.insert_before(AddOneTsToEpisodesAndTruncate, TimeLimitAsTermination())
        if self.config.shuffle_first_epoch:
            pipeline.append(ShuffleTrainBatch(seed=self.config.seed))

    @override(PPOTorchLearner)
    def update(
        self,
        *args: Any,
        num_total_minibatches: int = 0,
        num_epochs: int = 1,
        minibatch_size: int | None = None,
        **kwargs: Any,
    ):
        # RLlib counts epochs over the batch's rows, its artificial steps included: one more
        # minibatch than CleanRL's loop over the env steps on BK's batch (17, not 16).
        if self.config.minibatches_from_env_steps and minibatch_size and not num_total_minibatches:
            per_epoch = max(1, self.config.train_batch_size_per_learner // minibatch_size)
            num_total_minibatches = num_epochs * per_epoch
        return super().update(
            *args,
            num_total_minibatches=num_total_minibatches,
            num_epochs=num_epochs,
            minibatch_size=minibatch_size,
            **kwargs,
        )

    @override(PPOTorchLearner)
    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        params = self.get_parameters(self._module[module_id])
        self.register_optimizer(
            module_id=module_id,
            optimizer=torch.optim.Adam(params, eps=config.adam_epsilon),
            params=params,
            lr_or_lr_schedule=config.lr,
        )

    @override(PPOTorchLearner)
    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ):
        if config.value_loss == "rllib" and config.advantage_normalization == "batch":
            return super().compute_loss_for_module(
                module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
            )
        return self._cleanrl_loss(module_id, config, batch, fwd_out)

    def _cleanrl_loss(
        self, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ):
        module = self.module[module_id].unwrapped()
        mask = batch[Columns.LOSS_MASK].bool() if Columns.LOSS_MASK in batch else None

        def mean(x):
            return x[mask].mean() if mask is not None else x.mean()

        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        logp_ratio = torch.exp(dist.logp(batch[Columns.ACTIONS]) - batch[Columns.ACTION_LOGP])
        advantages = batch[Postprocessing.ADVANTAGES]
        if config.advantage_normalization == "minibatch":
            advantages = minibatch_normalized(advantages, mask)
        surrogate = torch.min(
            advantages * logp_ratio,
            advantages * torch.clamp(logp_ratio, 1 - config.clip_param, 1 + config.clip_param),
        )
        entropy = dist.entropy()

        values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        targets = batch[Postprocessing.VALUE_TARGETS]
        squared_error = (values - targets) ** 2
        if config.value_loss == "cleanrl":
            if Columns.VF_PREDS not in batch:
                raise ValueError(
                    "value_loss='cleanrl' needs the sampled values (Columns.VF_PREDS) in the "
                    "train batch; BasePPOTorchLearner.build adds KeepValuePredictions before "
                    "GAE: a learner that replaces GAE must write them itself"
                )
            vf_loss = cleanrl_value_loss(
                values, batch[Columns.VF_PREDS], targets, config.clip_param
            )
        else:
            vf_loss = torch.clamp(squared_error, 0, config.vf_clip_param)

        entropy_coeff = self.entropy_coeff_schedulers_per_module[module_id].get_current_value()
        total_loss = mean(-surrogate + config.vf_loss_coeff * vf_loss - entropy_coeff * entropy)
        if config.use_kl_loss:
            prev = module.get_exploration_action_dist_cls().from_logits(
                batch[Columns.ACTION_DIST_INPUTS]
            )
            mean_kl = mean(prev.kl(dist))
            total_loss = total_loss + self.curr_kl_coeffs_per_module[module_id] * mean_kl
        else:
            mean_kl = torch.tensor(0.0, device=total_loss.device)

        self.metrics.log_dict(
            {
                POLICY_LOSS_KEY: -mean(surrogate),
                VF_LOSS_KEY: mean(vf_loss),
                LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY: mean(squared_error),
                LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY: explained_variance(targets, values),
                ENTROPY_KEY: mean(entropy),
                LEARNER_RESULTS_KL_KEY: mean_kl,
            },
            key=module_id,
            window=1,
        )
        return total_loss
