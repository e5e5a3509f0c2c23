"""ONI-Ranking and offline Motif: a per-message reward learned from pairwise LLM preferences
with a Bradley-Terry model, on soft labels as in Motif (a tie is 0.5, so it pulls the two
rewards together instead of being thrown away). At RL time the reward is normalised and
thresholded, ``r_n * (r_n > threshold)``, ONI's and Motif's shape, under which a negative
threshold leaves some rewards negative (:func:`thresholded_reward`); Motif's threshold is a
quantile (:func:`quantile_threshold`). Details: docs/methods.md#onis-reward-models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import torch
from torch import nn

from rl_bk.methods.oni.caption_models.char_cnn import CharCNNEncoder, mlp_head
from rl_bk.methods.oni.caption_models.message_bytes import MESSAGE_LENGTH

#: ONI's default threshold on the normalised reward.
DEFAULT_NORMALISED_THRESHOLD = -0.5

_Array = TypeVar("_Array", np.ndarray, torch.Tensor)


def preference_target(choice: str) -> float:
    """P(B preferred) from a preference label: the soft target of a Bradley-Terry fit (ONI-
    Ranking online, Motif offline); a tie is 0.5."""
    return {"A": 0.0, "B": 1.0}.get(choice, 0.5)


class MessageRanker(nn.Module):
    """``(B, length)`` message bytes -> ``(B,)`` scalar rewards."""

    def __init__(
        self,
        length: int = MESSAGE_LENGTH,
        hidden: Sequence[int] = (512, 512),
        dropout: float = 0.0,  # a reward that changes between forward passes helps no one
    ):
        super().__init__()
        self.encoder = CharCNNEncoder(length)
        self.head = mlp_head(self.encoder.out_dim, 1, hidden, dropout)

    def forward(self, messages: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(messages)).squeeze(-1)


def bradley_terry_loss(
    reward_a: torch.Tensor, reward_b: torch.Tensor, target_b: torch.Tensor
) -> torch.Tensor:
    """Mean soft-label cross-entropy over the pair logits ``(reward_a, reward_b)``.

    ``target_b`` = P(B preferred): 1.0 = B, 0.0 = A, 0.5 = tie (any value in [0, 1])."""
    log_p = torch.log_softmax(torch.stack([reward_a, reward_b], dim=-1), dim=-1)
    target = target_b.to(log_p.dtype)
    return -(log_p[..., 0] * (1.0 - target) + log_p[..., 1] * target).mean()


def pair_accuracy(reward_a: torch.Tensor, reward_b: torch.Tensor, target_b: torch.Tensor) -> float:
    """Fraction of decided pairs (``target_b != 0.5``) whose preferred side has the strictly
    higher reward; equal rewards count as wrong. nan when no pair is decided."""
    decided = target_b != 0.5
    if not bool(decided.any()):
        return float("nan")
    a, b = reward_a[decided], reward_b[decided]
    correct = torch.where(target_b[decided] > 0.5, b > a, a > b)
    return correct.float().mean().item()


class RunningMeanStd:
    """Mean and (population) variance of everything seen, updated batch by batch.

    Batches merge with the parallel form of Welford's algorithm (Chan et al.), so the result
    equals ``np.mean`` / ``np.std`` over all values seen, whatever the batch sizes. ONI seeds
    its count with 1e-4 and its variance with 1, which biases the first batches; this one
    starts empty (mean 0, variance 1 before any data, i.e. no rescaling). ``std`` has a floor
    so that a constant reward does not divide by zero.
    """

    def __init__(self, shape: tuple[int, ...] = (), min_std: float = 1e-8):
        self.shape = tuple(shape)
        self.min_std = min_std
        self.mean = np.zeros(self.shape, np.float64)
        self.var = np.ones(self.shape, np.float64)
        self.count = 0.0

    @property
    def std(self) -> np.ndarray:
        return np.maximum(np.sqrt(self.var), self.min_std)

    def update(self, x: np.ndarray | torch.Tensor | Sequence[float]) -> None:
        """Adds a batch ``(N, *shape)``; an empty batch changes nothing."""
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu().numpy()
        x = np.asarray(x, np.float64).reshape((-1, *self.shape))
        if len(x):
            self.update_from_moments(x.mean(axis=0), x.var(axis=0), len(x))

    def update_from_moments(
        self, batch_mean: np.ndarray, batch_var: np.ndarray, batch_count: float
    ) -> None:
        """Merges a batch given by its mean, population variance and size (e.g. another
        learner's statistics)."""
        if batch_count <= 0:
            return
        total = self.count + batch_count
        delta = batch_mean - self.mean
        m2 = (
            self.var * self.count
            + batch_var * batch_count
            + delta**2 * self.count * batch_count / total
        )
        self.mean = self.mean + delta * batch_count / total
        self.var = m2 / total
        self.count = total

    def state_dict(self) -> dict:
        """Plain Python values (floats, or lists for a vector shape), JSON-able."""
        return {
            "shape": list(self.shape),
            "min_std": self.min_std,
            "mean": self.mean.tolist(),
            "var": self.var.tolist(),
            "count": float(self.count),
        }

    def load_state_dict(self, state: dict) -> None:
        self.shape = tuple(state["shape"])
        self.min_std = float(state["min_std"])
        self.mean = np.asarray(state["mean"], np.float64).reshape(self.shape)
        self.var = np.asarray(state["var"], np.float64).reshape(self.shape)
        self.count = float(state["count"])


def thresholded_reward(
    raw: _Array, mean: float | np.ndarray, std: float | np.ndarray, threshold: float
) -> _Array:
    """``r_n * (r_n > threshold)`` with ``r_n = (raw - mean) / std`` (numpy or torch in, the
    same out). Between ``threshold`` and 0 the reward stays negative, as in ONI/Motif."""
    # Keep the caller's float dtype: running statistics are float64, rewards float32.
    if isinstance(raw, torch.Tensor):
        raw = raw if raw.is_floating_point() else raw.float()
        mean = torch.as_tensor(mean, dtype=raw.dtype, device=raw.device)
        std = torch.as_tensor(std, dtype=raw.dtype, device=raw.device)
        normalised = (raw - mean) / std
    else:
        raw = np.asarray(raw)
        dtype = raw.dtype if np.issubdtype(raw.dtype, np.floating) else np.float64
        normalised = ((raw - mean) / std).astype(dtype, copy=False)
    return normalised * (normalised > threshold)


def quantile_threshold(normalised_values: np.ndarray | Sequence[float], q: float) -> float:
    """The ``q``-quantile of normalised rewards, as a threshold: 0.5 keeps the better half
    (strictly above the median), 0.9 the best tenth (linear interpolation between values)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    values = np.asarray(normalised_values, np.float64).ravel()
    if not len(values):
        raise ValueError("no values to take a quantile of")
    return float(np.quantile(values, q))
