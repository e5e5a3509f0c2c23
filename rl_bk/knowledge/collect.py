"""Whole episodes from a policy in a local env, as :class:`Chunk` s for the trajectory dataset
(the knowledge pipeline's collect stage for every offline kind, RND-PPO's precollection):
one loop, :func:`collect_episodes`, for BK's stage 1 (RND-PPO's *stochastic* policy) and for
baselines (a plain PPO policy, or uniformly random actions). The env is built locally, not on
RLlib's env runners, so that collection never disturbs training's episodes or metrics.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from minigrid.envs.babyai.core.roomgrid_level import RoomGridLevel
from minigrid.utils.baby_ai_bot import BabyAIBot
from ray.rllib.core.columns import Columns

import env_registry
from rl_bk.knowledge.trajectory import Chunk


def _policy_module(module_or_algo: Any) -> Any:
    """The RLModule to act with: the given one, or an Algorithm's current default module."""
    if module_or_algo is None or hasattr(module_or_algo, "forward_exploration"):
        return module_or_algo
    if hasattr(module_or_algo, "get_module"):
        module = module_or_algo.get_module()
        if module is None:
            raise ValueError("the algorithm has no default policy module to collect with")
        return module
    raise TypeError(f"expected an RLModule, an Algorithm or None, got {type(module_or_algo)}")


class _ModulePolicy:
    """Actions from an RLModule: sampled (``explore``) or its distribution's mode."""

    def __init__(self, module: Any, explore: bool):

        self.torch, self.columns, self.module, self.explore = torch, Columns, module, explore
        params = list(module.parameters()) if hasattr(module, "parameters") else []
        self.device = params[0].device if params else torch.device("cpu")
        self.dist_cls = (
            module.get_exploration_action_dist_cls()
            if explore
            else module.get_inference_action_dist_cls()
        )

    def __call__(self, obs: np.ndarray) -> int:
        torch, columns = self.torch, self.columns
        batch = {columns.OBS: torch.as_tensor(obs[None], device=self.device)}
        with torch.no_grad():
            out = (
                self.module.forward_exploration(batch)
                if self.explore
                else self.module.forward_inference(batch)
            )
            dist = self.dist_cls.from_logits(out[columns.ACTION_DIST_INPUTS])
            if not self.explore:
                dist = dist.to_deterministic()
            return int(dist.sample().reshape(-1)[0])


def collect_episodes(
    module_or_algo: Any,
    env_name: str,
    env_config: Mapping[str, Any] | None,
    num_episodes: int,
    seed: int,
    explore: bool = True,
) -> list[Chunk]:
    """Runs ``num_episodes`` whole episodes and returns them as chunks, in an env built with
    ``gymnasium.make`` (after ``env_registry.register_all()``). The module is called on the
    raw observation, which is right for rl-bk's envs (flat float32 Box observations, RLlib's
    default env-to-module pipeline); a policy trained with custom observation connectors would
    need them here too. Captions come from ``info["caption"]`` and the mission from
    ``info["mission"]`` (the env contract in ``env_registry/spec.py``).

    Args:
        module_or_algo: an RLModule, an RLlib Algorithm (its current default module), or
            None for uniform random actions.
        env_name: a gymnasium id; rl-bk's envs are registered first.
        env_config: keyword arguments for ``gymnasium.make`` (rl-bk's env_config).
        seed: seeds the first reset (later resets continue the env's RNG) and the action
            sampling, so a collection is reproducible without touching the global RNGs.
        explore: sample actions from the policy (True, BK's collection) or take the mode.
    """

    if num_episodes < 0:
        raise ValueError(f"num_episodes must be >= 0, got {num_episodes}")
    env_registry.register_all()
    env = gym.make(env_name, **dict(env_config or {}))
    if not isinstance(env.action_space, gym.spaces.Discrete):
        env.close()
        raise ValueError(
            f"the trajectory dataset stores discrete actions; {env_name} has {env.action_space}"
        )
    module = _policy_module(module_or_algo)
    rng = np.random.default_rng(seed)
    act = (
        (lambda obs: int(rng.integers(env.action_space.n)))
        if module is None
        else _ModulePolicy(module, explore)
    )
    try:
        with contextlib.nullcontext() if module is None else _seeded_torch(seed):
            return [_run_episode(env, act, seed if i == 0 else None) for i in range(num_episodes)]
    finally:
        env.close()


@contextlib.contextmanager
def _seeded_torch(seed: int) -> Iterator[None]:
    """Seeds torch's sampling for the collection, leaving the caller's RNG state as it was."""

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _flat(obs: Any) -> np.ndarray:
    return np.asarray(obs, dtype=np.float32).reshape(-1)


def collect_bot_episodes(
    env_name: str,
    env_config: Mapping[str, Any] | None,
    num_episodes: int,
    seed: int,
    epsilon: float = 0.0,
) -> list[Chunk]:
    """Whole episodes of minigrid's BabyAI bot (an expert planner) on a BabyAI-Text env.

    ``epsilon``: the share of steps that take a uniformly random action instead (the bot
    replans from wherever that leaves it), so the data also shows recoveries; PTGM's
    low-level policy is cloned from such demonstrations.
    """

    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
    env_registry.register_all()
    env = gym.make(env_name, **dict(env_config or {}))

    if not isinstance(getattr(env.unwrapped, "level", None), RoomGridLevel):
        env.close()
        raise ValueError(
            f"the BabyAI bot plays BabyAI levels; {env_name} is not one "
            "(use collector: rnd or random)"
        )
    policy = _BotPolicy(env, np.random.default_rng(seed), epsilon)
    try:
        return [
            _run_episode(env, policy, seed if i == 0 else None, on_reset=policy.reset)
            for i in range(num_episodes)
        ]
    finally:
        env.close()


class _BotPolicy:
    """minigrid's BabyAI bot, replanned every step (it must see each move, its own or a random
    one), taking a uniformly random action with probability ``epsilon``."""

    def __init__(self, env: gym.Env, rng: np.random.Generator, epsilon: float):
        self.env, self.rng, self.epsilon = env, rng, epsilon
        self.bot: Any = None

    def reset(self) -> None:

        self.bot = BabyAIBot(self.env.unwrapped.level)

    def __call__(self, obs: np.ndarray) -> int:
        planned = int(self.bot.replan())
        if self.rng.random() < self.epsilon:
            return int(self.rng.integers(self.env.action_space.n))
        return planned


def _run_episode(env: gym.Env, act: Any, seed: int | None, on_reset: Any = None) -> Chunk:
    obs, info = env.reset(seed=seed)
    if on_reset is not None:
        on_reset()
    observations, captions = [_flat(obs)], [str(info.get("caption", ""))]
    mission = info.get("mission")
    actions, rewards = [], []
    terminated = truncated = False
    while not (terminated or truncated):
        action = act(observations[-1])
        obs, reward, terminated, truncated, info = env.step(action)
        actions.append(action)
        rewards.append(float(reward))
        observations.append(_flat(obs))
        captions.append(str(info.get("caption", "")))
    return Chunk(
        observations=np.stack(observations),
        captions=captions,
        actions=np.asarray(actions),
        rewards=np.asarray(rewards, np.float32),
        terminated=bool(terminated),
        truncated=bool(truncated),
        mission=str(mission) if mission is not None else None,
        episode_id=uuid.uuid4().hex,
    )
