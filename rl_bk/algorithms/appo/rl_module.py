"""APPO's default torch RLModule, whose target policy runs only the actor's half of the old
encoder.

RLlib's ``DefaultAPPORLModule.forward_target`` calls the whole target encoder and keeps its
actor output. With separate actor and critic networks (``vf_share_layers`` False, RLlib's and
BK's default) that is a forward pass of the old critic network on every update whose result
is thrown away. :class:`ActorTargetAPPOTorchRLModule` runs the old actor encoder alone: the
same weights, the same operations on the same inputs, so the same target logits (its unit
test compares them with RLlib's). Shared or stateful encoders keep RLlib's path.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.appo.torch.default_appo_torch_rl_module import (
    DefaultAPPOTorchRLModule,
)
from ray.rllib.core.models.base import ENCODER_OUT, ActorCriticEncoder
from ray.rllib.core.rl_module.apis.target_network_api import TARGET_NETWORK_ACTION_DIST_INPUTS
from ray.rllib.utils.annotations import override


class ActorTargetAPPOTorchRLModule(DefaultAPPOTorchRLModule):
    """RLlib's default APPO module (same networks, state and target-network updates) whose
    ``forward_target`` leaves out the old critic network."""

    @override(DefaultAPPOTorchRLModule)
    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        old_encoder = self._old_encoder
        if not isinstance(old_encoder, ActorCriticEncoder) or old_encoder.config.shared:
            return super().forward_target(batch)
        actor_out = old_encoder.actor_encoder(batch)[ENCODER_OUT]
        return {TARGET_NETWORK_ACTION_DIST_INPUTS: self._old_pi(actor_out)}
