"""Behaviour cloning of a dataset into an RLModule's policy head: the data a ``bc`` knowledge
artifact holds (``bc.npz``: every state-action pair of the dataset's episodes, with each pair's
episode index, so the held-out split is by episode, as PTGM's low-level cloning splits it),
and the supervised fit, PTGM's ``fit_classifier`` on the module's action logits
(:func:`clone_policy`; the value head is left as it is).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from rl_bk.knowledge.trajectory import Chunk
from rl_bk.methods.ptgm.pretraining.low_level import (
    fit_classifier,
    majority_accuracy,
    split_by_episode,
)

BC_FILE = "bc.npz"


def write_bc_data(episodes: Sequence[Chunk], folder: str | Path) -> dict:
    """Writes the state-action pairs of ``episodes`` to ``folder/bc.npz``; returns counts."""
    steps = [ep for ep in episodes if len(ep)]
    if not steps:
        raise ValueError("no state-action pairs: the dataset's episodes hold no steps")
    obs = np.concatenate([ep.observations[: len(ep)] for ep in steps]).astype(np.float32)
    actions = np.concatenate([ep.actions for ep in steps]).astype(np.int64)
    episode = np.concatenate([np.full(len(ep), i, np.int64) for i, ep in enumerate(steps)])
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(folder / BC_FILE, observations=obs, actions=actions, episode=episode)
    return {"pairs": len(actions), "episodes": len(steps), "obs_dim": int(obs.shape[1])}


def read_bc_data(folder: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(observations, actions, episode index)`` of a ``bc`` artifact."""
    path = Path(folder) / BC_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"no behaviour-cloning data at {path}: build it with "
            "`rl-bk knowledge build --task <task> --kinds bc`"
        )
    with np.load(path) as data:
        return data["observations"], data["actions"], data["episode"]


class PolicyLogits(nn.Module):
    """An RLModule's action logits as a plain classifier: ``forward(obs) -> (B, n_actions)``."""

    def __init__(
        self, module: nn.Module, obs_key: str = "obs", logits_key: str = "action_dist_inputs"
    ) -> None:
        super().__init__()
        self.module, self.obs_key, self.logits_key = module, obs_key, logits_key

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.module.forward_train({self.obs_key: obs})[self.logits_key]


def clone_policy(
    module: nn.Module,
    observations: np.ndarray,
    actions: np.ndarray,
    episode: np.ndarray,
    *,
    epochs: int = 20,
    batch_size: int = 256,
    lr: float = 1e-3,
    holdout: float = 0.1,
    seed: int = 0,
) -> dict:
    """Fits ``module``'s policy to the dataset's actions, in place; returns the report
    (held-out accuracy and NLL beside the majority-action baseline)."""
    obs_dim = getattr(getattr(module, "observation_space", None), "shape", None)
    if obs_dim is not None and tuple(obs_dim) != tuple(observations.shape[1:]):
        raise ValueError(
            f"the dataset's observations are {observations.shape[1:]}, the "
            f"policy reads {tuple(obs_dim)}: clone a dataset of the same env "
            "family and observation"
        )
    n_episodes = int(episode.max()) + 1 if len(episode) else 0
    train_eps, held_eps = split_by_episode(n_episodes, holdout, seed)
    train, held = np.isin(episode, train_eps), np.isin(episode, held_eps)
    train_examples = ((observations[train],), actions[train])
    held_out = ((observations[held],), actions[held]) if held.any() else None
    torch.manual_seed(seed)
    classifier = PolicyLogits(module)
    report = fit_classifier(
        classifier,
        lambda _epoch: train_examples,
        held_out,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        rng=np.random.default_rng(seed),
        name="bc",
    )
    module.train()
    report.update(
        {
            "pairs": len(actions),
            "train_pairs": int(train.sum()),
            "held_out_pairs": int(held.sum()),
            "held_out_majority_accuracy": None
            if held_out is None
            else majority_accuracy(actions[train], actions[held]),
        }
    )
    return report
