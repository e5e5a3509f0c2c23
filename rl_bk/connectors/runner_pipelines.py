"""The env runner's two pipelines for what every rl-bk task samples with (one array
observation, a discrete action, a policy without memory), each one piece that does per step
only the work these tasks need, giving the module and the env the same values, dtypes
included, as RLlib's default pipelines (which also handle dict spaces, multi-agent mappings,
time ranks and recurrent states). :func:`lean_pipelines` builds them where they apply and says
why not where they do not.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.connectors.env_to_module import EnvToModulePipeline
from ray.rllib.connectors.module_to_env import GetActions, ModuleToEnvPipeline
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical
from ray.rllib.utils.numpy import convert_to_numpy
from ray.rllib.utils.spaces.space_utils import unbatch
from ray.rllib.utils.torch_utils import convert_to_torch_tensor


class LatestObservationsToTensor(ConnectorV2):
    """The module's input: every episode's latest observation, in episode order, as one
    tensor (RLlib's ``AddObservationsFromEpisodesToBatch``, ``BatchIndividualItems`` and
    ``NumpyToTensor``, for one module and no time rank), converted directly where RLlib's
    converters walk every structure item by item (``tree.map_structure``)."""

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, **kwargs):
        latest = np.stack([episode.get_observations(-1) for episode in episodes])
        batch[Columns.OBS] = _to_tensor(latest)
        return batch


def _to_tensor(array: np.ndarray) -> torch.Tensor:
    """RLlib's ``convert_to_torch_tensor`` for one numeric array on the CPU: float64 made
    float32, float16 kept."""
    if array.dtype == object or array.dtype.type is np.str_:
        return convert_to_torch_tensor(array)  # RLlib leaves these as they are
    tensor = torch.from_numpy(array)
    if tensor.is_floating_point() and tensor.dtype != torch.float16:
        tensor = tensor.float()
    return tensor


def _to_numpy(value: Any) -> Any:
    """RLlib's ``convert_to_numpy`` (with its float32 / int32 reduction) for one CPU tensor;
    anything else through RLlib's own."""
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return convert_to_numpy(value)
    array = value.detach().numpy()
    if np.issubdtype(array.dtype, np.floating):
        return array.astype(np.float32)
    if np.issubdtype(array.dtype, int):
        return array.astype(np.int32)
    return array


class ActionsToVectorEnv(ConnectorV2):
    """The env's input: the sampled actions as one array, and each other output of the
    module (log-probabilities, distribution inputs) as one item per env for its episode.

    The actions are sampled from the module's distribution inputs as RLlib's ``GetActions``
    samples them (a categorical's sample and log-probability computed by the same tensor
    operations, in the same order, without building its two distribution objects), and
    converted to numpy as RLlib's ``TensorToNumpy``, ``UnBatchToIndividualItems`` and
    ``ListifyDataForVectorEnv`` convert them; a nested output still goes through RLlib's.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._get_actions = GetActions()

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, **kwargs):
        if _samples_a_categorical(rl_module, batch, explore):
            batch[Columns.ACTIONS], batch[Columns.ACTION_LOGP] = sample_categorical(
                batch[Columns.ACTION_DIST_INPUTS]
            )
        else:
            batch = self._get_actions(
                rl_module=rl_module, batch=batch, episodes=episodes, explore=explore
            )
        out = {column: _to_numpy(values) for column, values in batch.items()}
        for column, values in out.items():
            if column != Columns.ACTIONS:  # one item per env (nested outputs: RLlib's unbatch)
                out[column] = list(values) if isinstance(values, np.ndarray) else unbatch(values)
        return out


def _samples_a_categorical(rl_module: Any, batch: dict, explore: bool | None) -> bool:
    """Whether RLlib's ``GetActions`` would sample these actions from a ``TorchCategorical``
    over the batch's distribution inputs and add their log-probabilities."""
    dist_cls = getattr(rl_module, "get_exploration_action_dist_cls", None)
    return (
        bool(explore)
        and Columns.ACTIONS not in batch
        and Columns.ACTION_LOGP not in batch
        and Columns.ACTION_DIST_INPUTS in batch
        and dist_cls is not None
        and dist_cls() is TorchCategorical
    )


def sample_categorical(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Actions and their log-probabilities as ``TorchCategorical.from_logits(logits)``'s
    ``sample()`` and ``logp()`` give them (torch's ``Categorical``: logits normalised by
    their logsumexp, softmax, one multinomial draw per row, the normalised logit gathered),
    so the same generator state draws the same actions."""
    normalised = logits - logits.logsumexp(dim=-1, keepdim=True)
    probs = torch.softmax(normalised, dim=-1)
    actions = torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1, True).T
    actions = actions.reshape(probs.shape[:-1])
    logp = normalised.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    return actions, logp


def why_not_lean(config: Any, env: Any, module: Any, device: Any = None) -> str | None:
    """Why the lean pipelines cannot stand in for RLlib's with this config, env, module and
    runner device (None: they can)."""
    if device is not None and str(device) != "cpu":
        return "the runner's module is on a GPU"
    if config._env_to_module_connector is not None or config._module_to_env_connector is not None:
        return "the config adds its own env-to-module or module-to-env pieces"
    if not (
        config.add_default_connectors_to_env_to_module_pipeline
        and config.add_default_connectors_to_module_to_env_pipeline
    ):
        return "the config leaves out RLlib's default pieces"
    if not isinstance(getattr(env, "single_observation_space", None), gym.spaces.Box):
        return "the observation space is not one array (a Box)"
    if not isinstance(getattr(env, "single_action_space", None), gym.spaces.Discrete):
        return "the action space is not discrete"
    if module is None or module.is_stateful():
        return "the module keeps a state between steps"
    return None


def lean_pipelines(
    config: Any, env: Any, module: Any, device: Any = None
) -> tuple[Any, Any] | None:
    """The env-to-module and module-to-env pipelines for this runner, or None where RLlib's
    defaults are needed (:func:`why_not_lean`)."""
    if why_not_lean(config, env, module, device) is not None:
        return None
    spaces = {
        "input_observation_space": env.single_observation_space,
        "input_action_space": env.single_action_space,
    }
    to_module = EnvToModulePipeline(connectors=[LatestObservationsToTensor(**spaces)], **spaces)
    to_env = ModuleToEnvPipeline(connectors=[ActionsToVectorEnv(**spaces)], **spaces)
    return to_module, to_env
