"""RND-PPO's two RLModules: the policy with two value heads
(:class:`TwoHeadedPPOTorchRLModule`, the only part that runs on the env runners) and the
learner-only RND networks (:class:`RandomNetworkDistillation`: a frozen random target, a
predictor trained to match it, and the running statistics of their inputs). Why two heads,
and why the inputs are normalised: docs/methods.md#rnd-ppos-pieces.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.base import CRITIC, ENCODER_OUT
from ray.rllib.core.rl_module.apis import SelfSupervisedLossAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.utils.annotations import override
from ray.rllib.utils.framework import try_import_torch

from rl_bk.methods.rnd.advantages import merge_moments

if TYPE_CHECKING:
    from ray.rllib.core.learner.learner import Learner

torch, nn = try_import_torch()

#: The learner-only RND module's id in the MultiRLModule, beside ``DEFAULT_MODULE_ID``.
RND_MODULE_ID = "_rnd"
#: Columns of the RND module's train batch and forward output.
RND_PREDICTION = "rnd_prediction"
RND_TARGET = "rnd_target"
#: The predictor's loss, logged under ``RND_MODULE_ID``.
RND_PREDICTOR_LOSS_KEY = "rnd_predictor_loss"
#: CleanRL clips normalised observations to this range before the RND nets.
OBS_CLIP = 5.0
OBS_VAR_EPSILON = 1e-8


class TwoHeadedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO module (so the task's ``DefaultModelConfig``: ``fcnet_hiddens``,
    activations, ``vf_share_layers``, still builds it) plus an intrinsic value head,
    ``int_vf``, on the same critic embedding: one head fits the extrinsic return, the other
    the intrinsic one, because the two have different discounts and the intrinsic one ignores
    episode ends."""

    @override(DefaultPPOTorchRLModule)
    def setup(self):
        super().setup()
        # A second head from the same config: same shape as `vf`, its own weights.
        self.int_vf = self.catalog.build_vf_head(framework=self.framework)

    @override(DefaultPPOTorchRLModule)
    def get_non_inference_attributes(self) -> list[str]:
        return [*super().get_non_inference_attributes(), "int_vf"]

    def compute_critic_embeddings(self, batch: dict[str, Any]):
        """The critic encoder's output, which both value heads read (compute once, use twice)."""
        if hasattr(self.encoder, "critic_encoder"):
            return self.encoder.critic_encoder(batch)[ENCODER_OUT]
        return self.encoder(batch)[ENCODER_OUT][CRITIC]

    def compute_intrinsic_values(self, batch: dict[str, Any], embeddings: Any = None):
        """The intrinsic value head's predictions, ``(B,)``; like ``compute_values``."""
        if embeddings is None:
            embeddings = self.compute_critic_embeddings(batch)
        return self.int_vf(embeddings).squeeze(-1)


class RunningMeanStd(nn.Module):
    """Running mean and population variance of everything passed to :meth:`update`.

    Buffers, not parameters: no optimiser touches them, and they are saved and restored
    with the module. The count starts at 1e-4 with mean 0 and var 1, as gym's does, so the
    first batch sets the statistics almost entirely.
    """

    def __init__(self, shape: tuple[int, ...] = ()):
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))

    @torch.no_grad()
    def update(self, values) -> None:
        """Adds a batch: ``values`` has shape ``(B, *shape)`` (a tensor or an array)."""
        x = torch.as_tensor(np.asarray(values) if not torch.is_tensor(values) else values)
        x = x.to(device=self.mean.device, dtype=torch.float64).reshape(-1, *self.mean.shape)
        if x.shape[0] == 0:
            return
        mean, var, count = merge_moments(
            self.mean, self.var, self.count, x.mean(0), x.var(0, unbiased=False), x.shape[0]
        )
        self.mean.copy_(mean)
        self.var.copy_(var)
        self.count.copy_(count)


def _linear(n_in: int, n_out: int) -> nn.Linear:
    """CleanRL's ``layer_init``: orthogonal weights (gain sqrt 2), zero biases."""
    linear = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(linear.weight, np.sqrt(2))
    nn.init.zeros_(linear.bias)
    return linear


