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

- ``"bk"`` (BK's ``train_rs.py``, the default): ``F_t = gamma * Phi(s_t) - Phi(s_{t-1})``.
  Each potential difference is paid one step after the step that caused it, and the step that
  ends an episode is never charged the potential of the state it leaves: reaching the goal
  from a state of high potential costs nothing. BK pays the remaining ``-Phi(s_T)`` on the
  first step of the env's next episode; here an episode's first step earns
  ``(gamma - 1) * Phi(s_0)`` instead (neither depends on the agent's action there).
- ``"ng"`` (Ng et al. 1999): ``F_t = gamma * Phi(s_{t+1}) - Phi(s_t)`` with
  ``Phi(terminal) = 0``. The discounted return changes by ``-Phi(s_0)`` only, so the optimal
  policy is unchanged; but a positive potential makes the step that reaches the goal pay
  ``-Phi``, which a short-sighted learner reads as "success costs".

When a chunk ends without termination (a time limit, or a chunk boundary) ``Phi(s_{t+1})``
is kept in both, because PPO bootstraps the value there. The artificial last timestep PPO
appends (reward 0, masked out of the loss) is left untouched.

Episodes that span train batches: RLlib cuts an episode into chunks, one per train batch, and
a potential that reads a window of history gives the first state of the next chunk a value
computed from less history than the same state got at the end of the previous chunk; the
shaping would then not telescope across the cut. So the last potentials of each unfinished
episode are kept, keyed by the episode's own id (not the chunk's, which RLlib renames per
batch: :mod:`rl_bk.connectors.learner.episode_chunks`), and the next chunk starts from them.

Scale (``normalization``):

- ``"discounted-sum-std"`` (BK's, from RND): Phi is divided by the running standard
  deviation of its discounted running sum ``f_t = gamma * f_{t-1} + Phi(s_t)``, over all
  states seen so far. No mean is removed. BK runs one such sum per env slot across episodes;
  RLlib's chunks do not say which slot they came from, so here the sum restarts with each
  episode (:class:`~rl_bk.running_stats.RewardForwardFilter`).
- ``"std"``: the running std of Phi itself. For a dense potential in [0, 1] this is ~40x
  smaller than BK's divisor (with gamma 0.99), so shaping is ~40x stronger.
- ``"none"``: Phi as the source gives it.

The running statistics and the kept potentials are not part of RLlib's checkpoints: after a
restore they start afresh (one batch re-estimates the scale).

Why ``extrinsic_coeff`` (BK: 10): BK scales the environment's reward by 10 for every bk-*
method, which keeps the success reward the larger signal next to the shaping term.

The env runners still report the environment's (extrinsic) return; this term logs the mean
shaping term per step and per chunk, the potential's mean, and the divisor it used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from rl_bk.connectors.learner.episode_chunks import EpisodeChunk, in_episode_order
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
    with every real state's raw potential, per episode stream, in time order."""

    def __init__(self, normalization: Normalization, gamma: float):
        if normalization not in NORMALIZATIONS:
            raise ValueError(f"unknown potential normalization {normalization!r}; valid: "
                             f"{', '.join(NORMALIZATIONS)}")  # fmt: skip
        self.normalization = normalization
        self.stats = RunningStd()
        self.filter = RewardForwardFilter(gamma) if normalization == "discounted-sum-std" else None

    def update(self, streams: Sequence[tuple[str, np.ndarray]]) -> float:
        """Adds each ``(episode id, potentials)`` stream; returns the divisor to use now."""
        if self.normalization == "none":
            return 1.0
        values = [v for _, v in streams]
        if self.filter is not None:
            values = self.filter.update(streams)
        if values:
            self.stats.update(np.concatenate(values))
        return self.stats.std + self.stats.epsilon


class PotentialShaping:
    """The shaping term ``coeff * F_t`` (see the module), a
    :class:`~rl_bk.connectors.learner.reward_rewrite.RewardTerm` of
    :class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards`."""

    def __init__(
        self,
        *,
        potential_fn: PotentialFn,
        gamma: float,
        coeff: float = 1.0,
        normalization: Normalization = "discounted-sum-std",
        convention: Convention = "bk",
    ):
        if convention not in CONVENTIONS:
            raise ValueError(f"unknown shaping convention {convention!r}; valid: "
                             f"{', '.join(CONVENTIONS)}")  # fmt: skip
        self.potential_fn, self.gamma, self.coeff = potential_fn, gamma, coeff
        self.convention = convention
        self.scale = PotentialScale(normalization, gamma)
        #: episode id -> raw (Phi of the second-to-last, Phi of the last state) of its latest
        #: chunk, for the episode's next chunk; only unfinished episodes are kept.
        self._carry: dict[str, tuple[float, float]] = {}
        self._metrics: dict[str, float] = {}

    def _potentials(self, found: Sequence[EpisodeChunk]) -> list[np.ndarray | None]:
        """Raw potentials per chunk (None for chunks without real steps), in batch order."""
        live = [i for i, c in enumerate(found) if c.steps > 0]
        raw = self.potential_fn([found[i].as_chunk() for i in live])
        out: list[np.ndarray | None] = [None] * len(found)
        for i, phi in zip(live, raw):
            out[i] = np.array(phi, dtype=np.float64, copy=True)
        return out

    def __call__(self, found: Sequence[EpisodeChunk], rl_module: Any = None) -> list[np.ndarray]:
        found = list(found)
        potentials = self._potentials(found)

        # Continue each episode from its previous chunk (time order within the batch too).
        carry, previous = self._carry, {}
        next_carry: dict[str, tuple[float, float]] = {}
        for i in in_episode_order(found):
            piece, phi = found[i], potentials[i]
            if phi is None:
                continue
            kept = next_carry.get(piece.episode_id) or carry.get(piece.episode_id)
            if kept is not None and not piece.starts_episode:
                previous[i] = kept[0]
                phi[0] = kept[1]  # the same state, valued with the longer history it had
            if not piece.terminated:
                before_last = phi[-2] if len(phi) > 1 else phi[-1]
                next_carry[piece.episode_id] = (float(before_last), float(phi[-1]))
        self._carry = next_carry  # an episode absent from this batch has ended

        divisor = self.scale.update([
            (found[i].episode_id, potentials[i][: found[i].steps])  # type: ignore[index]
            for i in in_episode_order(found) if potentials[i] is not None
        ])  # fmt: skip

        added: list[np.ndarray] = []
        bonus_total, steps, chunks = 0.0, 0, 0
        for i, piece in enumerate(found):
            phi = potentials[i]
            if phi is None:
                added.append(np.zeros(0))
                continue
            prev = previous.get(i)
            bonus = shaping_terms(
                phi / divisor, gamma=self.gamma, coeff=self.coeff, terminated=piece.terminated,
                convention=self.convention, previous=None if prev is None else prev / divisor,
            )  # fmt: skip
            added.append(bonus)
            bonus_total += float(bonus.sum())
            steps += piece.steps
            chunks += 1
        used = np.concatenate([p for p in potentials if p is not None])
        self._metrics = {
            SHAPING_REWARD_MEAN: bonus_total / steps, SHAPING_RETURN_MEAN: bonus_total / chunks,
            POTENTIAL_MEAN: float(used.mean()) / divisor, POTENTIAL_DIVISOR: divisor,
        } if steps else {}  # fmt: skip
        source_metrics = getattr(self.potential_fn, "metrics", None)
        if steps and callable(source_metrics):
            self._metrics.update({f"potential/{k}": v for k, v in source_metrics().items()})
        return added

    def batch_metrics(self) -> dict[str, float]:
        return self._metrics
