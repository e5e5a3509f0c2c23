"""What PTGM's high-level RL uses: the codebook, the frozen low-level policy and the prior
(:class:`PTGMModels`), saved as ``ptgm.pt`` (both state dicts and the constructor arguments),
``codebook.npz`` and ``ptgm.json`` (settings and the pre-training report, for people). The two
calls RL makes in its inner loops (:meth:`PTGMModels.low_level_actions` every env step,
:meth:`PTGMModels.prior_logits` per train batch) run without autograd on frozen modules, with
the codebook kept as a tensor so a goal lookup is one index.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rl_bk.methods.ptgm.pretraining.codebook import Codebook
from rl_bk.methods.ptgm.pretraining.low_level import GoalConditionedPolicy, freeze
from rl_bk.methods.ptgm.pretraining.prior import GoalPrior

MODELS_FILE = "ptgm.pt"
CODEBOOK_FILE = "codebook.npz"
INFO_FILE = "ptgm.json"
FORMAT = 1


class PTGMModels:
    """The pre-trained pieces of PTGM. ``n_goals`` is the high-level action count."""

    def __init__(
        self,
        codebook: Codebook,
        low_level: GoalConditionedPolicy,
        prior: GoalPrior,
        info: dict[str, Any] | None = None,
    ) -> None:
        if low_level.config["goal_dim"] != codebook.dim:
            raise ValueError("the low-level policy's goal size differs from the codebook's")
        if prior.config["n_goals"] != len(codebook):
            raise ValueError("the prior's output count differs from the codebook's size")
        if low_level.config["obs_dim"] != prior.config["obs_dim"]:
            raise ValueError("the low-level policy and the prior read different observations")
        self.codebook = codebook
        self.low_level = freeze(low_level)
        self.prior = freeze(prior)
        self.info: dict[str, Any] = dict(info or {})
        self._goals = torch.from_numpy(codebook.vectors.copy())
        self._default_rng = np.random.default_rng()

    @property
    def n_goals(self) -> int:
        return len(self.codebook)

    @property
    def obs_dim(self) -> int:
        return int(self.prior.config["obs_dim"])

    @property
    def n_actions(self) -> int:
        return int(self.low_level.config["n_actions"])

    @property
    def device(self) -> torch.device:
        return self._goals.device

    def to(self, device: str | torch.device) -> PTGMModels:
        """Moves both modules and the codebook tensor (e.g. a GPU learner's prior)."""
        self.low_level.to(device)
        self.prior.to(device)
        self._goals = self._goals.to(device)
        return self

    def low_level_actions(
        self,
        obs: np.ndarray,
        goal_ids: np.ndarray,
        *,
        greedy: bool,
        rng: np.random.Generator | None = None,
    ) -> np.ndarray:
        """``(B,)`` int64 env actions of the low-level policy for observations ``(B, O)`` and
        goal indices ``(B,)``: the argmax when ``greedy``, else a sample of the softmax drawn
        with ``rng`` (a private generator when None)."""
        obs_t = torch.as_tensor(np.asarray(obs, dtype=np.float32), device=self.device)
        ids = torch.as_tensor(np.asarray(goal_ids, dtype=np.int64).reshape(-1), device=self.device)
        if obs_t.ndim != 2 or obs_t.shape[1] != self.obs_dim or len(ids) != len(obs_t):
            raise ValueError(
                f"expected obs (B, {self.obs_dim}) and goal_ids (B,), got "
                f"{tuple(obs_t.shape)} and {tuple(ids.shape)}"
            )
        if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= self.n_goals):
            raise ValueError(f"goal ids must be in [0, {self.n_goals})")
        with torch.no_grad():
            logits = self.low_level(obs_t, self._goals[ids])
            if greedy:
                return logits.argmax(-1).cpu().numpy().astype(np.int64)
            probs = torch.softmax(logits.double(), -1).cpu().numpy()
        # Inverse-CDF sampling with the caller's numpy generator (reproducible per rng).
        u = (rng if rng is not None else self._default_rng).random(len(probs))[:, None]
        picks = (np.cumsum(probs, axis=1) < u).sum(axis=1)
        return np.minimum(picks, probs.shape[1] - 1).astype(np.int64)

    def prior_logits(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, n_goals)`` logits of the goal prior for observations ``(B, O)``, without
        autograd, on ``obs``'s device."""
        with torch.no_grad():
            out = self.prior(torch.as_tensor(obs, dtype=torch.float32).to(self.device))
        return out.to(obs.device) if isinstance(obs, torch.Tensor) else out

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "format": FORMAT,
                "low_level": {
                    "config": self.low_level.config,
                    "state_dict": {k: v.cpu() for k, v in self.low_level.state_dict().items()},
                },
                "prior": {
                    "config": self.prior.config,
                    "state_dict": {k: v.cpu() for k, v in self.prior.state_dict().items()},
                },
            },
            folder / MODELS_FILE,
        )
        self.codebook.save(str(folder / CODEBOOK_FILE))
        (folder / INFO_FILE).write_text(json.dumps(self.info, indent=2, sort_keys=True))
        return folder

    @classmethod
    def load(cls, folder: str | Path, device: str | torch.device = "cpu") -> PTGMModels:
        folder = Path(folder)
        path = folder / MODELS_FILE
        if not path.is_file():
            raise FileNotFoundError(
                f"no PTGM models at {folder} (no {MODELS_FILE}): run the PTGM pre-training first"
            )
        blob = torch.load(path, map_location="cpu", weights_only=True)
        if blob.get("format") != FORMAT:
            raise ValueError(f"{path}: unknown format {blob.get('format')!r}")
        low_level = GoalConditionedPolicy(**blob["low_level"]["config"])
        low_level.load_state_dict(blob["low_level"]["state_dict"])
        prior = GoalPrior(**blob["prior"]["config"])
        prior.load_state_dict(blob["prior"]["state_dict"])
        info_path = folder / INFO_FILE
        info = json.loads(info_path.read_text()) if info_path.is_file() else {}
        codebook = Codebook.load(str(folder / CODEBOOK_FILE))
        return cls(codebook, low_level, prior, info).to(device)
