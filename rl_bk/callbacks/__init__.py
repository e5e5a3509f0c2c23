"""RLlib callbacks (``RLlibCallback`` subclasses) that log what researchers compare."""

from rl_bk.callbacks.episode_metrics import EpisodeMetricsCallback

__all__ = ["EpisodeMetricsCallback"]