def _mlp(sizes: list[int], activation: type[nn.Module]) -> list[nn.Module]:
    layers: list[nn.Module] = []
    for n_in, n_out in itertools.pairwise(sizes):
        layers += [_linear(n_in, n_out), activation()]
    return layers


class RandomNetworkDistillation(TorchRLModule, SelfSupervisedLossAPI):
    """Frozen random target, trained predictor, and the running stats RND needs.

    ``model_config``: ``hiddens`` (trunk sizes of both nets) and ``output_dim`` (the
    embedding both nets map an observation to). As in CleanRL, the predictor has two more
    ``output_dim`` layers than the target, so it has the capacity to match it.
    The predictor loss (:meth:`compute_self_supervised_loss`) uses a random
    ``config.rnd.update_proportion`` of each minibatch: RND's way of keeping the predictor
    from learning too fast, so novelty decays at a useful rate.
    """

    @override(TorchRLModule)
    def setup(self):
        space = self.observation_space
        if space is None or len(getattr(space, "shape", ()) or ()) != 1:
            raise ValueError(
                "RandomNetworkDistillation needs a flat Box observation space (one "
                f"dimension), got {space}; rl-bk's envs have one (env_registry/spec.py)"
            )
        obs_dim = int(space.shape[0])
        hiddens = list(self.model_config.get("hiddens", [256, 256]))
        out = int(self.model_config.get("output_dim", 512))
        trunk = [obs_dim, *hiddens]
        self.target = nn.Sequential(*_mlp(trunk, nn.LeakyReLU), _linear(trunk[-1], out))
        self.predictor = nn.Sequential(
            *_mlp(trunk, nn.LeakyReLU), *_mlp([trunk[-1], out, out], nn.ReLU), _linear(out, out)
        )
        self.target.requires_grad_(False)
        self.obs_rms = RunningMeanStd((obs_dim,))
        self.int_return_rms = RunningMeanStd(())

    def normalize_observations(self, obs):
        """``(obs - mean) / std`` clipped to [-5, 5] (the epsilon keeps features that never
        vary finite)."""
        mean = self.obs_rms.mean.to(obs.dtype)
        std = torch.sqrt(self.obs_rms.var + OBS_VAR_EPSILON).to(obs.dtype)
        return ((obs - mean) / std).clamp(-OBS_CLIP, OBS_CLIP).float()

    def update_observation_stats(self, obs) -> None:
        self.obs_rms.update(obs)

    def update_intrinsic_return_stats(self, filtered_returns: np.ndarray) -> None:
        self.int_return_rms.update(filtered_returns)

    @property
    def intrinsic_return_var(self) -> float:
        return float(self.int_return_rms.var)

    @torch.no_grad()
    def novelty(self, obs):
        """Per-observation prediction error, ``0.5 * ||target - predictor||^2`` (CleanRL's
        intrinsic reward before scaling), shape ``(B,)``."""
        x = self.normalize_observations(obs)
        return 0.5 * (self.target(x) - self.predictor(x)).pow(2).sum(-1)

    @override(TorchRLModule)
    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        x = self.normalize_observations(batch[Columns.OBS])
        with torch.no_grad():
            target = self.target(x)
        return {RND_PREDICTION: self.predictor(x), RND_TARGET: target}

    @override(TorchRLModule)
    def _forward(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        raise NotImplementedError(
            "RandomNetworkDistillation is learner-only: the learner calls forward_train; "
            "intrinsic rewards come from novelty() in the learner connector"
        )

    @override(SelfSupervisedLossAPI)
    def compute_self_supervised_loss(
        self,
        *,
        learner: Learner,
        module_id: str,
        config: Any,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
        **kwargs: Any,
    ):
        """Predictor MSE on a random ``update_proportion`` of the minibatch's real steps."""
        per_row = (fwd_out[RND_PREDICTION] - fwd_out[RND_TARGET]).pow(2).mean(-1)
        keep = torch.rand(per_row.shape, device=per_row.device) < config.rnd.update_proportion
        if Columns.LOSS_MASK in batch:
            keep = keep & batch[Columns.LOSS_MASK].bool()
        loss = (per_row * keep).sum() / keep.sum().clamp(min=1)
        learner.metrics.log_value((module_id, RND_PREDICTOR_LOSS_KEY), loss.detach(), window=1)
        return loss
