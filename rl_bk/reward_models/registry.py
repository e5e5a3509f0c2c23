"""Trained reward models on disk, by name and version, as the reward-model app serves them: a
TorchScript module mapping a float batch ``(B, input_dim)`` to rewards ``(B,)``, saved with
the facts a server needs (:class:`RewardModelMeta`), so the server stays free of the training
code. The root is ``$RLBK_REWARD_MODELS`` or ``~/.cache/rl-bk/reward_models``; ``"latest"`` is
the most recently saved version. Layout: :func:`save_reward_model`.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import torch

ENV_VAR = "RLBK_REWARD_MODELS"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class RewardModelNotFound(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class RewardModelMeta:
    """``meta.json``. ``kind``: what the model was trained as (``potential``, ``classifier``,
    ``ranking``); ``input``: what it reads, ``vector`` (an observation or any feature vector)
    or ``text`` (captions, embedded by the packaged MiniLM before the model sees them)."""

    name: str
    version: str
    kind: Literal["potential", "classifier", "ranking"]
    input: Literal["vector", "text"]
    input_dim: int
    created_at: float
    notes: str = ""


def default_root() -> Path:
    return Path(os.environ.get(ENV_VAR) or Path.home() / ".cache" / "rl-bk" / "reward_models")


def _check_name(what: str, value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"{what} {value!r}: use letters, digits, '.', '_' or '-' (max 100)")
    return value


def save_reward_model(
    module: torch.nn.Module,
    name: str,
    version: str,
    *,
    kind: Literal["potential", "classifier", "ranking"],
    input: Literal["vector", "text"] = "vector",  # the meta.json field's name
    input_dim: int,
    notes: str = "",
    root: Path | None = None,
) -> Path:
    """Scripts (or keeps, if already scripted) and saves ``module``; returns its folder,
    ``<root>/<name>/<version>/`` with ``model.pt`` (``torch.jit.save``) and ``meta.json``.
    Any module that scripts or traces can be served; versions are strings."""
    folder = (root or default_root()) / _check_name("name", name) / _check_name("version", version)
    if folder.exists():
        raise FileExistsError(f"reward model {name}/{version} exists: pick a new version")
    scripted = module if isinstance(module, torch.jit.ScriptModule) else torch.jit.script(module)
    folder.mkdir(parents=True)
    torch.jit.save(scripted, str(folder / "model.pt"))
    meta = RewardModelMeta(name, version, kind, input, input_dim, time.time(), notes)
    (folder / "meta.json").write_text(json.dumps(asdict(meta), indent=2))
    return folder


def list_reward_models(root: Path | None = None) -> list[RewardModelMeta]:
    root = root or default_root()
    metas = []
    for meta_file in sorted(root.glob("*/*/meta.json")):
        metas.append(RewardModelMeta(**json.loads(meta_file.read_text())))
    return metas


def resolve(name: str, version: str = "latest", root: Path | None = None) -> RewardModelMeta:
    models = [m for m in list_reward_models(root) if m.name == name]
    if not models:
        known = sorted({m.name for m in list_reward_models(root)}) or ["(none)"]
        raise RewardModelNotFound(
            f"no reward model {name!r} in {root or default_root()}; available: {', '.join(known)}"
        )
    if version == "latest":
        return max(models, key=lambda m: m.created_at)
    for m in models:
        if m.version == version:
            return m
    raise RewardModelNotFound(
        f"reward model {name!r} has no version {version!r}; versions: "
        f"{', '.join(m.version for m in models)}"
    )


def load_reward_model(
    name: str, version: str = "latest", root: Path | None = None
) -> tuple[torch.jit.ScriptModule, RewardModelMeta]:
    meta = resolve(name, version, root)
    module = torch.jit.load(str((root or default_root()) / meta.name / meta.version / "model.pt"))
    module.eval()
    return module, meta
