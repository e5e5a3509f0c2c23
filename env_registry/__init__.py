"""Text-captioned environments, registered under one name for gymnasium and RLlib.

    >>> import env_registry
    >>> env = env_registry.make_env("BabyAI-Text-GoToLocal-RedBall-S20-v0")
    >>> obs, info = env.reset(seed=0)
    >>> info["caption"]
    'You see a wall 2 steps left. You see a red ball ...'

``register_all()`` registers every env with gymnasium (``gymnasium.make(name)``) and with
RLlib (``config.environment(name)``). Family modules import their heavy packages (nle,
minedojo) only when an env of theirs is built, so a missing optional package fails that env
alone, with a message that says what to install.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from env_registry.babyai import env as babyai
from env_registry.crafter import env as crafter
from env_registry.errors import MissingDependencyError, UnknownEnvError
from env_registry.minedojo import env as minedojo
from env_registry.nethack import env as nethack
from env_registry.spec import EnvSpec

__all__ = [
    "ENV_SPECS",
    "EnvSpec",
    "MissingDependencyError",
    "UnknownEnvError",
    "get_spec",
    "make_env",
    "register_all",
]

ENV_SPECS: dict[str, EnvSpec] = {
    spec.name: spec for family in (babyai, crafter, nethack, minedojo) for spec in family.SPECS
}


def get_spec(name: str) -> EnvSpec:
    try:
        return ENV_SPECS[name]
    except KeyError:
        raise UnknownEnvError(name, sorted(ENV_SPECS)) from None


def make_env(name: str, env_config: Mapping[str, Any] | None = None) -> gym.Env:
    """Builds the env registered as ``name``; ``env_config`` overrides its defaults."""
    return get_spec(name).build(env_config)


def _make_for_gymnasium(name: str, **env_config: Any) -> gym.Env:
    return make_env(name, env_config)


def register_all() -> list[str]:
    """Registers every env with gymnasium and with RLlib's env registry. Idempotent."""
    from functools import partial

    from ray.tune.registry import register_env

    for name, spec in ENV_SPECS.items():
        if name not in gym.registry:
            # No gymnasium TimeLimit/OrderEnforcing/PassiveEnvChecker on top: each family
            # applies its own limit (so that `truncated` is set where the game says so).
            gym.register(
                id=name,
                entry_point=partial(_make_for_gymnasium, name),
                disable_env_checker=True,
                order_enforce=False,
            )
        register_env(name, spec.build)
    return list(ENV_SPECS)
