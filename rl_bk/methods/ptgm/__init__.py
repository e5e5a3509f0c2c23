"""PTGM-PPO: hierarchical RL over pre-trained goals (PKU-RL/PTGM), on the repo's envs.

Everything that is PTGM's lives here: :mod:`.pretraining` (the codebook, the goal-conditioned
low-level policy and the goal prior, built offline from a dataset), :mod:`.high_level_env`
(``<env>+ptgm``), :mod:`.prior_kl` (the KL reward term) and :mod:`.config`. The names load
lazily, so that the pre-training imports without the RLlib algorithm classes.
"""

from __future__ import annotations

from rl_bk.algorithms.lazy_names import lazy_names

_WHERE = {
    "HighLevelGoalEnv": "high_level_env",
    "PTGMAPPOConfig": "config",
    "PTGMPPOConfig": "config",
    "register_high_level_env": "high_level_env",
}
__all__ = sorted(_WHERE)
__getattr__ = lazy_names(__name__, _WHERE)
