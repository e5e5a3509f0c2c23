"""Potential-based reward shaping, once per train batch: a reward term of the learner's
:class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards` piece (before GAE), which
asks ``potential_fn`` for every state of the batch in one call and rewrites each reward to
``extrinsic_coeff * r_t + coeff * F_t``. BK's convention (``F_t = gamma * Phi(s_t) -
Phi(s_{t-1})`` along each env slot's stream, paid one step late), Ng et al.'s, BK's
normaliser and its carried potential: docs/methods.md, "Potential-based shaping".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, get_args

import numpy as np

from rl_bk.connectors.learner.episode_chunks import (
    EpisodeChunk,
    by_env_slot,
    in_episode_order,
)
from rl_bk.knowledge.trajectory import Chunk
from rl_bk.methods.bk.settings import Convention, EpisodeStart, Normalization
from rl_bk.running_stats import RewardForwardFilter, RunningStd

#: The train batch's chunks -> one potential per state (``len(chunk) + 1``) for each chunk,
#: in one call. Any :class:`~rl_bk.methods.bk.sources.PotentialSource` is one.
PotentialFn = Callable[[Sequence[Chunk]], Sequence[np.ndarray]]

CONVENTIONS: tuple[str, ...] = get_args(Convention)
NORMALIZATIONS: tuple[str, ...] = get_args(Normalization)

SHAPING_REWARD_MEAN = "shaping_reward_mean"  # per real step, logged by the learner
SHAPING_RETURN_MEAN = "shaping_return_mean"  # sum over a chunk's real steps
POTENTIAL_MEAN = "potential_mean"  # after normalisation
POTENTIAL_DIVISOR = "potential_divisor"  # what Phi was divided by (1 without normalisation)
ENV_SLOTS = "env_slots"  # env slots in the batch (0: the env runners did not tag them)


def shaping_terms(
    potentials: np.ndarray,
    *,
    gamma: float,
    coeff: float,
    terminated: bool,
    convention: Convention = "ng",
    previous: float | None = None,
) -> np.ndarray:
    """``coeff * F_t`` for a chunk's n real steps (see the module).

    Args:
        potentials: n + 1 potentials, of the states before and after each step.
        terminated: whether the chunk's last step ended the episode.
        convention: ``"ng"``: ``F_t = gamma * Phi(s_{t+1}) - Phi(s_t)``, ``Phi = 0`` after
            termination; ``"bk"``: ``F_t = gamma * Phi(s_t) - Phi(s_{t-1})``.
        previous: ``"bk"`` only: ``Phi(s_{-1})``, the potential of the state before the
            chunk's first (the previous chunk's second-to-last state); None at an episode's
            start, where ``Phi(s_0)`` stands in for it.
    """
    phi = np.asarray(potentials, dtype=np.float64)
    n = len(phi) - 1
    if convention == "ng":
        next_phi = phi[1:].copy()
        if terminated and n:
            next_phi[-1] = 0.0
        return coeff * (gamma * next_phi - phi[:-1])
    if convention == "bk":
        before = np.concatenate([[phi[0] if previous is None else previous], phi[: n - 1]])
        return coeff * (gamma * phi[:n] - before[:n])
    raise ValueError(f"unknown shaping convention {convention!r}; valid: {', '.join(CONVENTIONS)}")


class PotentialScale:
    """The divisor of Phi under each normalisation (see the module); updated once per batch
    with every stream's values (one stream per env slot), each in time order."""

    def __init__(self, normalization: Normalization, gamma: float):
        if normalization not in NORMALIZATIONS:
            raise ValueError(
                f"unknown potential normalization {normalization!r}; valid: "
                f"{', '.join(NORMALIZATIONS)}"
            )
        self.normalization = normalization
        self.stats = RunningStd()
        self.filter = RewardForwardFilter(gamma) if normalization == "discounted-sum-std" else None

    def update(self, streams: Sequence[tuple[str, np.ndarray]]) -> float:
        """Adds each ``(stream, potentials)`` piece; returns the divisor to use now."""
        if self.normalization == "none":
            return 1.0
        values = [v for _, v in streams]
        if self.filter is not None:
            values = self.filter.update(streams)
        if values:
            self.stats.update(np.concatenate(values))
        return self.stats.std + self.stats.epsilon

    def forget(self, stream: str) -> None:
        if self.filter is not None:
            self.filter.forget(stream)


# The states before a chunk's first, for potentials that read a window of history: RLlib cuts
# an episode into one chunk per train batch, where BK's rollout buffer, kept per env slot,
# never loses them, so WindowHistory puts them back.
EPISODE_STARTS: tuple[str, ...] = get_args(EpisodeStart)
#: Unfinished episodes whose last states WindowHistory keeps, at most (an episode cut by a
#: time limit is never seen again; the oldest are dropped first).
MAX_KEPT_EPISODES = 4096


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
        while len(self._kept) > MAX_KEPT_EPISODES:
            self._kept.popitem(last=False)


