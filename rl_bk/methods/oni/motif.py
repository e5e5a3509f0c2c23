"""Motif (Klissarov et al. 2023), offline: an LLM ranks pairs of captions from a dataset, a
Bradley-Terry reward model learns the ranking, and RL runs with that fixed model
(``reward_type="motif"``). It is the offline ancestor of ONI-Ranking and uses the same pieces
here: ONI's char-CNN ranker, the soft-label loss, and a reward normalised over the dataset,
thresholded at a quantile of it (Motif's). How pairs are drawn and what the artifact holds:
docs/methods.md#onis-reward-models.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from env_registry.nethack.oracle import split_caption
from rl_bk.knowledge.dataset import DatasetError
from rl_bk.knowledge.trajectory import Chunk
from rl_bk.labeling.labeler import Labeler, label_in_batches
from rl_bk.labeling.tasks import PreferenceRequest
from rl_bk.methods.oni.caption_models.message_bytes import encode_messages
from rl_bk.methods.oni.caption_models.ranking import (
    MessageRanker,
    bradley_terry_loss,
    pair_accuracy,
    preference_target,
)
from rl_bk.storage import fetch

MODEL_FILE = "motif_model.pt"
REPORT_FILE = "motif.json"
LABEL_BATCH = 16


def caption_text(caption: str, family: str | None) -> str:
    """What the reward reads of a caption: NetHack's message line, else the caption."""
    if family == "nethack":
        return split_caption(caption)[0]
    return caption.strip()


def dataset_captions(episodes: Sequence[Chunk], family: str | None) -> list[str]:
    """The non-empty caption of every state after a step, in order (with repeats)."""
    out = [caption_text(c, family) for ep in episodes for c in ep.captions[1:]]
    return [c for c in out if c]


@dataclass
class MotifReport:
    pairs: int
    decided: int
    labels: str
    is_oracle: bool | None
    train_accuracy: float
    held_out_accuracy: float
    mean: float
    std: float
    distinct_captions: int
    #: quantile ("0.05" ... "0.95") -> that quantile of the normalised reward over the dataset
    normalised_quantiles: dict[str, float] = field(default_factory=dict)


QUANTILES = tuple(round(0.05 * i, 2) for i in range(1, 20))  # Motif's table: 0.05 ... 0.95


def weighted_quantiles(
    values: np.ndarray, weights: np.ndarray, qs: Sequence[float] = QUANTILES
) -> dict[str, float]:
    """Quantiles of ``values`` repeated ``weights`` times (the dataset's steps), by key."""
    order = np.argsort(values)
    v, w = np.asarray(values, float)[order], np.asarray(weights, float)[order]
    cdf = np.cumsum(w) / w.sum()
    return {f"{q:.2f}": float(v[min(np.searchsorted(cdf, q), len(v) - 1)]) for q in qs}


class MotifModel:
    """The trained ranker, its dataset normalisation and its quantile table."""

    def __init__(
        self, net: MessageRanker, mean: float, std: float, quantiles: dict[str, float] | None = None
    ):
        self.net, self.mean, self.std = net.eval(), mean, std
        self.quantiles = dict(quantiles or {})

    def threshold_at(self, q: float) -> float:
        """The normalised dataset reward at quantile ``q`` (one of :data:`QUANTILES`)."""
        key = f"{q:.2f}"
        if key not in self.quantiles:
            raise ValueError(
                f"the Motif model has no {key} quantile (it has "
                f"{', '.join(self.quantiles) or 'none: rebuild it'}); use one of "
                f"0.05, 0.10, ..., 0.95"
            )
        return self.quantiles[key]

    @torch.no_grad()
    def score(self, captions: Sequence[str]) -> np.ndarray:
        if not len(captions):
            return np.zeros(0)
        return self.net(torch.from_numpy(encode_messages(captions))).double().numpy()


