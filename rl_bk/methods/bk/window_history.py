"""The states before a chunk's first, for potentials that read a window of history: RLlib cuts
an episode into one chunk per train batch, where BK's rollout buffer, kept per env slot, never
loses them, so :class:`WindowHistory` puts them back, and fills an episode's first windows as
BK's buffer does (or gives them fewer states). Details:
docs/methods.md#potential-based-shaping.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

import numpy as np

from rl_bk.connectors.learner.episode_chunks import EpisodeChunk
from rl_bk.knowledge.trajectory import Chunk

EpisodeStart = Literal["repeat-first", "short"]
EPISODE_STARTS: tuple[str, ...] = ("repeat-first", "short")

#: Unfinished episodes remembered at most (an episode cut by a time limit is never seen
#: again; the oldest are dropped first).
MAX_EPISODES = 4096


@dataclass(frozen=True)
class History:
    """States s_{-k}..s_{-1} before a chunk's first state and the actions a_{-k}..a_{-1}
    taken in them (k <= h - 1)."""

    observations: np.ndarray
    captions: list[str]
    actions: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)


def extended(chunk: Chunk, history: History | None) -> Chunk:
    """``chunk`` with ``history``'s states and actions in front (its rewards 0 there)."""
    if history is None or len(history) == 0:
        return chunk
    k = len(history)
    return Chunk(
        observations=np.concatenate([history.observations, chunk.observations]),
        captions=list(history.captions) + list(chunk.captions),
        actions=np.concatenate([history.actions, chunk.actions]),
        rewards=np.concatenate([np.zeros(k, np.float32), chunk.rewards]),
        terminated=chunk.terminated,
        truncated=chunk.truncated,
        mission=chunk.mission,
        episode_id=chunk.episode_id,
    )


class WindowHistory:
    """Gives each chunk of a train batch the history its windows need.

    The potential of state t reads states t-h+1..t and the actions between them (h: the
    source's ``horizon``). A chunk that starts in the middle of an episode lacks the h-1
    states before its first, so this keeps the last h states (observations and captions) and
    the actions between them of each unfinished episode, and puts them in front of the
    episode's next chunk: every state gets the window it would get were the episode in one
    piece.

    At an episode's start BK fills its buffer with the first state and with the first action,
    the one about to be taken there (``train_rs.py``: ``rm_obs[rm_timesteps == 0] =
    next_obs``, the same for the action), so the first windows read as if the agent had stood
    at s_0 and taken a_0 h-1 times before the episode began. ``episode_start="repeat-first"``
    does the same; ``"short"`` gives the first states shorter windows instead (as the offline
    dataset's windows are, and as the BK-Code description promises the written function).
    """

    def __init__(self, episode_start: EpisodeStart = "repeat-first"):
        if episode_start not in EPISODE_STARTS:
            raise ValueError(
                f"unknown episode_start {episode_start!r}; valid: {', '.join(EPISODE_STARTS)}"
            )
        self.episode_start = episode_start
        self._kept: OrderedDict[str, History] = OrderedDict()

    def history(self, piece: EpisodeChunk, chunk: Chunk, horizon: int) -> History | None:
        """What goes in front of ``chunk`` (``piece``'s real steps) for windows of ``horizon``."""
        k = horizon - 1
        if k <= 0 or len(chunk) == 0:
            return None
        if piece.starts_episode:
            if self.episode_start == "short":
                return None
            return History(
                np.repeat(chunk.observations[:1], k, axis=0),
                [chunk.captions[0]] * k,
                np.repeat(chunk.actions[:1], k),
            )
        return self._kept.get(piece.episode_id)

    def remember(self, piece: EpisodeChunk, chunk: Chunk, horizon: int) -> None:
        """Keeps the last ``horizon - 1`` steps of an extended chunk for the episode's next
        chunk (whose first state is this chunk's last); forgets a finished episode."""
        k = horizon - 1
        self._kept.pop(piece.episode_id, None)
        if k <= 0 or piece.terminated or len(chunk) == 0:
            return
        k = min(k, len(chunk))
        self._kept[piece.episode_id] = History(
            chunk.observations[-k - 1 : -1].copy(),
            list(chunk.captions[-k - 1 : -1]),
            chunk.actions[-k:].copy(),
        )
        while len(self._kept) > MAX_EPISODES:
            self._kept.popitem(last=False)
