"""Counts PTGM's env steps, not its high-level decisions, as the env steps of a result: a
comparison with flat PPO "at N env steps" must count the env steps each goal ran, so the
result's env-step count and episode lengths are replaced by sums of ``info["env_steps"]``, and
RLlib's own counts stay beside them under ``ptgm/`` (:func:`count_env_steps`).
"""

from __future__ import annotations

from typing import Any

from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

from rl_bk.callbacks import EpisodeMetricsCallback

LOW_LEVEL_STEPS = "ptgm_env_steps_lifetime"
HIGH_LEVEL_STEPS = "ptgm/high_level_steps_lifetime"
EPISODE_ENV_STEPS = "ptgm_episode_env_steps_mean"
EPISODE_DECISIONS = "ptgm/episode_decisions_mean"
EPISODE_LEN_MEAN = "episode_len_mean"


def count_env_steps(result: dict[str, Any]) -> None:
    """Rewrites ``result``'s env-step counts in place: ``num_env_steps_sampled_lifetime``
    (what Tune's stop criterion, the tables and the plots read) becomes the env runners' sum
    of ``info["env_steps"]``, RLlib's own count (one per goal) staying as
    ``ptgm/high_level_steps_lifetime``; ``episode_len_mean`` becomes env steps, RLlib's count
    of decisions per episode staying as ``ptgm/episode_decisions_mean``."""
    runners = result.get(ENV_RUNNER_RESULTS) or {}
    if LOW_LEVEL_STEPS not in runners:
        return
    high = result.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, runners.get(NUM_ENV_STEPS_SAMPLED_LIFETIME))
    result[HIGH_LEVEL_STEPS] = high
    low = runners[LOW_LEVEL_STEPS]
    result[NUM_ENV_STEPS_SAMPLED_LIFETIME] = low
    runners[NUM_ENV_STEPS_SAMPLED_LIFETIME] = low
    if EPISODE_ENV_STEPS in runners:
        result[EPISODE_DECISIONS] = runners.get(EPISODE_LEN_MEAN)
        runners[EPISODE_LEN_MEAN] = runners[EPISODE_ENV_STEPS]


class PTGMMetricsCallback(EpisodeMetricsCallback):
    """The task metrics of :class:`EpisodeMetricsCallback`, counted in env steps."""

    def on_episode_step(self, *, episode, metrics_logger=None, **kwargs) -> None:
        if metrics_logger is not None:
            steps = episode.get_infos(-1).get("env_steps", 1)
            metrics_logger.log_value(LOW_LEVEL_STEPS, steps, reduce="lifetime_sum")

    def on_episode_end(self, *, episode, metrics_logger=None, **kwargs) -> None:
        super().on_episode_end(episode=episode, metrics_logger=metrics_logger, **kwargs)
        if metrics_logger is not None:
            length = episode.get_infos(-1).get("episode_env_steps")
            if length is not None:
                metrics_logger.log_value(EPISODE_ENV_STEPS, length, reduce="mean", window=100)

    def on_train_result(self, *, result, **kwargs) -> None:
        count_env_steps(result)
