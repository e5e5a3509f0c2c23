"""RND-PPO's learner: PPO's torch learner, less RLlib's one-headed GAE piece (the two-headed
one replaces it), plus the intrinsic head's value loss, in the same form and with the same
coefficients as the extrinsic one, and the RND predictor's own Adam at ``rnd_lr`` (the target
stays random). Details: docs/methods.md#rnd-ppos-pieces.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.connectors.learner import GeneralAdvantageEstimation
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.utils.annotations import override
from ray.rllib.utils.framework import try_import_torch
from ray.rllib.utils.torch_utils import explained_variance

from rl_bk.algorithms.ppo.learner import BasePPOTorchLearner
from rl_bk.methods.rnd.rl_module import RND_MODULE_ID
from rl_bk.methods.rnd.two_headed_gae import INT_VALUE_TARGETS

torch, _ = try_import_torch()

INT_VF_LOSS_KEY = "int_vf_loss"  # the extrinsic head's is PPO's own "vf_loss"
INT_VF_EXPLAINED_VAR_KEY = "int_vf_explained_var"


class RNDPPOTorchLearner(BasePPOTorchLearner):
    """What it changes in :class:`PPOTorchLearner`, and why:

    - **Pipeline.** PPO's ``build()`` appends RLlib's one-headed ``GeneralAdvantageEstimation``;
      RND-PPO's config already put ``ComputeIntrinsicRewards`` and
      ``TwoHeadedGeneralAdvantageEstimation`` at the end of the pipeline, so the one-headed
      piece is removed (else it would recompute, and overwrite, advantages and value targets).
    - **Loss.** PPO's loss (clipped surrogate on the combined advantage, extrinsic value loss
      ``vf_loss``, entropy, KL) plus the intrinsic head's value loss, in the same form and with
      the same ``vf_loss_coeff`` and ``vf_clip_param`` as the extrinsic one. The RND
      predictor's loss comes from the RND module itself (RLlib's ``SelfSupervisedLossAPI``).
    - **Optimisers.** The RND module gets its own Adam over the predictor only (the target
      stays random), at ``rnd_lr`` (default: the policy's ``lr``).
    """

    @override(BasePPOTorchLearner)
    def build(self) -> None:
        super().build()
        missing = {DEFAULT_MODULE_ID, RND_MODULE_ID} - set(self.module.keys())
        if missing:
            raise ValueError(
                f"RND-PPO's learner needs the modules {DEFAULT_MODULE_ID!r} and "
                f"{RND_MODULE_ID!r}; missing {sorted(missing)}. Use "
                "RNDPPOConfig, which adds the RND module to the spec."
            )
        if not hasattr(self.module[DEFAULT_MODULE_ID].unwrapped(), "compute_intrinsic_values"):
            raise ValueError(
                "RND-PPO's policy module needs an intrinsic value head "
                "(compute_intrinsic_values), e.g. TwoHeadedPPOTorchRLModule"
            )
        if self._learner_connector is not None:
            self._learner_connector.remove(GeneralAdvantageEstimation)

    @override(BasePPOTorchLearner)
    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        if module_id != RND_MODULE_ID:
            return super().configure_optimizers_for_module(module_id, config)
        params = list(self.module[module_id].unwrapped().predictor.parameters())
        self.register_optimizer(
            module_id=module_id,
            optimizer=torch.optim.Adam(params),
            params=params,
            lr_or_lr_schedule=config.rnd.rnd_lr if config.rnd.rnd_lr is not None else config.lr,
        )

    @override(BasePPOTorchLearner)
    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ):
        total_loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        module = self.module[module_id].unwrapped()
        embeddings = fwd_out.get(Columns.EMBEDDINGS)
        int_values = module.compute_intrinsic_values(batch, embeddings=embeddings)
        int_targets = batch[INT_VALUE_TARGETS]
        if config.value_loss == "cleanrl":  # CleanRL's RND: half the error, never clipped
            int_vf_loss = 0.5 * (int_values - int_targets) ** 2
        else:
            int_vf_loss = torch.clamp((int_values - int_targets) ** 2, 0, config.vf_clip_param)
        if Columns.LOSS_MASK in batch:
            mask = batch[Columns.LOSS_MASK].bool()
            mean_int_vf_loss = int_vf_loss[mask].sum() / mask.sum().clamp(min=1)
        else:
            mean_int_vf_loss = int_vf_loss.mean()
        self.metrics.log_dict(
            {
                INT_VF_LOSS_KEY: mean_int_vf_loss,
                INT_VF_EXPLAINED_VAR_KEY: explained_variance(int_targets, int_values),
            },
            key=module_id,
            window=1,
        )
        return total_loss + config.vf_loss_coeff * mean_int_vf_loss
