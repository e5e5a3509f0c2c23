"""The env runner every rl-bk trial samples with: RLlib's ``SingleAgentEnvRunner`` less two
per-step costs that change nothing a trial computes (``bench/results/peer_throughput.md``).

- Its module stays in eval mode. RLlib's ``TorchRLModule.forward_exploration`` switches a
  module in training mode to eval and back around every forward pass, a walk over every
  submodule twice per env step; an env runner's copy never trains.
- RLlib's connector timers (each pipeline's, ``env_to_module_connector`` and
  ``module_to_env_connector``, and each piece's under ``timers/connector_timers``, several per
  env step) are not kept. The connectors still get the logger for their own metrics, and the
  runner's own timers (sample, env step, reset, inference) stay.

With them, RLlib's action normalisation is off (``ppo_config``): every rl-bk env acts in a
discrete space, where it changes nothing but still deep-copies each step's actions. A
continuous action space is refused here rather than left unnormalised.
"""

from __future__ import annotations

import contextlib

import gymnasium as gym
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.utils.metrics import CONNECTOR_PIPELINE_TIMER, CONNECTOR_TIMERS
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger


class _WithoutConnectorTimers(MetricsLogger):
    """A MetricsLogger whose connector-pipeline timers are no-ops; everything else logs."""

    def log_time(self, key, **kwargs):
        if isinstance(key, tuple) and (CONNECTOR_TIMERS in key or CONNECTOR_PIPELINE_TIMER in key):
            return contextlib.nullcontext()
        return super().log_time(key, **kwargs)


class LeanEnvRunner(SingleAgentEnvRunner):
    """``SingleAgentEnvRunner`` with the module in eval mode and no per-connector timers."""

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

    def make_module(self):
        super().make_module()
        if hasattr(self.module, "foreach_module"):  # RLlib wraps it in a MultiRLModule
            self.module.foreach_module(lambda _mid, module: module.eval())
        elif self.module is not None:
            self.module.eval()
