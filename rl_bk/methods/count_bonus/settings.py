"""The count bonus's settings, declared once: the task file's ``count_bonus:`` section, which
:class:`~rl_bk.methods.count_bonus.config.CountBonusPPOConfig` takes whole
(``training(count_bonus=...)``, or ``training(coeff=...)`` by name) and
:class:`~rl_bk.methods.count_bonus.intrinsic_reward.CaptionCountBonus` reads.
"""

from __future__ import annotations

from pydantic import Field

from rl_bk.algorithms.training_settings import SettingsSection


class CountBonusSettings(SettingsSection):
    """The count-bonus method's settings. The reward: ``r = extrinsic_coeff * r_env +
    coeff / sqrt(N)``, N the step caption's count over the whole run so far (this step
    included)."""

    #: the bonus's weight: a caption seen for the first time earns ``coeff``
    coeff: float = Field(0.1, ge=0)


#: the task file's sections this family adds, by name (read by the task config)
TASK_SECTIONS = {"count_bonus": CountBonusSettings}
