"""ELLM-PPO (Du et al. 2023): PPO on the reward for achieving goals an LLM suggested for the
current caption.

Everything that is ELLM's lives here: :mod:`.intrinsic_reward` (suggestions, the novelty
filter, the reward function), :mod:`.goal_matching` (matching suggestions against the envs'
``info["achieved"]``, once per goal per episode), :mod:`.vocabulary` (every goal of a family,
for the novelty baseline, and the synonyms of an achievement), :mod:`.goal_observation` (the
goal-conditioned observation) and :mod:`.config`. The names load lazily.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SUGGESTERS", "ELLMIntrinsicReward", "ELLMPPOConfig"]


def __getattr__(name: str) -> Any:
    if name == "ELLMPPOConfig":
        from rl_bk.algorithms.ellm_ppo.config import ELLMPPOConfig

        return ELLMPPOConfig
    if name in ("SUGGESTERS", "ELLMIntrinsicReward"):
        from rl_bk.algorithms.ellm_ppo import intrinsic_reward

        return getattr(intrinsic_reward, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
