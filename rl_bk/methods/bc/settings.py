"""BC-PPO's settings, as a task file's ``bc:`` section gives them (and
``BCPPOConfig.training``): how the policy is cloned from the ``bc`` artifact before PPO
starts."""

from __future__ import annotations

from pydantic import Field

from rl_bk.algorithms.training_settings import SettingsSection


class BCSettings(SettingsSection):
    """Behaviour cloning into PPO's policy head, before the first sample."""

    bc_epochs: int = Field(20, ge=1)  # passes over the data; the best held-out epoch is kept
    bc_batch_size: int = Field(256, ge=1)  # state-action pairs per gradient step
    bc_lr: float = Field(1e-3, gt=0)  # Adam's learning rate for cloning
    #: the share of episodes held out to choose the epoch and report accuracy (0: the last)
    bc_holdout: float = Field(0.1, ge=0, lt=1)


#: the task file's sections this family adds, by name (read by the task config)
TASK_SECTIONS = {"bc": BCSettings}
