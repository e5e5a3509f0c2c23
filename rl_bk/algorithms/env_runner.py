"""The env runner every rl-bk trial samples with: RLlib's ``SingleAgentEnvRunner`` less
per-step costs that change nothing a trial computes (the module's eval/train switch, the merge
and split of the envs' infos, the connector timers, empty per-step callbacks, and RLlib's
general pipelines where one-piece ones do): :class:`LeanEnvRunner` says what each is. Beside
RLlib's runner and the peers': ``bench/results/peer_throughput.md``.
"""

from __future__ import annotations

import contextlib

import gymnasium as gym
from gymnasium.vector import SyncVectorEnv
from gymnasium.wrappers.vector import DictInfoToList
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.utils.metrics import CONNECTOR_PIPELINE_TIMER, CONNECTOR_TIMERS
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from rl_bk.connectors.runner_pipelines import lean_pipelines


class _WithoutConnectorTimers(MetricsLogger):
    """A MetricsLogger whose connector-pipeline timers are no-ops; everything else logs."""

    def log_time(self, key, **kwargs):
        if isinstance(key, tuple) and (CONNECTOR_TIMERS in key or CONNECTOR_PIPELINE_TIMER in key):
            return contextlib.nullcontext()
        return super().log_time(key, **kwargs)


def _without_mode_switch(module: TorchRLModule) -> None:
    """The module's forward passes without RLlib's eval/train switch around them (the module
    is in eval mode already). A module class with forward passes of its own keeps them."""
    if type(module).forward_exploration is TorchRLModule.forward_exploration:
        module.forward_exploration = module._forward_exploration
    if type(module).forward_inference is TorchRLModule.forward_inference:
        module.forward_inference = module._forward_inference


class _ListInfoSyncVectorEnv(SyncVectorEnv):
    """gymnasium's ``SyncVectorEnv`` whose infos are a list of each env's own dict, what
    RLlib's ``DictInfoToList`` rebuilds from the merged dict, without merging and splitting.
    (Values stay the env's own: a Python int is not made a numpy scalar on the way.)"""

    def _add_info(self, vector_infos, env_info, env_num):
        if not isinstance(vector_infos, list):  # the step's or reset's first env
            vector_infos = [{} for _ in range(self.num_envs)]
        vector_infos[env_num] = {**vector_infos[env_num], **env_info}
        return vector_infos


class _ListInfosAsTheyAre(DictInfoToList):
    """RLlib's ``DictInfoToList`` around a vector env whose infos are a list already."""

    def step(self, actions):
        return self.env.step(actions)

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=seed, options=options)


class LeanEnvRunner(SingleAgentEnvRunner):
    """``SingleAgentEnvRunner`` with the module in eval mode, infos passed as a list, no
    per-connector timers, and one-piece pipelines where they apply.

    - Its module stays in eval mode, and its forward passes do not set it again. RLlib's
      ``TorchRLModule.forward_exploration`` (and ``forward_inference``) puts the module in eval
      mode before every pass and back in training mode after it, a walk over every submodule
      per switch and env step; an env runner's copy never trains.
    - Its env-to-module and module-to-env pipelines are one piece each
      (:mod:`rl_bk.connectors.runner_pipelines`) where the task allows (one array observation,
      discrete actions, no recurrent state, no pieces of the config's own); RLlib's otherwise.
    - Its vector env hands over each env's info dict as the env returned it, in a list: RLlib
      wraps gymnasium's ``SyncVectorEnv``, which merges the infos into one dict of arrays, in
      ``DictInfoToList``, which splits them again, every step.
    - ``on_episode_step`` is called only where a callback has one (RLlib calls it for every
      env step, with its arguments built each time, when none has).
    - RLlib's connector timers (each pipeline's, ``env_to_module_connector`` and
      ``module_to_env_connector``, and each piece's under ``timers/connector_timers``, several
      per env step) are not kept. The connectors still get the logger for their own metrics,
      and the runner's own timers (sample, env step, reset, inference) stay.

    With them, RLlib's action normalisation is off (``ppo_config``): every rl-bk env acts in a
    discrete space, where it changes nothing but still deep-copies each step's actions. A
    continuous action space is refused here rather than left unnormalised.
    """

    def __init__(self, *, config, **kwargs):
        super().__init__(config=config, **kwargs)
        # The logger RLlib's EnvRunner made, with log_time narrowed (no state of its own).
        self.metrics.__class__ = _WithoutConnectorTimers
        space = getattr(self.env, "single_action_space", None)
        if isinstance(space, gym.spaces.Box) and not self.config.normalize_actions:
            raise ValueError(
                f"{self.config.env}: a continuous action space needs RLlib's action "
                "normalisation, which rl-bk turns off for its discrete envs: set "
                "config.environment(normalize_actions=True)"
            )
        lean = lean_pipelines(self.config, self.env, self.module, self._device)
        if lean is not None:
            self._env_to_module, self._module_to_env = lean
        self._calls_on_episode_step = bool(self.config.callbacks_on_episode_step) or any(
            type(c).on_episode_step is not RLlibCallback.on_episode_step for c in self._callbacks
        )

    def _make_on_episode_callback(self, which: str, idx: int, episodes: list) -> None:
        # RLlib builds the call's arguments and walks the callbacks for every env step; where
        # no callback has an on_episode_step the walk calls only RLlibCallback's empty one.
        if which == "on_episode_step" and not self._calls_on_episode_step:
            return
        super()._make_on_episode_callback(which, idx, episodes)

    def make_env(self) -> None:
        super().make_env()
        # The classes swapped in place add no state; dropping RLlib's wrapper instead would
        # close the envs when it is collected (gymnasium's VectorEnv.__del__).
        if type(self.env) is DictInfoToList and type(self.env.env) is SyncVectorEnv:
            self.env.env.__class__ = _ListInfoSyncVectorEnv
            self.env.__class__ = _ListInfosAsTheyAre

    def make_module(self):
        super().make_module()
        modules = []
        if hasattr(self.module, "foreach_module"):  # RLlib wraps it in a MultiRLModule
            self.module.foreach_module(lambda _mid, module: modules.append(module))
        elif self.module is not None:
            modules.append(self.module)
        for module in modules:
            module.eval()
            if isinstance(module, TorchRLModule):
                _without_mode_switch(module)
