"""ONI-PPO: PPO on online intrinsic rewards from LLM feedback (retrieval, classification,
ranking, cosine-BoW), and offline Motif. The names load lazily, so that the settings
(:mod:`.settings`) import without the RLlib classes."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ONI_MODULE_ID",
    "REWARD_TYPES",
    "ONIPPOConfig",
    "OnlineIntrinsicReward",
    "OnlineRewardModel",
]
_WHERE = {"ONIPPOConfig": "config", "REWARD_TYPES": "intrinsic_reward",
          "OnlineIntrinsicReward": "intrinsic_reward", "ONI_MODULE_ID": "rl_module",
          "OnlineRewardModel": "rl_module"}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
