"""ELLM's settings, declared once: the task file's ``ellm:`` section, which
:class:`~rl_bk.methods.ellm.config.ELLMPPOConfig` takes whole and its reward reads
(``goal_conditioned`` is the method's: it wraps the env).
"""

from __future__ import annotations

from pydantic import Field

from rl_bk.algorithms.training_settings import SettingsSection


class ELLMSettings(SettingsSection):
    """ELLM's settings for the ellm and ellm-novelty methods; who suggests goals is the
    ``knowledge`` section's labeler (or a trial's ``backend``). The reward:
    ``r = extrinsic_coeff * r_env + ellm_coeff * r_ellm`` (``extrinsic_coeff``: the task's
    ``ppo:`` section, every method's)."""

    ellm_coeff: float = Field(1.0, ge=0)  # the goal reward's weight
    #: cosine similarity a match must exceed (None: GoalMatcher's default)
    threshold: float | None = Field(None, ge=-1, le=1)
    #: suggestions per caption; None: every feasible goal from the oracle (ELLM's), 5 from an LLM
    max_goals: int | None = Field(None, ge=1, le=32)
    include_mission: bool = False  # send the env's mission with each caption
    #: captions per labeler call: small, because a train batch waits for its first labels
    label_batch_size: int = Field(4, gt=0)
    #: how long a train batch may wait for its suggestions (0: never; steps without pay 0)
    label_timeout_s: float = Field(120.0, ge=0)
    #: the policy also sees the embedded suggestions (ELLM's goal input; wraps the env)
    goal_conditioned: bool = False


#: the task file's sections this family adds, by name (read by the task config)
TASK_SECTIONS = {"ellm": ELLMSettings}
