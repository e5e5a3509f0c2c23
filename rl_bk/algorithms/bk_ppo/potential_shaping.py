"""Potential-based reward shaping, once per train batch: a reward term of the learner's
:class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards` piece (after PPO's
``AddOneTsToEpisodesAndTruncate``, before GAE, so GAE sees the shaped rewards).

It reads each episode chunk as a :class:`~rl_bk.knowledge.trajectory.Chunk`
(:meth:`~rl_bk.connectors.learner.episode_chunks.EpisodeChunk.as_chunk`: observations,
captions and mission from the infos, actions), gets one potential per state
from ``potential_fn`` (one call for the whole train batch, so a source that asks a Serve
deployment makes one request per batch, never one per env step) and rewrites the rewards:

    r'_t = extrinsic_coeff * r_t + coeff * F_t

Two conventions for ``F_t`` (``convention``):

- ``"bk"`` (BK's ``train_rs.py``, the default): ``F_t = gamma * Phi(s_t) - Phi(s_{t-1})``,
  along each env slot's stream of states, episode after episode, as BK's rollout buffer
  holds them. Each potential difference is paid one step after the step that caused it, and
  the step that ends an episode is never charged the potential of the state it leaves:
  reaching the goal from a state of high potential costs nothing; the next episode in the
  same slot pays it on its first step, ``gamma * Phi(s_0) - Phi(last state acted in)``
  (neither depends on the agent's action there). A slot's first step ever has
  ``Phi(s_{-1}) = 0`` (BK's buffer starts as zeros).
- ``"ng"`` (Ng et al. 1999): ``F_t = gamma * Phi(s_{t+1}) - Phi(s_t)`` with
  ``Phi(terminal) = 0``. The discounted return changes by ``-Phi(s_0)`` only, so the optimal
  policy is unchanged; but a positive potential makes the step that reaches the goal pay
  ``-Phi``, which a short-sighted learner reads as "success costs".

When a chunk ends without termination (a time limit, or a chunk boundary) ``Phi(s_{t+1})``
is kept under ``"ng"``, because PPO bootstraps the value there. The artificial last timestep
PPO appends (reward 0, masked out of the loss) is left untouched.

Env slots: RLlib's learner sees episode chunks, not env slots, so the env runners tag each
episode with its slot and its order in it (:mod:`rl_bk.callbacks.env_slot`, installed by
the config); chunks of one slot are put back in time order here
(:func:`~rl_bk.connectors.learner.episode_chunks.by_env_slot`). An untagged episode (a
config whose ``on_episode_start`` callback was replaced) is a slot of its own; the
``env_slots`` metric counts the tagged slots of each batch.

Windows: a potential of state t reads the states before it (the source's ``horizon``).
RLlib cuts an episode into one chunk per train batch; the states before a chunk's first are
kept and put in front of it (:mod:`.window_history`), and an episode's first windows are
filled with its first state and action, as BK's buffer is (``episode_start``).

Scale (``normalization``):

- ``"discounted-sum-std"`` (BK's, from RND): Phi is divided by the running standard
  deviation of its discounted running sum ``f_t = gamma * f_{t-1} + Phi(s_t)``, one sum per
  env slot running on across episodes, over all states seen so far. No mean is removed.
- ``"std"``: the running std of Phi itself. For a dense potential in [0, 1] this is ~40x
  smaller than BK's divisor (with gamma 0.99), so shaping is ~40x stronger.
- ``"none"``: Phi as the source gives it.

The carried potential, BK's way (``"bk"``): BK keeps each slot's last potential of a batch,
already divided by that batch's divisor, as the first row of the next batch
(``intrinsic_rewards[-1:]``); it enters that batch's running sum a second time and is divided
by the new divisor again before ``F`` of the slot's first step subtracts it. Both are kept
here, as BK's code does them: with a divisor well above 1 the subtracted value nearly
vanishes, and the first step of each batch in each slot earns nearly ``gamma * Phi(s_t)``.

The running statistics, the carried potentials and the windows' history are not part of
RLlib's checkpoints: after a restore they start afresh (one batch re-estimates the scale).

Why ``extrinsic_coeff`` (BK: 10): BK scales the environment's reward by 10 for every bk-*
method, which keeps the success reward the larger signal next to the shaping term.

The env runners still report the environment's (extrinsic) return; this term logs the mean
shaping term per step and per chunk, the potential's mean, and the divisor it used.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from rl_bk.algorithms.bk_ppo.window_history import EpisodeStart, WindowHistory, extended
from rl_bk.connectors.learner.episode_chunks import (
    SLOT_STREAM,
    EpisodeChunk,
    by_env_slot,
    in_episode_order,
)
from rl_bk.knowledge.trajectory import Chunk
from rl_bk.running_stats import RewardForwardFilter, RunningStd

#: The train batch's chunks -> one potential per state (``len(chunk) + 1``) for each chunk,
#: in one call. Any :class:`~rl_bk.algorithms.bk_ppo.potential.PotentialSource` is one.
PotentialFn = Callable[[Sequence[Chunk]], Sequence[np.ndarray]]

Convention = Literal["bk", "ng"]
Normalization = Literal["discounted-sum-std", "std", "none"]
CONVENTIONS: tuple[str, ...] = ("bk", "ng")
NORMALIZATIONS: tuple[str, ...] = ("discounted-sum-std", "std", "none")

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
        each state's from its whole window (:mod:`.window_history`). Updates the kept
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
            ended = not stream.startswith(SLOT_STREAM) and found[members[-1]].terminated
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
                ENV_SLOTS: float(sum(s.startswith(SLOT_STREAM) for s in streams)),
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
