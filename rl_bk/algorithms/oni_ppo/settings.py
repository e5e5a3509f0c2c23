"""ONI's settings, as a task file's ``oni:`` section gives them; their defaults are
:class:`~rl_bk.algorithms.oni_ppo.config.ONIPPOConfig`'s. Motif's offline build settings are
the ``motif:`` part of the shared ``knowledge:`` section (:class:`MotifSettings`).
"""

from __future__ import annotations

from pydantic import Field

from rl_bk.algorithms.training_settings import SettingsSection


class ONISettings(SettingsSection):
    """ONI's settings for the oni-* and motif methods (``ONIPPOConfig.training``); who labels
    is the ``knowledge`` section's labeler (or a trial's ``backend``)."""

    caption_key: str = "caption"  # the info key of a step's caption ("message" on NetHack)
    goal: str = "make progress in the game"  # the labeller's criterion; cosine-BoW's target
    extrinsic_coeff: float = Field(1.0, ge=0)  # ONI: 0.1 on NetHack Score, 10 elsewhere
    llm_coeff: float = Field(0.4, ge=0)
    beta: float = Field(3.0, ge=0)
    label_batch_size: int = Field(32, gt=0)
    # the share of time an embedded (llama.cpp) labeler may compute beside training
    label_busy_fraction: float = Field(1.0, gt=0, le=1)
    min_examples: int = Field(32, ge=0)
    classification_threshold: float = 0.5
    ranking_threshold: float = -0.5
    ranking_quantile: float | None = Field(None, ge=0, le=1)
    #: Motif's threshold: this quantile of the normalised reward over its dataset (Motif: 0.5)
    motif_quantile: float | None = Field(0.5, ge=0.05, le=0.95)
    cosine_threshold: float = 0.5
    pairs_per_batch: int = Field(10, gt=0)
    reward_model_steps: int = Field(32, gt=0)  # gradient steps when new labels came (ONI: 32)
    reward_model_batch_size: int = Field(256, gt=0)
    reward_model_lr: float = Field(1e-4, gt=0)
    #: env steps during which every update fits the model on all labels so far (see learner)
    reward_model_full_until: int = Field(25_000, ge=0)
    reward_model_in_background: bool = True  # fit beside training (ONI fits in place)


class MotifSettings(SettingsSection):
    """Offline Motif (``motif``): caption pairs labelled from the dataset, then the ranker."""

    pairs: int = Field(2000, gt=0)
    epochs: int = Field(30, gt=0)
