"""PTGM's low-level policy P(a | s, g), trained by behaviour cloning with hindsight goals: an
MLP over the flat observation and the goal, where PTGM fine-tunes STEVE-1 (VPT) on MineCLIP
goals; the goal of a state is the embedding of the state ``k`` steps later, a real dataset
state as the codebook's goals are. The shared pieces (episode split, MLP, observation
normalisation, training loop) live here and the goal prior reuses them. Details:
docs/methods.md#ptgms-pre-training-and-its-kl.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from rl_bk.knowledge.trajectory import Chunk

logger = logging.getLogger(__name__)

ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh}


def mlp(n_in: int, hidden: Sequence[int], n_out: int, activation: str) -> nn.Sequential:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(n_in, int(width)), ACTIVATIONS[activation]()]
        n_in = int(width)
    layers.append(nn.Linear(n_in, n_out))
    return nn.Sequential(*layers)


class ObsNormalizer(nn.Module):
    """Per-feature standardisation with statistics fixed from the training data (buffers, so
    they travel with the state dict). Constant features get std 1."""

    def __init__(self, obs_dim: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(obs_dim))
        self.register_buffer("std", torch.ones(obs_dim))

    def fit(self, obs: np.ndarray) -> None:
        obs = np.asarray(obs, dtype=np.float64)
        std = obs.std(0)
        self.mean.copy_(torch.as_tensor(obs.mean(0), dtype=torch.float32))
        self.std.copy_(torch.as_tensor(np.where(std > 1e-6, std, 1.0), dtype=torch.float32))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return (obs - self.mean) / self.std


class GoalConditionedPolicy(nn.Module):
    """``forward(obs (B, O), goal (B, D)) -> (B, n_actions)`` logits; an MLP over the
    normalised observation concatenated with the goal vector."""

    def __init__(
        self,
        obs_dim: int,
        goal_dim: int,
        n_actions: int,
        hidden: Sequence[int] = (256, 256),
        activation: str = "relu",
    ) -> None:
        super().__init__()
        self.config = {
            "obs_dim": int(obs_dim),
            "goal_dim": int(goal_dim),
            "n_actions": int(n_actions),
            "hidden": [int(h) for h in hidden],
            "activation": activation,
        }
        self.norm = ObsNormalizer(obs_dim)
        self.net = mlp(obs_dim + goal_dim, hidden, n_actions, activation)

    def forward(self, obs: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([self.norm(obs), goal], dim=-1))


def split_by_episode(n_episodes: int, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, held-out) episode indices: ``round(holdout * n)`` held out, at least 1 when
    ``holdout > 0`` and there are 2+ episodes; the same seed gives the same split."""
    if not 0.0 <= holdout < 1.0:
        raise ValueError(f"holdout must be in [0, 1), got {holdout}")
    order = np.random.default_rng(seed).permutation(n_episodes)
    n_held = 0 if holdout == 0 or n_episodes < 2 else max(1, round(holdout * n_episodes))
    return np.sort(order[n_held:]), np.sort(order[:n_held])


def future_index(n_steps: int, min_gap: int, max_gap: int, rng: np.random.Generator) -> np.ndarray:
    """For states ``0..n_steps-1`` (those with an action): ``t + k``, k ~ U[min_gap, max_gap],
    clipped to the last state ``n_steps``."""
    if not 1 <= min_gap <= max_gap:
        raise ValueError(f"need 1 <= min_gap <= max_gap, got {min_gap}, {max_gap}")
    gaps = rng.integers(min_gap, max_gap + 1, size=n_steps)
    return np.minimum(np.arange(n_steps) + gaps, n_steps)


