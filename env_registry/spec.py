"""What an rl-bk environment is: its registered name, its family and its default config.

Every env made from an :class:`EnvSpec` keeps one contract, which the rest of rl-bk relies on:

- ``observation_space`` is a flat ``Box(float32)``: RLlib's default MLP encoder accepts it
  without a custom RLModule or connector.
- ``info["caption"]`` holds the text description of the current state, after ``reset`` and
  after every ``step`` (``""`` when built with ``caption=False``, for speed measurements).
- ``info["mission"]`` holds the task text where the env has one.
- ``info["success"]`` is a bool on every step: whether the task has been solved in this episode.
- ``env_config["render_pixels"]`` (default False) turns pixel rendering on; off, no step draws
  a frame, because no default policy looks at one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

#: Keys every family accepts in ``env_config``.
COMMON_ENV_CONFIG_KEYS = ("caption", "render_pixels")


@dataclass(frozen=True)
class EnvSpec:
    """One registered environment.

    Attributes:
        name: the id registered with both gymnasium and RLlib, e.g.
            ``"BabyAI-Text-GoToLocal-RedBall-S20-v0"``.
        family: ``"babyai"``, ``"crafter"``, ``"nethack"`` or ``"minedojo"``.
        make: builds the env from a full env_config (``defaults`` merged with the user's).
        defaults: the env_config this name stands for (level, task, limits, ...).
        description: one line for ``tune_run.py --list`` and the README's task table.
    """

    name: str
    family: str
    make: Callable[[Mapping[str, Any]], gym.Env]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def build(self, env_config: Mapping[str, Any] | None = None) -> gym.Env:
        config = {"caption": True, "render_pixels": False, **self.defaults}
        # RLlib passes an EnvContext (a dict subclass with worker_index etc.); keep only the keys.
        config.update(dict(env_config or {}))
        return self.make(config)
