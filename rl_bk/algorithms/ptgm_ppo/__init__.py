"""PTGM-PPO: hierarchical RL over pre-trained goals (PKU-RL/PTGM), on the repo's envs.

Everything that is PTGM's lives here: :mod:`.pretraining` (the codebook, the goal-conditioned
low-level policy and the goal prior, built offline from a dataset), :mod:`.high_level_env`
(``<env>+ptgm``), :mod:`.prior_kl` (the KL reward term) and :mod:`.config`. The names load
lazily, so that the pre-training imports without the RLlib algorithm classes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HighLevelGoalEnv", "PTGMPPOConfig", "register_high_level_env"]


def __getattr__(name: str) -> Any:
    if name == "PTGMPPOConfig":
        from rl_bk.algorithms.ptgm_ppo.config import PTGMPPOConfig

        return PTGMPPOConfig
    if name in ("HighLevelGoalEnv", "register_high_level_env"):
        from rl_bk.algorithms.ptgm_ppo import high_level_env

        return getattr(high_level_env, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
