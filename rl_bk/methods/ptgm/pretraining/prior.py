"""PTGM's goal prior π_p(goal | s): which codebook goal the dataset's behaviour pursues next,
trained as classification on the code of a state a few steps ahead (PTGM: 15–200 steps; here
a setting, default 1–8, as rl-bk's episodes are short). Its calibration matters as much as its
accuracy, so the report gives both beside their baselines; ``sees_code`` also gives it a
prediction of the current state's code. Details: docs/methods.md#ptgms-pre-training-and-its-kl.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from rl_bk.knowledge.trajectory import Chunk
from rl_bk.methods.ptgm.pretraining.codebook import Codebook, assign
from rl_bk.methods.ptgm.pretraining.low_level import (
    Examples,
    ObsNormalizer,
    fit_classifier,
    freeze,
    future_index,
    majority_accuracy,
    mlp,
    split_by_episode,
)


class GoalPrior(nn.Module):
    """``forward(obs (B, O)) -> (B, n_goals)`` logits; an MLP over the normalised observation
    (with ``sees_code``, and the code head's distribution over the current state's code)."""

    def __init__(
        self,
        obs_dim: int,
        n_goals: int,
        hidden: Sequence[int] = (256, 256),
        activation: str = "relu",
        sees_code: bool = False,
    ) -> None:
        super().__init__()
        self.config = {
            "obs_dim": int(obs_dim),
            "n_goals": int(n_goals),
            "hidden": [int(h) for h in hidden],
            "activation": activation,
            "sees_code": bool(sees_code),
        }
        self.norm = ObsNormalizer(obs_dim)
        self.code_head = mlp(obs_dim, hidden, n_goals, activation) if sees_code else None
        self.net = mlp(obs_dim + (n_goals if sees_code else 0), hidden, n_goals, activation)

    def code_logits(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, n_goals)``: the code head's logits for the current state's code."""
        if self.code_head is None:
            raise ValueError("this prior does not read the current code (sees_code=False)")
        return self.code_head(self.norm(obs))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = self.norm(obs)
        if self.code_head is not None:
            x = torch.cat([x, torch.softmax(self.code_head(x), -1)], -1)
        return self.net(x)


class _CodeHead(nn.Module):
    """The prior's code head as a classifier, for :func:`fit_classifier`."""

    def __init__(self, prior: GoalPrior) -> None:
        super().__init__()
        self.prior = prior

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.prior.code_logits(obs)


def _codes(codebook: Codebook, embeddings: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [assign(codebook, e) if len(e) else np.zeros(0, np.int64) for e in embeddings]


def marginal_nll(train_labels: np.ndarray, held_labels: np.ndarray, n_goals: int) -> float:
    """Mean NLL on ``held_labels`` of the training label frequencies (add-one smoothed): the
    calibration baseline an observation-blind prior would reach."""
    p = (np.bincount(train_labels, minlength=n_goals) + 1.0) / (len(train_labels) + n_goals)
    return float(-np.log(p[held_labels]).mean()) if len(held_labels) else float("nan")


def prior_examples(
    episodes: Sequence[Chunk],
    embeddings: Sequence[np.ndarray],
    codebook: Codebook,
    min_gap: int,
    max_gap: int,
    rng: np.random.Generator,
    *,
    codes: Sequence[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(obs (K, O), labels (K,))``: one example per state with an action; the label is the
    codebook index of the state ``k`` steps later (``k`` as in
    :func:`~rl_bk.methods.ptgm.pretraining.low_level.future_index`). ``codes``: each state's
    code, if
    already computed."""
    codes = _codes(codebook, embeddings) if codes is None else codes
    obs, labels = [], []
    for ep, code in zip(episodes, codes):
        n = len(ep)
        if len(code) != n + 1:
            raise ValueError(f"episode of {n} steps needs {n + 1} embeddings, got {len(code)}")
        obs.append(ep.observations[:n])
        labels.append(code[future_index(n, min_gap, max_gap, rng)])
    if not obs or sum(len(x) for x in labels) == 0:
        raise ValueError("no examples: the episodes hold no steps")
    return np.concatenate(obs).astype(np.float32), np.concatenate(labels).astype(np.int64)


def train_prior(
    episodes: Sequence[Chunk],
    embeddings: Sequence[np.ndarray],
    codebook: Codebook,
    *,
    min_gap: int = 1,
    max_gap: int = 8,
    epochs: int = 20,
    batch_size: int = 256,
    lr: float = 1e-3,
    hidden: Sequence[int] = (256, 256),
    activation: str = "relu",
    holdout: float = 0.1,
    seed: int = 0,
    sees_code: bool = False,
) -> tuple[GoalPrior, dict]:
    """NLL training of the goal prior; returns the frozen prior and a report. The episode split
    depends only on ``seed`` and the episode count, so it matches :func:`train_low_level`'s.
    ``sees_code``: the code head is fitted first (on each state's own code), then frozen."""
    if len(episodes) != len(embeddings):
        raise ValueError(f"{len(episodes)} episodes but {len(embeddings)} embedding arrays")
    codes = _codes(codebook, embeddings)
    train_ids, held_ids = split_by_episode(len(episodes), holdout, seed)
    train_eps, train_codes = [episodes[i] for i in train_ids], [codes[i] for i in train_ids]
    rng = np.random.default_rng([seed, 3])
    held = None
    current_code_acc = None
    held_current = None
    if len(held_ids):
        held_eps, held_codes = [episodes[i] for i in held_ids], [codes[i] for i in held_ids]
        o, y = prior_examples(
            held_eps,
            [],
            codebook,
            min_gap,
            max_gap,
            np.random.default_rng([seed, 4]),
            codes=held_codes,
        )
        held = ((o,), y)
        current = np.concatenate([c[: len(ep)] for ep, c in zip(held_eps, held_codes)])
        current_code_acc = float((current == y).mean())
        held_current = ((o,), current)
    pending: list[Examples] = []

    def draw(_epoch: int) -> Examples:
        if pending:
            return pending.pop()
        o, y = prior_examples(train_eps, [], codebook, min_gap, max_gap, rng, codes=train_codes)
        return (o,), y

    first = draw(0)
    pending.append(first)
    torch.manual_seed(seed + 1)
    model = GoalPrior(first[0][0].shape[1], len(codebook), hidden, activation, sees_code)
    model.norm.fit(np.concatenate([ep.observations for ep in train_eps]))
    code_report = None
    if sees_code:
        current = (
            (first[0][0],),
            np.concatenate([c[: len(ep)] for ep, c in zip(train_eps, train_codes)]),
        )
        code_report = fit_classifier(
            _CodeHead(model),
            lambda _epoch: current,
            held_current,
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            rng=rng,
            name="prior code head",
        )
        freeze(model.code_head)
    report = fit_classifier(
        model, draw, held, epochs=epochs, batch_size=batch_size, lr=lr, rng=rng, name="prior"
    )
    report.update(
        {
            "held_out_majority_accuracy": None
            if held is None
            else majority_accuracy(first[1], held[1]),
            "held_out_marginal_nll": None
            if held is None
            else marginal_nll(first[1], held[1], len(codebook)),
            "held_out_current_code_accuracy": current_code_acc,
            "train_episodes": len(train_ids),
            "held_out_episodes": len(held_ids),
            "train_examples": len(first[1]),
            "held_out_examples": 0 if held is None else len(held[1]),
            "gap": [min_gap, max_gap],
            "sees_code": sees_code,
            "code_head": code_report,
        }
    )
    return freeze(model), report
