"""RND-PPO's settings, as a task file's ``rnd:`` section gives them (and
``RNDPPOConfig.training``): the defaults are CleanRL's ``ppo_rnd_envpool.py`` and BK's stage 1
(mansicer/background-knowledge-rl)."""

from __future__ import annotations

from pydantic import Field, PositiveInt, model_validator

from rl_bk.algorithms.training_settings import SettingsSection


class RNDSettings(SettingsSection):
    """How RND's intrinsic reward enters PPO, and BK's collection of stochastic-policy
    episodes during training (with ``precollect_dir`` set)."""

    int_coeff: float = Field(1.0, ge=0)  # the intrinsic advantage's weight
    ext_coeff: float = Field(2.0, ge=0)  # the extrinsic advantage's weight (CleanRL, BK: 2)
    #: the intrinsic return's discount (non-episodic: it bootstraps across episode ends)
    int_gamma: float = Field(0.99, ge=0, le=1)
    rnd_output_dim: int = Field(512, gt=0)  # the target's and predictor's embedding size
    rnd_hiddens: list[PositiveInt] = Field(default_factory=lambda: [256, 256], min_length=1)
    #: the share of each minibatch the predictor trains on
    update_proportion: float = Field(0.25, gt=0, le=1)
    rnd_lr: float | None = Field(None, gt=0)  # the predictor's lr; None: the policy's
    precollect_every_timesteps: int = Field(500_000, ge=1)  # env steps between collections
    precollect_episodes: int = Field(50, ge=1)  # episodes per collection

    @model_validator(mode="after")
    def _some_advantage(self) -> RNDSettings:
        if self.int_coeff + self.ext_coeff == 0:
            raise ValueError("int_coeff and ext_coeff must be >= 0, and not both 0")
        return self


#: the task file's sections this family adds, by name (read by the task config)
TASK_SECTIONS = {"rnd": RNDSettings}
