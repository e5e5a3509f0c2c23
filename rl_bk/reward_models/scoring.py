"""Scoring with the registry's reward models, without Serve: the reward-model app's replicas
and in-process callers (bk-pref's Phi when no app serves it) use the same class.

Models load on first use and stay in memory; text inputs are embedded with the sentence
encoder first.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import torch

from rl_bk.labeling.embedding import SentenceEmbedder
from rl_bk.reward_models.registry import RewardModelMeta, load_reward_model


class RewardModels:
    """Loaded models and scoring, without Serve (the deployment and tests use it)."""

    def __init__(self, root: str | None = None):
        self.root = Path(root) if root else None
        self._models: dict[tuple[str, str], tuple[torch.jit.ScriptModule, RewardModelMeta]] = {}
        self._lock = threading.Lock()
        self._embedder = None
        self.forward_passes = 0

    def get(self, name: str, version: str):
        key = (name, version)
        with self._lock:
            if key not in self._models:
                self._models[key] = load_reward_model(name, version, self.root)
            return self._models[key]

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self._embedder is None:
            self._embedder = SentenceEmbedder()
        return self._embedder.encode(texts)

    def score(self, name: str, version: str, inputs: list) -> list[float]:
        module, meta = self.get(name, version)
        if meta.input == "text":
            x = self._embed([str(t) for t in inputs])
        else:
            x = np.asarray(inputs, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != meta.input_dim:
            raise ValueError(
                f"{name}/{meta.version} reads {meta.input_dim} values per input, "
                f"got shape {tuple(x.shape)}"
            )
        with torch.no_grad():
            out = module(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)))
        self.forward_passes += 1
        return out.reshape(-1).tolist()
