"""The episode chunks of a train batch, for learner pieces that rewrite rewards after PPO's
``AddOneTsToEpisodesAndTruncate``: how many real steps each has, and which episode it is.

Which episode: RLlib 2.60's ``AddOneTsToEpisodesAndTruncate`` renames every chunk of the
batch ``<episode id>_<index in batch>`` so that chunks stay apart in the batch. The next
chunk of the same episode, in the next train batch, gets another index. Anything a piece
keeps per episode (ELLM's goals already paid, ONI's caption counts, the last potential of a
chunk) must therefore be keyed by the id before the suffix, :attr:`EpisodeChunk.episode_id`;
keyed by ``episode.id_`` it would restart at every train batch.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ray.rllib.connectors.connector_v2 import ConnectorV2

#: What AddOneTsToEpisodesAndTruncate writes into ``shared_data`` once it has appended one
#: artificial step to each chunk and renamed it (ray/rllib/connectors/learner/
#: add_one_ts_to_episodes_and_truncate.py). The one place this module reads RLlib internals.
_ADDED_ONE_TS = "_added_loss_mask_for_valid_episode_ts"


class EpisodeChunk(NamedTuple):
    episode: Any  # the RLlib SingleAgentEpisode chunk
    steps: int  # its real steps (the artificial last one not counted)
    episode_id: str  # the episode's own id, the same in every chunk of it

    @property
    def starts_episode(self) -> bool:
        return int(self.episode.t_started) == 0

    @property
    def terminated(self) -> bool:
        """Whether the chunk's last step ended the episode by termination. A time-limit
        truncation cannot be told from a chunk cut here: AddOneTsToEpisodesAndTruncate marks
        every unterminated chunk truncated. State kept for an episode that was truncated is
        dropped once the episode no longer appears (or by a size bound)."""
        return bool(self.episode.is_terminated)


def episode_id_of(episode: Any, renamed: bool) -> str:
    """The episode's own id: ``id_`` without the ``_<index>`` RLlib appended when ``renamed``.

    RLlib's episode ids are uuid4 hex strings (no underscore), so the suffix is everything
    after the last underscore."""
    eid = str(episode.id_)
    return eid.rsplit("_", 1)[0] if renamed and "_" in eid else eid


def chunks_with_real_steps(piece: ConnectorV2, episodes: Any,
                           shared_data: dict | None) -> list[EpisodeChunk]:  # fmt: skip
    """Every single-agent chunk of the batch with its real steps and its episode's own id.

    The order is the batch's (the order rewards must be written back in). PPO's
    AddOneTsToEpisodesAndTruncate appends one artificial step (reward 0, masked out of the
    loss) to each chunk and says so in ``shared_data``; that step is not counted."""
    chunks = piece.single_agent_episode_iterator(episodes, agents_that_stepped_only=False)
    renamed = bool((shared_data or {}).get(_ADDED_ONE_TS))
    artificial = 1 if renamed else 0
    return [EpisodeChunk(ep, len(ep) - artificial, episode_id_of(ep, renamed)) for ep in chunks]


def in_episode_order(chunks: list[EpisodeChunk]) -> list[int]:
    """Indices of ``chunks`` with each episode's chunks in time order (a train batch can hold
    two chunks of one episode when a runner sampled twice), for state carried chunk to chunk."""
    def key(i: int) -> tuple[str, int]:
        return chunks[i].episode_id, int(chunks[i].episode.t_started)

    return sorted(range(len(chunks)), key=key)
