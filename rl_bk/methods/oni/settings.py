"""ONI's settings, declared once: the task file's ``oni:`` section, which
:class:`~rl_bk.methods.oni.config.ONIPPOConfig` takes whole (``training(oni=...)``) and
:class:`~rl_bk.methods.oni.intrinsic_reward.OnlineIntrinsicReward` reads. A new setting is
a field here and the line that uses it. Motif's offline build settings are the ``motif:`` part
of the shared ``knowledge:`` section (:class:`MotifSettings`).
"""

from __future__ import annotations

from pydantic import Field

from rl_bk.algorithms.training_settings import SettingsSection


class ONISettings(SettingsSection):
    """ONI's settings for the oni-* and motif methods; who labels is the ``knowledge``
    section's labeler (or a trial's ``backend``). The reward: ``r = extrinsic_coeff * r_env +
    llm_coeff * r_int * N ** -beta``, N the caption's count in the episode so far."""

    #: the info key of a step's caption ("message" on NetHack)
    caption_key: str = "caption"
    #: the task in words: the labeller's criterion and cosine-BoW's target
    goal: str = "make progress in the game"
    #: the intrinsic reward's weight (ONI: 0.4)
    llm_coeff: float = Field(0.4, ge=0)
    #: the count decay's exponent (ONI: 3)
    beta: float = Field(3.0, ge=0)
    #: captions (or caption pairs) per labeler call
    label_batch_size: int = Field(32, gt=0)
    #: the largest share of wall time an embedded (llama.cpp) labeler computing beside
    #: training may label; it rests in between (1: flat out). A remote labeler is never held
    label_busy_fraction: float = Field(1.0, gt=0, le=1)
    #: labelled examples before a reward model's output is paid
    min_examples: int = Field(32, ge=0)
    #: p(helpful) above which classification pays 1 (ONI: 0.5)
    classification_threshold: float = 0.5
    #: the normalised ranking reward is kept above this value (ONI: -0.5)
    ranking_threshold: float = -0.5
    #: instead, keep it above this quantile of the batch's values
    ranking_quantile: float | None = Field(None, ge=0, le=1)
    #: Motif's threshold: this quantile of the normalised reward over its dataset (Motif: 0.5;
    #: 0.05 to 0.95); None: ``ranking_threshold``
    motif_quantile: float | None = Field(0.5, ge=0.05, le=0.95)
    #: cosine-BoW similarity kept above this value
    cosine_threshold: float = 0.5
    #: caption pairs queued per batch for ranking labels
    pairs_per_batch: int = Field(10, gt=0)
    #: gradient steps of the online reward model when new labels came (ONI: 32)
    reward_model_steps: int = Field(32, gt=0)
    reward_model_batch_size: int = Field(256, gt=0)  # its minibatch (ONI: 256)
    reward_model_lr: float = Field(1e-4, gt=0)  # its learning rate (ONI: 1e-4)
    #: env steps during which every update fits the model on all labels so far (see learner)
    reward_model_full_until: int = Field(25_000, ge=0)
    #: fit in a thread beside training (default) or in place after each update, as ONI
    reward_model_in_background: bool = True


class MotifSettings(SettingsSection):
    """Offline Motif (``motif``): caption pairs labelled from the dataset, then the ranker."""

    pairs: int = Field(2000, gt=0)
    epochs: int = Field(30, gt=0)


#: the task file's sections this family adds, by name (read by the task config)
TASK_SECTIONS = {"oni": ONISettings}
