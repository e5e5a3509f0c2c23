"""BK's settings, as a task file's ``knowledge:`` section gives them: how each form of its
knowledge is built (``code``, ``preference``, ``goals``) and how the potential shapes PPO's
rewards (the shaping fields, whose defaults are
:class:`~rl_bk.methods.bk.config.ShapedPPOConfig`'s). The rest of that section (who
labels, the dataset, Motif's settings) is shared with other methods and stays in the task
schema, whose ``KnowledgeParams`` extends :class:`BKSettings`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rl_bk.algorithms.training_settings import SettingsSection

#: The shaping's choices, declared once: the settings below and the shaping term
#: (:mod:`rl_bk.methods.bk.potential_shaping`) both read them.
Normalization = Literal["discounted-sum-std", "std", "none"]
Convention = Literal["bk", "ng"]
EpisodeStart = Literal["repeat-first", "short"]


class CodeSettings(SettingsSection):
    """BK-Code: the LLM writes compute_potential(window) and improves it.

    ``path``: a potential function written by hand (a Python file defining
    ``compute_potential(window)``, as the LLM's would), used instead of asking the labeler;
    the artifact records it as hand-written. A relative path is read from the repository root.
    """

    path: str | None = None
    rounds: int = Field(3, gt=0)
    candidates: int = Field(1, gt=0)  # Eureka-style: several codes, compared as trials
    segments_per_round: int = Field(5, gt=0)
    horizon: int = Field(5, gt=0)


class PreferenceSettings(SettingsSection):
    """BK-Pref: segment pairs labelled by the LLM train a preference-transformer potential.

    ``served``: trials read Phi from the reward-model app (one Serve deployment for the sweep,
    the model registered there as ``bk-pref-<artifact>``), one call per train batch, instead
    of running the model in the learner; a trial's ``served`` parameter overrides it.
    """

    pairs: int = Field(500, gt=0)
    horizon: int = Field(5, gt=0)
    epochs: int = Field(5, gt=0)
    served: bool = False
    #: train on the labels' probabilities (token-score labels carry them); BK: hard labels
    soft_labels: bool = False


class GoalSettings(SettingsSection):
    """BK-Goal: a goal list from captions; Phi = similarity to the retrieved goals."""

    iterations: int = Field(100, gt=0)
    top_k: int = Field(3, gt=0)
    threshold: float | None = None  # None: the potential's measured default for MiniLM
    horizon: int = Field(4, gt=0)


class ShapingSettings(SettingsSection):
    """How the potential shapes PPO's rewards (``ShapedPPOConfig.training``); BK's values
    (mansicer/background-knowledge-rl, ``train_rs.py``) by default."""

    shaping_coeff: float = Field(1.0, ge=0)
    #: what Phi is divided by: BK's "discounted-sum-std", "std" (of Phi itself) or "none"
    potential_normalization: Normalization = "discounted-sum-std"
    #: BK's "bk" (F_t = gamma Phi(s_t) - Phi(s_{t-1}); the last step is not charged) or
    #: Ng et al.'s "ng" (F_t = gamma Phi(s_{t+1}) - Phi(s_t), Phi(terminal) = 0)
    shaping_convention: Convention = "bk"
    #: an episode's first windows: BK's "repeat-first" (filled with the first state and
    #: action) or "short" (only the states there are)
    episode_start_window: EpisodeStart = "repeat-first"


class BKSettings(ShapingSettings):
    """Everything only the bk-* methods read: each form's build settings and the shaping."""

    code: CodeSettings = CodeSettings()
    preference: PreferenceSettings = PreferenceSettings()
    goals: GoalSettings = GoalSettings()


#: none of its own: BK's settings are the shared ``knowledge:`` section's
#: (:class:`~rl_bk.experiments.task_config.KnowledgeParams` extends :class:`BKSettings`)
TASK_SECTIONS: dict[str, type[SettingsSection]] = {}
