"""The one view of an episode chunk of a train batch, for the learner pieces that rewrite
rewards after PPO's ``AddOneTsToEpisodesAndTruncate``: every reward term (BK's shaping, ELLM's
and ONI's intrinsic rewards, PTGM's KL) reads its chunks through :class:`EpisodeChunk`, which
says what it holds and why a term keys what it keeps by the episode's own id.
"""

from __future__ import annotations

import warnings
from functools import cached_property
from typing import Any, Literal, NamedTuple

import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns

from rl_bk.callbacks.env_slot import ENV_SLOT, SLOT_EPISODE
from rl_bk.connectors.learner.rllib_internals import appended_one_step, episode_id_of
from rl_bk.knowledge.trajectory import Chunk


class Stream(NamedTuple):
    """A stream of states that per-stream statistics run along: a tagged env slot's, which runs
    on from episode to episode (``kind == "slot"``, ``key`` the slot), or an untagged
    episode's, which ends with the episode (``kind == "episode"``, ``key`` its id)."""

    kind: Literal["slot", "episode"]
    key: str

    @property
    def is_env_slot(self) -> bool:
        return self.kind == "slot"

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}"


class EpisodeChunk:
    """The ``steps`` real steps of one RLlib single-agent episode chunk (``episode``), under
    its episode's own id (``episode_id``).

    The real steps exclude the artificial last step PPO appends. The episode's own id is the
    same in every chunk of it: RLlib renames chunks per train batch (:mod:`.rllib_internals`),
    so anything a term keeps per episode (ELLM's goals already paid, ONI's caption counts, the
    last potential of a chunk) is keyed by :attr:`episode_id`; keyed by ``episode.id_`` it
    would restart at every train batch.

    The view reads the episode's data on first use and keeps it, so a term pays only for what
    it reads, and two terms reading the same column read it once. Knowledge sources, which
    read the offline dataset too, get the chunk as the dataset's
    :class:`~rl_bk.knowledge.trajectory.Chunk` (:meth:`as_chunk`).
    """

    def __init__(self, episode: Any, steps: int, episode_id: str):
        self.episode, self.steps, self.episode_id = episode, int(steps), episode_id

    def __len__(self) -> int:
        return self.steps

    def __repr__(self) -> str:
        return f"EpisodeChunk({self.episode_id!r}, steps={self.steps})"

    @property
    def env_slot(self) -> str | None:
        """The env slot the episode ran in (:mod:`rl_bk.callbacks.env_slot`), None when its
        env runner did not tag it."""
        slot = self.episode.custom_data.get(ENV_SLOT)
        return None if slot is None else str(slot)

    @property
    def stream(self) -> tuple[Stream, int, int]:
        """Sorts the chunks of one env slot in time order: (its :class:`Stream`, the runner's
        count of episodes started, the chunk's first step); an untagged episode is a stream of
        its own."""
        slot = self.env_slot
        if slot is None:
            return Stream("episode", self.episode_id), 0, int(self.episode.t_started)
        order = int(self.episode.custom_data.get(SLOT_EPISODE, 0))
        return Stream("slot", slot), order, int(self.episode.t_started)

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

    @property
    def truncated(self) -> bool:
        """As RLlib marks it: True for any chunk that did not terminate (see ``terminated``)."""
        return bool(self.episode.is_truncated)

    @property
    def ends_episode(self) -> bool:
        # Termination only: a chunk cut reads as truncated as much as a time limit does, so
        # ``truncated`` cannot end an episode's state (that state is kept under a size bound).
        return self.terminated

    @cached_property
    def infos(self) -> list[dict]:
        """The infos of the ``steps + 1`` states (before and after each step), as copies
        (every term of the batch reads the same ones: read them, do not change them)."""
        return [dict(i) for i in self.episode.get_infos(slice(0, self.steps + 1))]

    @cached_property
    def observations(self) -> np.ndarray:
        """(steps + 1, obs_dim) float32: the states before and after each step."""
        n = self.steps
        obs = np.asarray(self.episode.get_observations(slice(0, n + 1)), dtype=np.float32)
        return obs.reshape(n + 1, -1)

    @cached_property
    def actions(self) -> np.ndarray:
        n = self.steps
        return np.asarray(self.episode.get_actions(slice(0, n)), dtype=np.int64).reshape(n)

    @cached_property
    def rewards(self) -> np.ndarray:
        """The environment's rewards of the real steps (float64, a copy: rewriting the
        episode's rewards leaves them as they were)."""
        n = self.steps
        return np.array(self.episode.get_rewards(slice(0, n)), dtype=np.float64, copy=True).reshape(
            n
        )

    @cached_property
    def action_dist_inputs(self) -> np.ndarray:
        """(steps, n_actions) float32: the sampling policy's action-distribution inputs."""
        return np.asarray(
            self.episode.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS, slice(0, self.steps)),
            np.float32,
        )

    def set_rewards(self, rewards: np.ndarray) -> None:
        """Writes the real steps' rewards back into the episode (the artificial step's stays)."""
        with warnings.catch_warnings():
            # RLlib checks each reward it sets against its Box space, and gymnasium warns that
            # it casts the scalar to an array: once per chunk, every batch, about nothing.
            warnings.filterwarnings("ignore", message=".*Casting input x to numpy array")
            self.episode.set_rewards(new_data=rewards, at_indices=slice(0, self.steps))

    def as_chunk(self) -> Chunk:
        """The real steps as knowledge sources read them (the trajectory dataset's contract):
        observations, captions and mission from the infos, actions and rewards."""
        infos = self.infos
        return Chunk(
            observations=self.observations,
            captions=[str(i.get("caption", "")) for i in infos],
            actions=self.actions,
            rewards=self.rewards.astype(np.float32),
            terminated=self.terminated,
            truncated=self.truncated,
            mission=infos[0].get("mission") if infos else None,
            episode_id=self.episode_id,
        )


def chunks_with_real_steps(
    piece: ConnectorV2, episodes: Any, shared_data: dict | None
) -> list[EpisodeChunk]:
    """Every single-agent chunk of the batch with its real steps and its episode's own id.

    The order is the batch's (the order rewards must be written back in). PPO's
    AddOneTsToEpisodesAndTruncate appends one artificial step (reward 0, masked out of the
    loss) to each chunk and says so in ``shared_data``; that step is not counted."""
    chunks = piece.single_agent_episode_iterator(episodes, agents_that_stepped_only=False)
    renamed = appended_one_step(shared_data)
    artificial = 1 if renamed else 0
    return [EpisodeChunk(ep, len(ep) - artificial, episode_id_of(ep, renamed)) for ep in chunks]


def by_env_slot(chunks: list[EpisodeChunk]) -> dict[Stream, list[int]]:
    """Indices of ``chunks`` per stream (:attr:`EpisodeChunk.stream`), each stream's in time
    order: the order BK's per-slot rollout buffer holds them in."""
    slots: dict[Stream, list[int]] = {}
    for i in sorted(range(len(chunks)), key=lambda i: chunks[i].stream):
        slots.setdefault(chunks[i].stream[0], []).append(i)
    return slots


def in_episode_order(chunks: list[EpisodeChunk]) -> list[int]:
    """Indices of ``chunks`` with each episode's chunks in time order (a train batch can hold
    two chunks of one episode when a runner sampled twice), for state carried chunk to chunk."""

    def key(i: int) -> tuple[str, int]:
        return chunks[i].episode_id, int(chunks[i].episode.t_started)

    return sorted(range(len(chunks)), key=key)
