"""A learner piece that reads an episode's time limit as its end (no bootstrap), as BK's
``train_rs.py`` (mansicer/background-knowledge-rl) and CleanRL's PPO do; RLlib bootstraps
there. On BabyAI every failed episode runs out at the time limit, so the choice sets the value
targets of every failure.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.utils.annotations import override


class TimeLimitAsTermination(ConnectorV2):
    """Turns the episodes the env itself truncated into terminated ones, as BK and CleanRL
    pass GAE ``done = terminated or truncated``.

    It runs first in the learner pipeline, before PPO's ``AddOneTsToEpisodesAndTruncate``,
    which marks every unfinished chunk truncated so it can bootstrap chunk boundaries: only
    episodes the env truncated (``is_truncated`` with the env done) change; a chunk cut
    mid-episode is not done and keeps its bootstrap. Only the learner's copy of the episode
    changes: the env runners and their metrics never see it.
    """

    @override(ConnectorV2)
    def __call__(
        self,
        *,
        rl_module,
        batch,
        episodes,
        explore=None,
        shared_data=None,
        metrics=None,
        **kwargs: Any,
    ):
        for episode in self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False):
            if episode.is_truncated and not episode.is_terminated:
                episode.is_truncated = False
                episode.is_terminated = True
        return batch
