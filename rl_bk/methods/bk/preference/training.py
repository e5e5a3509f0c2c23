"""BK-Pref, offline: label pairs of dataset segments, then fit the Preference Transformer (BK's
``label_preference.py`` and ``train_preference_model.py`` in one function,
:func:`train_preference_potential`): pairs of exactly the windows the potential reads at RL
time, BK's loss, the epoch with the best held-out accuracy kept. The steps, soft labels and
the mission: docs/methods.md#bk-prefs-model. Labels go through the labeler's store, so a
re-run re-reads them instead of asking again.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from rl_bk.knowledge.dataset import sample_segments
from rl_bk.knowledge.trajectory import ACTION_NAMES, Chunk, step_text, windows
from rl_bk.labeling.labeler import Labeler, label_in_batches
from rl_bk.labeling.tasks import PreferenceRequest
from rl_bk.methods.bk.preference.model import (
    GRID_LAYOUTS,
    ModelConfig,
    PreferenceTransformer,
    encode_windows,
    preference_loss,
    save_model,
    script,
)
from rl_bk.reward_models.registry import save_reward_model

logger = logging.getLogger(__name__)

LABEL_BATCH = 32  # requests per labeler call: progress stays visible, a failure costs little
_TARGET = {"A": 0.0, "B": 1.0, "tie": 0.5}

#: BK's three criteria (``prompts/preference_labeling/system.txt``), in our own words.
GENERIC_CRITERIA = (
    "Prefer the segment whose actions take effect (no bumping into walls or acting on "
    "nothing), whose behaviour is coherent rather than aimless, and whose decisions are more "
    "likely to lead to reward. Answer tie only when the two are truly equal."
)


def criteria_text(mission: str | None) -> str:
    """The request's criteria: the mission first, when the build is told it (where an LLM can
    use it and the oracle needs it), else BK's generic criteria (BK's prompt withheld the
    goal: "You will NOT know the goal")."""
    if not mission:
        return GENERIC_CRITERIA
    return (
        f"The agent's mission: {mission.strip().rstrip('.')}. Prefer the segment that ends "
        f"closer to completing it. {GENERIC_CRITERIA}"
    )


def segment_steps(segment: Chunk, family: str | None) -> list[str]:
    """One text per state: "<caption> You choose the action: <name>.", the last bare."""
    steps = [step_text(c, a, family) for c, a in zip(segment.captions[:-1], segment.actions)]
    return [*steps, segment.captions[-1].strip()]


@dataclass
class PreferenceReport:
    """What training did; written as report.json next to model.pt."""

    pairs: int
    ties: int
    dropped: int
    train_pairs: int
    heldout_pairs: int
    heldout_decided: int
    train_accuracy: list[float | None] = field(default_factory=list)
    heldout_accuracy: list[float | None] = field(default_factory=list)
    best_epoch: int = 0
    best_heldout_accuracy: float | None = None
    labels: str = "unknown"
    is_oracle: bool | None = None
    mission: str | None = None
    soft_labels: bool = False
    config: dict = field(default_factory=dict)
    registered: list[str] | None = None
    seconds_labelling: float = 0.0
    seconds_training: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


def preference_pairs(
    episodes: Sequence[Chunk],
    pairs: int,
    horizon: int,
    family: str | None,
    mission: str | None,
    rng: np.random.Generator,
) -> tuple[list[Chunk], list[Chunk], list[PreferenceRequest]]:
    """The ``pairs`` segment pairs a build labels (drawn with ``rng``, which a build seeds with
    the dataset's seed) and the question asked of each: the same pairs for every labeller, so
    two builds' labels can be compared pair by pair."""
    segments = sample_segments(episodes, horizon - 1, 2 * pairs, rng)
    seg_a, seg_b = segments[0::2], segments[1::2]
    criteria = criteria_text(mission)
    requests = [
        PreferenceRequest(
            segment_a=segment_steps(a, family),
            segment_b=segment_steps(b, family),
            criteria=criteria,
            env=family,
        )  # type: ignore[arg-type]
        for a, b in zip(seg_a, seg_b)
    ]
    return seg_a, seg_b, requests


def label_pairs(labeler: Labeler, requests: Sequence[PreferenceRequest]) -> list:
    """One PreferenceLabel per request; None where the labeler failed on it (those pairs are
    dropped)."""
    return label_in_batches(
        labeler, "preference", requests, batch_size=LABEL_BATCH, desc="bk-pref labels", unit="pair"
    )


def label_target(label, soft: bool) -> float:
    """The training target of a label: P(B is better); 0.5 for a tie. ``soft`` uses the
    label's own probability where it has one (token-score labels), else BK's 0 / 1."""
    if soft and label.choice != "tie" and label.p_a is not None:
        return 1.0 - float(label.p_a)
    return _TARGET[label.choice]


def _accuracy(model: PreferenceTransformer, data: dict[str, torch.Tensor]) -> float | None:
    """Held-out accuracy on decided pairs (ties have no right answer), None if there are none:
    the model's choice against the label's (B when its target is above one half)."""
    decided = ~data["tie"]
    if not bool(decided.any()):
        return None
    with torch.no_grad():
        la = model(data["obs_a"][decided], data["act_a"][decided], data["valid_a"][decided])[0]
        lb = model(data["obs_b"][decided], data["act_b"][decided], data["valid_b"][decided])[0]
    return float(((lb > la) == (data["target"][decided] > 0.5)).float().mean())


def train_preference_potential(
    labeler: Labeler,
    episodes: Sequence[Chunk],
    out_dir: str | Path,
    *,
    family: str | None,
    mission: str | None = None,
    pairs: int = 500,
    horizon: int = 5,
    epochs: int = 5,
    batch_size: int = 32,
    lr: float = 3e-4,
    eval_fraction: float = 0.1,
    seed: int = 0,
    register_as: str | None = None,
    reward_models_root: str | Path | None = None,
    state_encoder: Literal["auto", "mlp", "grid"] = "auto",
    soft_labels: bool = False,
) -> PreferenceReport:
    """Labels ``pairs`` segment pairs, trains the potential, writes out_dir/{model.pt,
    report.json}. ``horizon``: states per segment and per potential window (current
    included). ``register_as``: "name" or "name/version" in the reward-model registry.
    ``state_encoder``: "auto" reads the family's grid with a conv net where it has one
    (:data:`GRID_LAYOUTS`), else an MLP. ``soft_labels``: train on the labels' probabilities
    (a decided pair's target is the labeller's own P(B is better), so a pair it was unsure of
    pulls less); BK's hard labels by default."""
    if horizon < 2:
        raise ValueError(
            f"horizon must be >= 2 (one step and the state it leads to), got {horizon}"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)

    seg_a, seg_b, requests = preference_pairs(episodes, pairs, horizon, family, mission, rng)
    started = time.perf_counter()
    labels = label_pairs(labeler, requests)
    seconds_labelling = time.perf_counter() - started
    choices = [None if lab is None else lab.choice for lab in labels]

    kept = [i for i, c in enumerate(choices) if c is not None]
    obs_dim = int(episodes[0].observations.shape[1])
    names = ACTION_NAMES.get(family or "")
    n_actions = (
        len(names) if names else int(max(int(e.actions.max(initial=0)) for e in episodes)) + 1
    )
    grid = GRID_LAYOUTS.get(family or "") if state_encoder != "mlp" else None
    if state_encoder == "grid" and grid is None:
        raise ValueError(f"no grid layout is known for family {family!r}: use 'mlp'")
    config = ModelConfig(obs_dim=obs_dim, n_actions=n_actions, horizon=horizon, grid=grid)

    def tensors(idx: Sequence[int]) -> dict[str, torch.Tensor]:
        data: dict[str, torch.Tensor] = {}
        for side, segs in (("a", seg_a), ("b", seg_b)):
            ws = [windows(segs[i], horizon)[-1] for i in idx]
            o, a, v = encode_windows(ws, horizon, obs_dim, n_actions)
            data[f"obs_{side}"] = torch.from_numpy(o)
            data[f"act_{side}"] = torch.from_numpy(a)
            data[f"valid_{side}"] = torch.from_numpy(v)
        data["target"] = torch.tensor(
            [label_target(labels[i], soft_labels) for i in idx], dtype=torch.float32
        )
        data["tie"] = torch.tensor([choices[i] == "tie" for i in idx], dtype=torch.bool)
        return data

    order = rng.permutation(kept).tolist()
    n_eval = round(eval_fraction * len(order)) if len(order) > 1 else 0
    train_idx, eval_idx = order[n_eval:], order[:n_eval]
    if not train_idx:
        raise ValueError("no labelled pair left to train on (every labeller call failed?)")
    train, heldout = tensors(train_idx), tensors(eval_idx)

    model = PreferenceTransformer(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    report = PreferenceReport(
        pairs=len(kept),
        ties=sum(choices[i] == "tie" for i in kept),
        dropped=len(choices) - len(kept),
        train_pairs=len(train_idx),
        heldout_pairs=len(eval_idx),
        heldout_decided=int((~heldout["tie"]).sum()),
        labels=str(getattr(labeler, "identity", type(labeler).__name__)),
        is_oracle=getattr(labeler, "is_oracle", None),
        mission=mission,
        soft_labels=soft_labels,
        config=config.as_dict(),
        seconds_labelling=round(seconds_labelling, 3),
    )
    best_state, best_acc = None, -1.0
    started = time.perf_counter()
    n = len(train_idx)
    for epoch in range(epochs):
        model.train()
        hits = decided = 0
        for batch in torch.randperm(n).split(batch_size):
            la = model(train["obs_a"][batch], train["act_a"][batch], train["valid_a"][batch])[0]
            lb = model(train["obs_b"][batch], train["act_b"][batch], train["valid_b"][batch])[0]
            target, tie = train["target"][batch], train["tie"][batch]
            loss = preference_loss(la, lb, target, tie)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            mask = ~tie
            hits += int(((lb > la)[mask] == (target[mask] > 0.5)).sum())
            decided += int(mask.sum())
        model.eval()
        acc = _accuracy(model, heldout)
        report.train_accuracy.append(hits / decided if decided else None)
        report.heldout_accuracy.append(acc)
        # Without decided held-out pairs there is nothing to choose by: keep the last epoch.
        score = acc if acc is not None else float(epoch)
        if score > best_acc:
            best_acc, report.best_epoch = score, epoch
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            report.best_heldout_accuracy = acc
        logger.info(
            "bk-pref epoch %d: loss %.4f, train acc %s, held-out acc %s",
            epoch,
            loss.item(),
            report.train_accuracy[-1],
            acc,
        )
    report.seconds_training = round(time.perf_counter() - started, 3)
    assert best_state is not None
    model.load_state_dict(best_state)
    model.eval()
    save_model(best_state, config, out)

    if register_as:
        name, _, version = register_as.partition("/")
        version = version or time.strftime("%Y%m%d-%H%M%S")
        save_reward_model(
            script(model, obs_dim),
            name,
            version,
            kind="potential",
            input="vector",
            input_dim=config.input_dim,
            notes=f"bk-pref from {out} ({report.labels})",
            root=Path(reward_models_root) if reward_models_root else None,
        )
        report.registered = [name, version]
    (out / "report.json").write_text(json.dumps(report.as_dict(), indent=2))
    return report
