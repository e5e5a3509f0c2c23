"""The episode chunks of a train batch and how many real steps each has, for learner pieces
that rewrite rewards after PPO's ``AddOneTsToEpisodesAndTruncate``."""

from __future__ import annotations

from typing import Any

from ray.rllib.connectors.connector_v2 import ConnectorV2


def chunks_with_real_steps(piece: ConnectorV2, episodes: Any,
                           shared_data: dict | None) -> list[tuple[Any, int]]:  # fmt: skip
    """(episode chunk, its number of real steps) for every single-agent chunk of the batch.

    PPO's AddOneTsToEpisodesAndTruncate appends one artificial step (reward 0, masked out of
    the loss) to each chunk and says so in ``shared_data``; that step is not counted."""
    chunks = piece.single_agent_episode_iterator(episodes, agents_that_stepped_only=False)
    artificial = 1 if (shared_data or {}).get("_added_loss_mask_for_valid_episode_ts") else 0
    return [(ep, len(ep) - artificial) for ep in chunks]
