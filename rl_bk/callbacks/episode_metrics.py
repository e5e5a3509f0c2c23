"""Per-episode task metrics, logged from the env runners at the end of each episode: whether
the task was solved, Crafter's achievements and NetHack's game score, read from the env's final
``info`` (the contract in ``env_registry/spec.py``; :class:`EpisodeMetricsCallback` lists
them). RLlib reports returns and lengths by itself. Nothing here runs per step: one dictionary
read per finished episode.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

WINDOW = 100  # episodes; matches RLlib's metrics_num_episodes_for_smoothing default


def episode_end_metrics(info: dict[str, Any]) -> dict[str, float]:
    """The metrics one finished episode contributes, from its last ``info``."""
    metrics = {"success_rate": float(bool(info.get("success", False)))}
    achievements = info.get("achievements")
    if achievements:
        unlocked = [name for name, count in achievements.items() if count > 0]
        metrics["achievements_per_episode"] = float(len(unlocked))
        for name, count in achievements.items():
            metrics[f"achievement/{name}"] = float(count > 0)
    if "score" in info:
        metrics["game_score_mean"] = float(info["score"])
    return metrics


#: Added to each greedy evaluation's results: the env steps trained when it ran. RLlib 2.60
#: repeats the last evaluation's ``evaluation/env_runners/...`` values in the reports of the
#: iterations that did not evaluate, but not this key, so it marks the fresh ones.
TRAINED_ENV_STEPS = "trained_env_steps"


class EpisodeMetricsCallback(RLlibCallback):
    """Logs, per finished episode:

    - ``success_rate``: mean of ``info["success"]`` over the episodes of the report (RLlib 2.60
      clears env-runner metrics at each report, so the window rarely fills; the results
      tables re-smooth over the last 100 episodes: rl_bk/experiments/results.py);
    - Crafter: ``achievements_per_episode`` and, for each of the 22 achievements,
      ``achievement/<name>``: the fraction of episodes that unlocked it (the input of the
      Crafter score, which the results table computes);
    - NetHack: ``game_score_mean``, the in-game score at episode end.
    """

    def on_episode_end(self, *, episode, metrics_logger=None, **kwargs) -> None:
        if metrics_logger is None:
            return
        for key, value in episode_end_metrics(episode.get_infos(-1)).items():
            metrics_logger.log_value(key, value, reduce="mean", window=WINDOW)

    def on_evaluate_end(self, *, algorithm, evaluation_metrics, **kwargs) -> None:
        evaluation_metrics[TRAINED_ENV_STEPS] = algorithm.metrics.peek(
            (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=None
        )
