"""ELLM's settings, as a task file's ``ellm:`` section gives them; their defaults are
:class:`~rl_bk.algorithms.ellm_ppo.config.ELLMPPOConfig`'s (``goal_conditioned`` is the
method's: it wraps the env).
"""

from __future__ import annotations

from pydantic import Field

from rl_bk.algorithms.training_settings import SettingsSection


class ELLMSettings(SettingsSection):
    """ELLM's settings for the ellm and ellm-novelty methods (``ELLMPPOConfig.training``); who
    suggests goals is the ``knowledge`` section's labeler (or a trial's ``backend``)."""

    ellm_coeff: float = Field(1.0, ge=0)
    extrinsic_coeff: float = Field(1.0, ge=0)  # ELLM's pretraining: 0
    threshold: float | None = Field(None, ge=-1, le=1)  # None: GoalMatcher's default
    #: suggestions per caption; None: every feasible goal from the oracle (ELLM's), 5 from an LLM
    max_goals: int | None = Field(None, ge=1, le=32)
    include_mission: bool = False
    label_batch_size: int = Field(4, gt=0)  # small: a batch waits for its first labels
    label_timeout_s: float = Field(120.0, ge=0)  # a batch's wait for its suggestions
    goal_conditioned: bool = False  # the policy also sees the embedded suggestions