def train_motif(
    labeler: Labeler,
    episodes: Sequence[Chunk],
    out_dir: str | Path,
    *,
    family: str | None,
    goal: str,
    labels: str = "unknown",
    is_oracle: bool | None = None,
    pairs: int = 2000,
    epochs: int = 30,
    batch_size: int = 256,
    lr: float = 3e-4,
    seed: int = 0,
) -> MotifReport:
    captions = dataset_captions(episodes, family)
    if len(set(captions)) < 2:
        raise DatasetError(
            "Motif needs at least two different non-empty captions in the "
            "dataset; collect more episodes"
        )
    rng = np.random.default_rng(seed)
    drawn: list[tuple[str, str]] = []
    while len(drawn) < pairs:
        a, b = (captions[i] for i in rng.integers(len(captions), size=2))
        if a != b:
            drawn.append((a, b))
    requests = [
        PreferenceRequest(segment_a=[a], segment_b=[b], criteria=goal, env=family) for a, b in drawn
    ]
    answers = label_in_batches(
        labeler, "preference", requests, batch_size=LABEL_BATCH, desc="motif labels", unit="pair"
    )
    kept = [(p, preference_target(a.choice)) for p, a in zip(drawn, answers) if a is not None]
    held = rng.random(len(kept)) < 0.1
    train = [k for k, h in zip(kept, held) if not h]
    test = [k for k, h in zip(kept, held) if h]

    torch.manual_seed(seed)
    net = MessageRanker()
    optimiser = torch.optim.Adam(net.parameters(), lr=lr)

    def forward(rows):
        a = net(torch.from_numpy(encode_messages([p[0] for p, _ in rows])))
        b = net(torch.from_numpy(encode_messages([p[1] for p, _ in rows])))
        return a, b, torch.tensor([t for _, t in rows], dtype=torch.float32)

    for _ in range(epochs):
        for start in range(0, len(train), batch_size):
            rows = [train[i] for i in rng.permutation(len(train))[start : start + batch_size]]
            a, b, t = forward(rows)
            loss = bradley_terry_loss(a, b, t)
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 10.0)
            optimiser.step()
    net.eval()
    with torch.no_grad():
        train_acc = pair_accuracy(*forward(train)) if train else float("nan")
        test_acc = pair_accuracy(*forward(test)) if test else float("nan")
        # The dataset's reward statistics, over steps (with repeats); each distinct caption
        # is scored once (a long dataset's every step at once took gigabytes).
        distinct, counts = np.unique(np.asarray(captions, dtype=object), return_counts=True)
        raw = MotifModel(net, 0.0, 1.0).score(list(distinct))
    mean = float(np.average(raw, weights=counts))
    std = float(np.sqrt(np.average((raw - mean) ** 2, weights=counts)))
    std = max(std, 1e-8)
    report = MotifReport(
        pairs=len(kept),
        decided=sum(t != 0.5 for _, t in kept),
        labels=labels,
        is_oracle=is_oracle,
        train_accuracy=train_acc,
        held_out_accuracy=test_acc,
        mean=mean,
        std=std,
        distinct_captions=len(distinct),
        normalised_quantiles=weighted_quantiles((raw - mean) / std, counts),
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(net.state_dict(), out / MODEL_FILE)
    (out / REPORT_FILE).write_text(json.dumps(asdict(report), indent=2))
    return report


def load_motif_model(folder: str | Path) -> MotifModel:
    """The model of a built Motif folder (or storage URI: fetched to this node first)."""
    folder = fetch(folder)
    if not (folder / MODEL_FILE).is_file():
        raise FileNotFoundError(
            f"no Motif reward model in {folder}; build one with "
            "`rl-bk knowledge build --task <task> --kinds motif`"
        )
    report = json.loads((folder / REPORT_FILE).read_text())
    net = MessageRanker()
    net.load_state_dict(torch.load(folder / MODEL_FILE, weights_only=True))
    return MotifModel(
        net, float(report["mean"]), float(report["std"]), report.get("normalised_quantiles")
    )
