"""BK's policy network over BabyAI's 7x7x3 view, as an RLlib RLModule: BK's ``IntrinsicAgent``
(mansicer/background-knowledge-rl, ``models/networks.py``), which its ``train_rs.py`` trains
for every method. :class:`GridConvPPOModule` gives its layers; :class:`GridConvAPPOModule` is
the same network with the target copy APPO's loss needs.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.utils import make_target_network
from ray.rllib.core.rl_module.apis import (
    TARGET_NETWORK_ACTION_DIST_INPUTS,
    InferenceOnlyAPI,
    TargetNetworkAPI,
    ValueFunctionAPI,
)
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.utils.annotations import override
from ray.rllib.utils.framework import try_import_torch

torch, nn = try_import_torch()

VIEW = 7
CHANNELS = 3
VIEW_SIZE = VIEW * VIEW * CHANNELS
#: rl-bk's BabyAI observation divides every channel by this ...
OBS_SCALE = 10.0
#: ... BK's network divides each channel by its own range (object, colour, state).
CHANNEL_SCALES = (10.0, 5.0, 3.0)
HIDDEN = 512


def _orthogonal(layer: nn.Linear, gain: float) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def grid_from_observation(obs):
    """``(B, 3, 7, 7)`` as BK's ``ImageObsWrapper`` gives it, from rl-bk's flat observation
    ``(B, 147 + mission)``: the view in minigrid's ``(x, y, channel)`` order, divided by 10."""
    view = obs[..., :VIEW_SIZE].reshape(-1, VIEW, VIEW, CHANNELS) * OBS_SCALE
    scales = view.new_tensor(CHANNEL_SCALES)
    return (view / scales).permute(0, 3, 1, 2)


class GridConvPPOModule(TorchRLModule, ValueFunctionAPI, InferenceOnlyAPI):
    """BK's network. ``model_config``: ``hidden`` (512).

    - input: the view as 3 channels (object, colour, state) of 7x7, each divided by its range
      (10, 5, 3: ``babyai_envs/wrappers.py``'s ``ImageObsWrapper``); BK's agent never sees the
      mission;
    - torso, shared by every head: three 3x3 convolutions (32, 64, 64 channels, padding 1,
      ReLU), flattened, a linear layer to 512 (no activation after it); torch's default
      initialisation;
    - policy: 512 -> ReLU(512) -> actions (orthogonal, gain 0.01 both);
    - values: ``h + ReLU(W h)`` (orthogonal gain 0.1) read by an extrinsic and an intrinsic
      head (orthogonal gain 0.01). PPO trains the extrinsic one; RND-PPO both.

    rl-bk's BabyAI observation is the flat view divided by 10, then the mission's code
    (:mod:`env_registry.babyai.env`); :func:`grid_from_observation` takes the view back out.
    """

    @override(TorchRLModule)
    def setup(self):
        shape = getattr(self.observation_space, "shape", None)
        if shape is None or len(shape) != 1 or shape[0] < VIEW_SIZE:
            raise ValueError(
                "GridConvPPOModule reads BabyAI's 7x7x3 view from a flat observation of at "
                f"least {VIEW_SIZE} values (rl-bk's BabyAI-Text envs); got {self.observation_space}"
                ". Use model: {network: mlp} for other environments."
            )
        hidden = int(self.model_config.get("hidden", HIDDEN))
        self.torso = nn.Sequential(
            nn.Conv2d(CHANNELS, 32, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(64 * VIEW * VIEW, hidden),
        )
        self.pi = nn.Sequential(
            _orthogonal(nn.Linear(hidden, hidden), 0.01),
            nn.ReLU(),
            _orthogonal(nn.Linear(hidden, int(self.action_space.n)), 0.01),
        )
        self.value_features = nn.Sequential(_orthogonal(nn.Linear(hidden, hidden), 0.1), nn.ReLU())
        self.vf = _orthogonal(nn.Linear(hidden, 1), 0.01)
        self.int_vf = _orthogonal(nn.Linear(hidden, 1), 0.01)

    @override(InferenceOnlyAPI)
    def get_non_inference_attributes(self) -> list[str]:
        return ["value_features", "vf", "int_vf"]

    def _torso(self, batch: dict[str, Any]):
        return self.torso(grid_from_observation(batch[Columns.OBS]))

    def _critic_embeddings(self, hidden):
        return hidden + self.value_features(hidden)

    @override(TorchRLModule)
    def _forward(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self.pi(self._torso(batch))}

    @override(TorchRLModule)
    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        hidden = self._torso(batch)
        return {
            Columns.ACTION_DIST_INPUTS: self.pi(hidden),
            Columns.EMBEDDINGS: self._critic_embeddings(hidden),
        }

    def compute_critic_embeddings(self, batch: dict[str, Any]):
        """What both value heads read: ``h + ReLU(W h)`` of the shared torso's output."""
        return self._critic_embeddings(self._torso(batch))

    @override(ValueFunctionAPI)
    def compute_values(self, batch: dict[str, Any], embeddings: Any = None):
        if embeddings is None:
            embeddings = self.compute_critic_embeddings(batch)
        return self.vf(embeddings).squeeze(-1)

    def compute_intrinsic_values(self, batch: dict[str, Any], embeddings: Any = None):
        """The intrinsic value head (RND-PPO's second head), ``(B,)``."""
        if embeddings is None:
            embeddings = self.compute_critic_embeddings(batch)
        return self.int_vf(embeddings).squeeze(-1)


class GridConvAPPOModule(GridConvPPOModule, TargetNetworkAPI):
    """The same network for APPO, which also needs a target copy of the policy (torso and
    policy head) that its loss measures the current policy against."""

    @override(TargetNetworkAPI)
    def make_target_networks(self) -> None:
        self._target_torso = make_target_network(self.torso)
        self._target_pi = make_target_network(self.pi)

    @override(TargetNetworkAPI)
    def get_target_network_pairs(self) -> list[tuple[Any, Any]]:
        return [(self.torso, self._target_torso), (self.pi, self._target_pi)]

    @override(TargetNetworkAPI)
    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        hidden = self._target_torso(grid_from_observation(batch[Columns.OBS]))
        return {TARGET_NETWORK_ACTION_DIST_INPUTS: self._target_pi(hidden)}

    @override(InferenceOnlyAPI)
    def get_non_inference_attributes(self) -> list[str]:
        return [*super().get_non_inference_attributes(), "_target_torso", "_target_pi"]
