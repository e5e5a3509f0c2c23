"""GLAM's observation: a text prompt of the goal and the last few captions and actions
(flowersteam/Grounding_LLMs_with_online_RL), ending on an open action line the LLM's action
scores continue, carried as its UTF-8 bytes in a fixed-size box so that RLlib can batch it and
PPO trains on exactly the prompt the policy acted on; the reward is GLAM's, 20 times the
env's. The prompt's format and what a long one loses: docs/methods.md#glams-prompt.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from ray.tune.registry import register_env

import env_registry

ACTION_TEXTS = ("turn left", "turn right", "go forward", "pick up", "drop", "toggle")


def caption_to_observation(caption: str) -> str:
    """A caption's sentences (joined by ". ", ending with ".") joined by ", " instead."""
    sentences = [s.strip().rstrip(".").strip() for s in str(caption).split(". ")]
    return ", ".join(s for s in sentences if s)


def build_prompt(
    mission: str,
    observations: list[str],
    actions: list[str],
    action_texts: tuple[str, ...] = ACTION_TEXTS,
) -> str:
    """The prompt for ``len(observations)`` observations and the ``len - 1`` actions between
    them; it ends on the open ``"Action k:"`` line."""
    if len(actions) != len(observations) - 1:
        raise ValueError(
            f"need one action fewer than observations, got {len(actions)} "
            f"actions for {len(observations)} observations"
        )
    lines = [
        f"Possible actions of the agent: {', '.join(action_texts)}",
        f"Goal of the agent: {mission}",
    ]
    for k, observation in enumerate(observations):
        lines.append(f"Observation {k}: {observation}")
        lines.append(f"Action {k}: {actions[k]}" if k < len(actions) else f"Action {k}:")
    return "\n".join(lines)


def encode_prompt(prompt: str, size: int) -> np.ndarray:
    """The prompt's UTF-8 bytes, zero-padded to ``size`` (ValueError if longer)."""
    data = prompt.encode("utf-8")
    if len(data) > size or b"\x00" in data:
        raise ValueError(f"prompt of {len(data)} bytes (or with a NUL byte) does not fit {size}")
    out = np.zeros(size, np.uint8)
    out[: len(data)] = np.frombuffer(data, np.uint8)
    return out


def decode_prompts(batch: Any) -> list[str]:
    """Prompts from a ``(B, L)`` (or ``(L,)``) uint8 array or tensor of zero-padded bytes."""
    if hasattr(batch, "detach"):  # a torch tensor, possibly on a GPU
        batch = batch.detach().cpu().numpy()
    array = np.asarray(batch)
    if array.ndim == 1:
        array = array[None]
    rows = array.astype(np.uint8, copy=False)
    return [bytes(row).rstrip(b"\x00").decode("utf-8", errors="replace") for row in rows]


class GLAMPromptObservation(gym.Wrapper):
    """A BabyAI-Text env seen as GLAM sees it: prompt bytes in, 6 text actions out.

    Args:
        env: an env whose ``info`` has ``"caption"`` and ``"mission"`` after reset and every
            step, and whose actions 0-5 are BabyAI's turn left ... toggle.
        n_obs: observations in the prompt (GLAM's ``nbr_obs``, 3).
        max_prompt_bytes: the observation's size (a longer prompt loses its oldest
            observations first: docs/methods.md#glams-prompt).
        reward_scale: multiplies the env's reward (GLAM: 20).
    """

    ACTION_TEXTS = ACTION_TEXTS

    def __init__(
        self,
        env: gym.Env,
        *,
        n_obs: int = 3,
        max_prompt_bytes: int = 1024,
        reward_scale: float = 20.0,
    ):
        super().__init__(env)
        if n_obs < 1:
            raise ValueError(f"n_obs must be >= 1, got {n_obs}")
        inner = env.action_space
        if not isinstance(inner, gym.spaces.Discrete) or inner.n < len(ACTION_TEXTS):
            raise ValueError(
                f"GLAM needs a Discrete action space with BabyAI's first "
                f"{len(ACTION_TEXTS)} actions, got {inner}"
            )
        self.n_obs = n_obs
        self.max_prompt_bytes = max_prompt_bytes
        self.reward_scale = float(reward_scale)
        self.action_space = gym.spaces.Discrete(len(ACTION_TEXTS))
        self.observation_space = gym.spaces.Box(0, 255, (max_prompt_bytes,), np.uint8)
        self._observations: deque[str] = deque(maxlen=n_obs)
        self._actions: deque[str] = deque(maxlen=n_obs - 1)
        self._mission = ""
        self.prompt = ""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        _, info = self.env.reset(seed=seed, options=options)
        self._observations.clear()
        self._actions.clear()
        self._mission = str(info.get("mission", ""))
        self._observations.append(caption_to_observation(info.get("caption", "")))
        return self._observe(), info

    def step(self, action: Any):
        action = int(action)
        _, reward, terminated, truncated, info = self.env.step(action)
        self._actions.append(ACTION_TEXTS[action])  # a no-op when n_obs is 1 (maxlen 0)
        self._observations.append(caption_to_observation(info.get("caption", "")))
        info["env_reward"] = reward
        return self._observe(), self.reward_scale * float(reward), terminated, truncated, info

    def _observe(self) -> np.ndarray:
        # The deques keep one action fewer than observations (both grow together per step).
        self.prompt = self._fit(list(self._observations), list(self._actions))
        return encode_prompt(self.prompt, self.max_prompt_bytes)

    def _fit(self, observations: list[str], actions: list[str]) -> str:
        """The longest history (newest observations) whose prompt fits the byte budget."""
        while True:
            prompt = build_prompt(self._mission, observations, actions)
            if len(prompt.encode("utf-8")) <= self.max_prompt_bytes:
                return prompt
            if len(observations) == 1:
                break
            observations, actions = observations[1:], actions[1:]
        # Only the newest observation is left and still too long: cut its text from the left.
        over = len(prompt.encode("utf-8")) - self.max_prompt_bytes
        text = observations[0].encode("utf-8")
        if over > len(text):
            raise ValueError(
                f"max_prompt_bytes ({self.max_prompt_bytes}) cannot hold even the "
                "goal and action lines of the prompt"
            )
        cut = text[over:].decode("utf-8", errors="ignore")
        return build_prompt(self._mission, [cut], [])


def register_glam_env(
    env: str, n_obs: int = 3, max_prompt_bytes: int = 1024, reward_scale: float = 20.0
) -> str:
    """Registers ``<env>+glam`` with RLlib (the registry's env in :class:`GLAMPromptObservation`)
    and returns the name."""
    name = f"{env}+glam"

    def make(env_config: Mapping[str, Any]) -> gym.Env:
        return GLAMPromptObservation(
            env_registry.make_runner_env(env, env_config),
            n_obs=n_obs,
            max_prompt_bytes=max_prompt_bytes,
            reward_scale=reward_scale,
        )

    register_env(name, make)
    return name
