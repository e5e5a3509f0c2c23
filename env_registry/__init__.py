"""Text-captioned environments, registered under one name for gymnasium and RLlib.

    >>> import env_registry
    >>> env = env_registry.make_env("BabyAI-Text-GoToLocal-RedBall-S20-v0")
    >>> obs, info = env.reset(seed=0)
    >>> info["caption"]
    'You see a wall 2 steps left. You see a red ball ...'

``register_all()`` registers every env with gymnasium (``gymnasium.make(name)``) and with
RLlib (``config.environment(name)``; each env runner's envs seeded apart from the others',
:mod:`env_registry.seeding`).

One package per env family (``babyai``, ``crafter``, ``nethack``, ``minedojo``) holds all that
rl-bk knows about it: ``env.py`` (the env and its registered names, ``SPECS``),
``captioner.py`` (observation → text), ``vocabulary.py`` (action names and goal words),
``description.py`` (what an LLM is told about the game) and ``oracle.py`` (the rules that read
its captions back for the rule-based oracle), so that a caption, what an LLM is told about it
and the rules that parse it back change together.

The family packages import nothing from ``rl_bk``: the library (its labeler, its knowledge
sources) imports them, never the other way round. Only ``env.py`` imports its family's heavy
packages (minigrid, crafter, nle, minedojo), and those of nle and minedojo only when an env is
built, so a missing optional package fails that env alone, with a message that says what to
install; the other modules are plain Python, and the env modules are loaded on the first call
that needs the registered names, so a labeler that reads a vocabulary loads no simulator.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from env_registry.errors import MissingDependencyError, UnknownEnvError
from env_registry.seeding import SeedPerRunner, runner_seed_offset
from env_registry.spec import EnvSpec

__all__ = [
    "ENV_SPECS",
    "EnvSpec",
    "MissingDependencyError",
    "UnknownEnvError",
    "env_specs",
    "get_spec",
    "make_env",
    "make_runner_env",
    "register_all",
    "rllib_env_creator",
]


@functools.cache
def env_specs() -> dict[str, EnvSpec]:
    """Every registered env by name (loads the family env modules on first use)."""
    from env_registry.babyai import env as babyai
    from env_registry.crafter import env as crafter
    from env_registry.minedojo import env as minedojo
    from env_registry.nethack import env as nethack

    return {
        spec.name: spec for family in (babyai, crafter, nethack, minedojo) for spec in family.SPECS
    }


def __getattr__(name: str) -> Any:
    # ENV_SPECS stays a module attribute for its readers, computed on first access.
    if name == "ENV_SPECS":
        return env_specs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_spec(name: str) -> EnvSpec:
    specs = env_specs()
    try:
        return specs[name]
    except KeyError:
        raise UnknownEnvError(name, sorted(specs)) from None


def make_env(name: str, env_config: Mapping[str, Any] | None = None) -> gym.Env:
    """Builds the env registered as ``name``; ``env_config`` overrides its defaults."""
    return get_spec(name).build(env_config)


def _make_for_gymnasium(name: str, **env_config: Any) -> gym.Env:
    return make_env(name, env_config)


def make_runner_env(
    name: str, env_config: Mapping[str, Any] | None = None, worker_index: int | None = None
) -> gym.Env:
    """:func:`make_env` for env runner ``worker_index`` (default: ``env_config``'s, an RLlib
    ``EnvContext``): its reset seeds moved so that no two envs of a trial play the same levels
    (:mod:`env_registry.seeding`)."""
    runner = worker_index if worker_index is not None else getattr(env_config, "worker_index", 0)
    env = make_env(name, env_config)
    offset = runner_seed_offset(int(runner or 0))
    return SeedPerRunner(env, int(runner)) if offset else env


def rllib_env_creator(name: str) -> Callable[[Mapping[str, Any] | None], gym.Env]:
    """What RLlib builds ``name`` with (:func:`make_runner_env`)."""
    return functools.partial(make_runner_env, name)


def register_all() -> list[str]:
    """Registers every env with gymnasium and with RLlib's env registry. Idempotent."""
    from ray.tune.registry import register_env

    specs = env_specs()
    for name in specs:
        if name not in gym.registry:
            # No gymnasium TimeLimit/OrderEnforcing/PassiveEnvChecker on top: each family
            # applies its own limit (so that `truncated` is set where the game says so).
            gym.register(
                id=name,
                entry_point=functools.partial(_make_for_gymnasium, name),
                disable_env_checker=True,
                order_enforce=False,
            )
        register_env(name, rllib_env_creator(name))
    return list(specs)
