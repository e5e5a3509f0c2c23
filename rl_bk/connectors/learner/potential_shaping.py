"""Potential-based reward shaping, once per train batch, in the learner connector pipeline.

Where it sits: a learner ConnectorV2 piece working on episodes, after PPO's
``AddOneTsToEpisodesAndTruncate`` and before the batch is built, so GAE sees the shaped
rewards. It turns each episode chunk into a :class:`~rl_bk.knowledge.trajectory.Chunk`
(observations, captions and mission from the infos, actions) and rewrites its rewards:

    r'_t = extrinsic_coeff * r_t + coeff * (gamma * Phi(s_{t+1}) - Phi(s_t))   each real step t

with ``Phi(s_{t+1}) = 0`` when step t terminated the episode (a terminal state has no
future, so shaping cannot change which policies are optimal: Ng et al. 1999). When the chunk
ends without termination (a time limit, or a chunk boundary) ``Phi(s_{t+1})`` is kept,
because PPO bootstraps the value there. The artificial last timestep PPO appends (reward 0,
masked out of the loss) is left untouched.

The potentials of the whole train batch come from one call to ``potential_fn``, so a source
that asks a Serve deployment (a reward model, an embedding) makes one request per batch,
never one per env step.

Departures from BK's reference implementation (documented because they change numbers):
- BK computes the shaping term with a one-step shift (Phi of the current and previous
  observation, paid on the next step); here it is paid on the step that caused it.
- BK does not reset Phi at episode ends; here Phi(terminal) = 0, which is what keeps the
  optimal policy unchanged.

Why ``extrinsic_coeff`` (BK: 10): with Phi(terminal) = 0, reaching the goal from a state of
high potential pays ``-Phi`` on that last step. The discounted sum is unchanged (the
shaping telescopes to ``-Phi(s_0)``), but a short-sighted learner sees "touching the goal
costs Phi", and a positive potential normalised to unit std outweighs a success reward of
at most 1: in our first 150k-step runs, oracle BK-Code with ``extrinsic_coeff = 1`` learnt to
hover next to the red ball (success 0.12, below a random policy's 0.17). BK scales the
environment's reward by 10 for every bk-* method, which keeps the success reward the larger
signal; so do we by default (``knowledge.extrinsic_coeff`` in a task file).

Optionally Phi is divided by a running standard deviation of the potentials seen so far
(``normalize=True``), so that one ``coeff`` works across potential sources of very different
scales. The env runners still report the environment's (extrinsic) return; this piece logs
the mean shaping term per step and per episode chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2

from rl_bk.connectors.learner.episode_chunks import chunks_with_real_steps
from rl_bk.knowledge.trajectory import Chunk

#: The train batch's chunks -> one potential per state (``len(chunk) + 1``) for each chunk,
#: in one call. Any :class:`~rl_bk.knowledge.potential.PotentialSource` is one.
PotentialFn = Callable[[Sequence[Chunk]], Sequence[np.ndarray]]

SHAPING_REWARD_MEAN = "shaping_reward_mean"  # per real step, logged by the learner
SHAPING_RETURN_MEAN = "shaping_return_mean"  # sum over a chunk's real steps
POTENTIAL_MEAN = "potential_mean"  # after normalisation


class RunningStd:
    """Welford's running variance of every value seen (batches of any size)."""

    def __init__(self, epsilon: float = 1e-8):
        self.count, self.mean, self.m2, self.epsilon = 0, 0.0, 0.0, epsilon

    def update(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if values.size == 0:
            return
        n, mean = values.size, float(values.mean())
        delta = mean - self.mean
        total = self.count + n
        self.m2 += float(((values - mean) ** 2).sum()) + delta**2 * self.count * n / total
        self.mean += delta * n / total
        self.count = total

    @property
    def std(self) -> float:
        return float(np.sqrt(self.m2 / self.count)) if self.count > 1 else 1.0

    def scale(self, values: np.ndarray) -> np.ndarray:
        return values / (self.std + self.epsilon)


def shaped_rewards(
    rewards: np.ndarray,
    potentials: np.ndarray,
    *,
    gamma: float,
    coeff: float,
    terminated: bool,
    extrinsic_coeff: float = 1.0,
) -> np.ndarray:
    """``extrinsic_coeff * r + coeff * (gamma * Phi' - Phi)`` for one chunk's real steps.

    Args:
        rewards: the chunk's n real rewards.
        potentials: n + 1 potentials, of the observations before and after each step.
        terminated: whether the chunk's last step ended the episode (then Phi' = 0 there).
    """
    phi = np.asarray(potentials, dtype=np.float64)
    if len(phi) != len(rewards) + 1:
        raise ValueError(f"need {len(rewards) + 1} potentials for {len(rewards)} steps, "
                         f"got {len(phi)}")  # fmt: skip
    next_phi = phi[1:].copy()
    if terminated:
        next_phi[-1] = 0.0
    extrinsic = extrinsic_coeff * np.asarray(rewards, dtype=np.float64)
    return extrinsic + coeff * (gamma * next_phi - phi[:-1])


def as_chunk(episode, n: int) -> Chunk:
    """The first ``n`` real steps of an RLlib episode chunk, as knowledge sources read them."""
    infos = list(episode.get_infos(slice(0, n + 1)))
    observations = np.asarray(episode.get_observations(slice(0, n + 1)), dtype=np.float32)
    return Chunk(
        observations=observations.reshape(n + 1, -1),
        captions=[str(i.get("caption", "")) for i in infos],
        actions=np.asarray(episode.get_actions(slice(0, n)), dtype=np.int64).reshape(n),
        rewards=np.asarray(episode.get_rewards(slice(0, n)), dtype=np.float32).reshape(n),
        terminated=bool(episode.is_terminated),
        mission=infos[0].get("mission") if infos else None,
        episode_id=str(episode.id_),
    )


class PotentialBasedShaping(ConnectorV2):
    """Adds ``coeff * (gamma * Phi(s') - Phi(s))`` to every real step's reward (see module)."""

    def __init__(
        self,
        input_observation_space=None,
        input_action_space=None,
        *,
        potential_fn: PotentialFn,
        gamma: float,
        coeff: float = 1.0,
        extrinsic_coeff: float = 1.0,
        normalize: bool = False,
        **kwargs: Any,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.potential_fn, self.gamma, self.coeff = potential_fn, gamma, coeff
        self.extrinsic_coeff = extrinsic_coeff
        self.normalizer = RunningStd() if normalize else None

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None,
                 metrics=None, **kwargs):  # fmt: skip
        found = chunks_with_real_steps(self, episodes, shared_data)
        if not found:
            return batch
        chunks, lengths = [ep for ep, _ in found], [n for _, n in found]
        raw = self.potential_fn([as_chunk(ep, n) for ep, n in zip(chunks, lengths)])
        potentials = [np.asarray(p, dtype=np.float64) for p in raw]
        if self.normalizer is not None:
            self.normalizer.update(np.concatenate(potentials))
            potentials = [self.normalizer.scale(p) for p in potentials]

        bonus_total, steps = 0.0, 0
        for ep, n, phi in zip(chunks, lengths, potentials):
            if n == 0:
                continue
            # A copy: get_rewards may return a view that set_rewards then overwrites.
            rewards = np.array(ep.get_rewards(slice(0, n)), dtype=np.float64, copy=True)
            new = shaped_rewards(rewards, phi, gamma=self.gamma, coeff=self.coeff,
                                 terminated=bool(ep.is_terminated),
                                 extrinsic_coeff=self.extrinsic_coeff)  # fmt: skip
            ep.set_rewards(new_data=new, at_indices=slice(0, n))
            bonus_total += float((new - self.extrinsic_coeff * rewards).sum())
            steps += n
        if metrics is not None and steps:
            metrics.log_value(SHAPING_REWARD_MEAN, bonus_total / steps, window=1)
            metrics.log_value(SHAPING_RETURN_MEAN, bonus_total / len(chunks), window=1)
            all_phi = np.concatenate(potentials)
            metrics.log_value(POTENTIAL_MEAN, float(all_phi.mean()), window=1)
            source_metrics = getattr(self.potential_fn, "metrics", None)
            for key, value in (source_metrics() if callable(source_metrics) else {}).items():
                metrics.log_value(f"potential/{key}", value, window=1)
        return batch