class PotentialShaping:
    """The shaping term ``coeff * F_t`` (see the module), a
    :class:`~rl_bk.connectors.learner.reward_rewrite.RewardTerm` of
    :class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards`."""

    #: env slots (or untagged episodes) whose carried potential is kept at most
    MAX_STREAMS = 4096

    def __init__(
        self,
        *,
        potential_fn: PotentialFn,
        gamma: float,
        coeff: float = 1.0,
        normalization: Normalization = "discounted-sum-std",
        convention: Convention = "bk",
        episode_start: EpisodeStart = "repeat-first",
    ):
        if convention not in CONVENTIONS:
            raise ValueError(
                f"unknown shaping convention {convention!r}; valid: {', '.join(CONVENTIONS)}"
            )
        self.potential_fn, self.gamma, self.coeff = potential_fn, gamma, coeff
        self.convention = convention
        self.scale = PotentialScale(normalization, gamma)
        self.history = WindowHistory(episode_start)
        #: "bk": stream -> its last potential of the previous batch, divided by that batch's
        #: divisor (BK divides it once more: see the module).
        self._carried: OrderedDict[str, float] = OrderedDict()
        self._metrics: dict[str, float] = {}

    def raw_potentials(self, found: Sequence[EpisodeChunk]) -> list[np.ndarray | None]:
        """Raw potentials per chunk (None for chunks without real steps), in batch order,
        each state's from its whole window (:class:`WindowHistory`). Updates the kept
        history: call it once per batch, in batch order (``__call__`` does)."""
        horizon = int(getattr(self.potential_fn, "horizon", 1))
        extended_chunks: dict[int, tuple[Chunk, int]] = {}
        for i in in_episode_order(list(found)):  # an episode's earlier chunk first
            if found[i].steps == 0:
                continue
            chunk = found[i].as_chunk()
            before = self.history.history(found[i], chunk, horizon)
            whole = extended(chunk, before)
            self.history.remember(found[i], whole, horizon)
            extended_chunks[i] = (whole, 0 if before is None else len(before))
        live = sorted(extended_chunks)
        raw = self.potential_fn([extended_chunks[i][0] for i in live])
        out: list[np.ndarray | None] = [None] * len(found)
        for i, phi in zip(live, raw):
            out[i] = np.array(phi, dtype=np.float64, copy=True)[extended_chunks[i][1] :]
        return out

    def __call__(self, found: Sequence[EpisodeChunk], rl_module: Any = None) -> list[np.ndarray]:
        found = list(found)
        potentials = self.raw_potentials(found)
        streams = {
            stream: [i for i in members if potentials[i] is not None]
            for stream, members in by_env_slot(found).items()
        }
        streams = {stream: members for stream, members in streams.items() if members}
        # BK's Phi of a state is the one of its window before the step: the n states before
        # the chunk's n steps are the ones each stream's running sum and shaping read.
        rows = {
            stream: [potentials[i][: found[i].steps] for i in members]  # type: ignore[index]
            for stream, members in streams.items()
        }
        bk = self.convention == "bk"
        carried = {stream: self._carried.pop(stream, 0.0) for stream in streams} if bk else {}
        divisor = self.scale.update(
            [
                (
                    stream,
                    np.concatenate(([np.array([carried[stream]])] if bk else []) + rows[stream]),
                )
                for stream in streams
            ]
        )

        added: list[np.ndarray] = [np.zeros(0)] * len(found)
        for stream, members in streams.items():
            # An env slot's stream runs on; an untagged episode's ends with the episode.
            ended = not stream.is_env_slot and found[members[-1]].terminated
            if bk:
                # F along the slot's whole stream, the carried potential before its first
                # state (shaping_terms wants one potential past the last: never read in "bk").
                sequence = np.concatenate(rows[stream]) / divisor
                bonus = shaping_terms(
                    np.append(sequence, 0.0),
                    gamma=self.gamma,
                    coeff=self.coeff,
                    terminated=False,
                    convention="bk",
                    previous=carried[stream] / divisor,
                )
                sizes = np.cumsum([found[i].steps for i in members])[:-1]
                for i, piece in zip(members, np.split(bonus, sizes)):
                    added[i] = piece
                if not ended:
                    self._carried[stream] = float(sequence[-1])
            else:
                for i in members:
                    added[i] = shaping_terms(
                        potentials[i] / divisor,
                        gamma=self.gamma,  # type: ignore[operator]
                        coeff=self.coeff,
                        terminated=found[i].terminated,
                        convention="ng",
                    )
            if ended:
                self.scale.forget(stream)
        while len(self._carried) > self.MAX_STREAMS:
            self._carried.popitem(last=False)

        live = [i for i in range(len(found)) if potentials[i] is not None]
        steps = sum(found[i].steps for i in live)
        bonus_total = float(sum(added[i].sum() for i in live))
        used = np.concatenate([potentials[i] for i in live]) if live else np.zeros(0)
        self._metrics = (
            {
                SHAPING_REWARD_MEAN: bonus_total / steps,
                SHAPING_RETURN_MEAN: bonus_total / len(live),
                POTENTIAL_MEAN: float(used.mean()) / divisor,
                POTENTIAL_DIVISOR: divisor,
                ENV_SLOTS: float(sum(s.is_env_slot for s in streams)),
            }
            if steps
            else {}
        )
        source_metrics = getattr(self.potential_fn, "metrics", None)
        if steps and callable(source_metrics):
            self._metrics.update({f"potential/{k}": v for k, v in source_metrics().items()})
        return added

    def batch_metrics(self) -> dict[str, float]:
        return self._metrics