def hindsight_examples(
    episodes: Sequence[Chunk],
    embeddings: Sequence[np.ndarray],
    min_gap: int,
    max_gap: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(obs (K, O), goals (K, D), actions (K,))``: one example per state with an action;
    its goal is the embedding of the state ``k`` steps later (see :func:`future_index`)."""
    obs, goals, actions = [], [], []
    for ep, emb in zip(episodes, embeddings):
        n = len(ep)
        if len(emb) != n + 1:
            raise ValueError(f"episode of {n} steps needs {n + 1} embeddings, got {len(emb)}")
        target = future_index(n, min_gap, max_gap, rng)
        obs.append(ep.observations[:n])
        goals.append(np.asarray(emb, np.float32)[target])
        actions.append(ep.actions)
    if not obs or sum(len(a) for a in actions) == 0:
        raise ValueError("no examples: the episodes hold no steps")
    return (
        np.concatenate(obs).astype(np.float32),
        np.concatenate(goals).astype(np.float32),
        np.concatenate(actions).astype(np.int64),
    )


Examples = tuple[tuple[np.ndarray, ...], np.ndarray]  # (model inputs, integer labels)


def evaluate(model: nn.Module, examples: Examples, batch_size: int = 4096) -> tuple[float, float]:
    """(accuracy, mean NLL) of ``model`` on ``examples``."""
    inputs, labels = examples
    correct, nll = 0, 0.0
    model.eval()
    with torch.no_grad():
        for i in range(0, len(labels), batch_size):
            logits = model(*(torch.from_numpy(x[i : i + batch_size]) for x in inputs))
            y = torch.from_numpy(labels[i : i + batch_size])
            correct += int((logits.argmax(-1) == y).sum())
            nll += float(nn.functional.cross_entropy(logits, y, reduction="sum"))
    return correct / max(1, len(labels)), nll / max(1, len(labels))


def fit_classifier(
    model: nn.Module,
    train_examples: Callable[[int], Examples],
    held_out: Examples | None,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    rng: np.random.Generator,
    name: str,
) -> dict:
    """Cross-entropy (NLL of the softmax), Adam, shuffled minibatches; ``train_examples(epoch)``
    gives that epoch's examples.

    With held-out examples, the weights of the epoch with the lowest held-out NLL are kept
    (the goal prior overfits within a few epochs on a BabyAI dataset: held-out NLL 2.48 at
    epoch 2, 2.69 at epoch 20, where goal frequencies alone give 2.68). Returns the last
    epoch's mean loss, the chosen epoch, accuracy on a fresh draw of training examples, and
    held-out accuracy and mean NLL of the kept weights."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    loss_mean = float("nan")
    best_nll, best_epoch, best_state = float("inf"), epochs, None
    for epoch in range(epochs):
        inputs, labels = train_examples(epoch)
        model.train()
        order = rng.permutation(len(labels))
        total = 0.0
        for i in range(0, len(order), batch_size):
            idx = order[i : i + batch_size]
            logits = model(*(torch.from_numpy(x[idx]) for x in inputs))
            loss = loss_fn(logits, torch.from_numpy(labels[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        loss_mean = total / max(1, len(order))
        if held_out is not None and len(held_out[1]):
            nll = evaluate(model, held_out)[1]
            if nll < best_nll:
                best_nll, best_epoch = nll, epoch + 1
                best_state = copy.deepcopy(model.state_dict())
        logger.debug("%s epoch %d: loss %.4f", name, epoch + 1, loss_mean)
    if best_state is not None:
        model.load_state_dict(best_state)
    held_acc, held_nll = (None, None) if held_out is None else evaluate(model, held_out)
    return {
        "train_loss": loss_mean,
        "epoch_kept": best_epoch,
        "train_accuracy": evaluate(model, train_examples(epochs))[0],
        "held_out_accuracy": held_acc,
        "held_out_nll": held_nll,
    }


def freeze(model: nn.Module) -> nn.Module:
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def majority_accuracy(train_labels: np.ndarray, held_labels: np.ndarray) -> float:
    """Accuracy on ``held_labels`` of always answering the commonest training label."""
    majority = int(np.bincount(train_labels).argmax())
    return float((held_labels == majority).mean()) if len(held_labels) else float("nan")


def train_low_level(
    episodes: Sequence[Chunk],
    embeddings: Sequence[np.ndarray],
    *,
    n_actions: int | None = None,
    min_gap: int = 1,
    max_gap: int = 8,
    epochs: int = 20,
    batch_size: int = 256,
    lr: float = 1e-3,
    hidden: Sequence[int] = (256, 256),
    activation: str = "relu",
    holdout: float = 0.1,
    seed: int = 0,
) -> tuple[GoalConditionedPolicy, dict]:
    """Behaviour cloning of P(a | s, g) with hindsight goals; returns the frozen policy and a
    report (held-out accuracy on held-out episodes, beside the majority-action baseline).
    ``n_actions``: the env's action count (default: the largest action seen + 1)."""
    if len(episodes) != len(embeddings):
        raise ValueError(f"{len(episodes)} episodes but {len(embeddings)} embedding arrays")
    train_ids, held_ids = split_by_episode(len(episodes), holdout, seed)
    train_eps = [episodes[i] for i in train_ids]
    train_emb = [embeddings[i] for i in train_ids]
    rng = np.random.default_rng([seed, 1])
    held = None
    if len(held_ids):
        o, g, a = hindsight_examples(
            [episodes[i] for i in held_ids],
            [embeddings[i] for i in held_ids],
            min_gap,
            max_gap,
            np.random.default_rng([seed, 2]),
        )
        held = ((o, g), a)

    pending: list[Examples] = []

    def draw(_epoch: int) -> Examples:
        if pending:  # the first draw, already made to size the model
            return pending.pop()
        o, g, a = hindsight_examples(train_eps, train_emb, min_gap, max_gap, rng)
        return (o, g), a

    first = draw(0)
    pending.append(first)
    all_actions = np.concatenate([ep.actions for ep in episodes])
    n_act = int(n_actions if n_actions is not None else all_actions.max() + 1)
    if all_actions.min() < 0 or all_actions.max() >= n_act:
        raise ValueError(f"actions outside [0, {n_act})")
    torch.manual_seed(seed)
    model = GoalConditionedPolicy(
        first[0][0].shape[1], first[0][1].shape[1], n_act, hidden, activation
    )
    model.norm.fit(np.concatenate([ep.observations for ep in train_eps]))
    report = fit_classifier(
        model, draw, held, epochs=epochs, batch_size=batch_size, lr=lr, rng=rng, name="low-level"
    )
    report.update(
        {
            "held_out_majority_accuracy": None
            if held is None
            else majority_accuracy(first[1], held[1]),
            "train_episodes": len(train_ids),
            "held_out_episodes": len(held_ids),
            "train_examples": len(first[1]),
            "held_out_examples": 0 if held is None else len(held[1]),
            "n_actions": n_act,
            "gap": [min_gap, max_gap],
        }
    )
    return freeze(model), report
