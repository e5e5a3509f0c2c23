"""What the learner pieces here rely on of RLlib 2.60's PPO learner pipeline beyond its public
API, in one place (the module to check when Ray is upgraded): ``AddOneTsToEpisodesAndTruncate``
appends one artificial step to every chunk of the train batch (reward 0, masked out of the
loss), says so in ``shared_data`` under :data:`ADDED_ONE_TS`, and renames every chunk
``<episode id>_<index in batch>``, another index in each batch, so anything kept per episode
is keyed by the id before the suffix (:func:`episode_id_of`).
"""

from __future__ import annotations

from typing import Any

#: The ``shared_data`` key AddOneTsToEpisodesAndTruncate sets once it has appended the
#: artificial step to each chunk and renamed it.
ADDED_ONE_TS = "_added_loss_mask_for_valid_episode_ts"


def appended_one_step(shared_data: dict | None) -> bool:
    """Whether PPO's artificial-step piece has run on this batch (and renamed its chunks)."""
    return bool((shared_data or {}).get(ADDED_ONE_TS))


def episode_id_of(episode: Any, renamed: bool) -> str:
    """The episode's own id: ``id_`` without the ``_<index>`` RLlib appended when ``renamed``.

    RLlib's episode ids are uuid4 hex strings (no underscore), so the suffix is everything
    after the last underscore."""
    eid = str(episode.id_)
    return eid.rsplit("_", 1)[0] if renamed and "_" in eid else eid
