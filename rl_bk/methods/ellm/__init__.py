"""ELLM-PPO (Du et al. 2023): PPO on the reward for achieving goals an LLM suggested for the
current caption. Everything that is ELLM's lives here: :mod:`.intrinsic_reward` (suggestions
and the reward function), :mod:`.goal_matching` (suggestions against what a step achieved,
once per goal per episode), :mod:`.vocabulary` (the novelty baseline's goals, synonyms),
:mod:`.goal_observation` (the goal-conditioned observation) and :mod:`.config`. The names load
lazily.
"""

from __future__ import annotations

from rl_bk.algorithms.lazy_names import lazy_names

_WHERE = {
    "SUGGESTERS": "intrinsic_reward",
    "ELLMIntrinsicReward": "intrinsic_reward",
    "ELLMAPPOConfig": "config",
    "ELLMPPOConfig": "config",
}
__all__ = sorted(_WHERE)
__getattr__ = lazy_names(__name__, _WHERE)
