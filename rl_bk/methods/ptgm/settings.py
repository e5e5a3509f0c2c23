"""PTGM's settings, as a task file's ``ptgm:`` section gives them: its pre-training and its
high-level RL (the RL ones' defaults are
:class:`~rl_bk.methods.ptgm.config.PTGMPPOConfig`'s).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rl_bk.algorithms.training_settings import SettingsSection


class PTGMSettings(SettingsSection):
    """PTGM's pre-training (``rl-bk knowledge build --kinds ptgm``, from the knowledge
    section's dataset) and its high-level RL (the ptgm and ptgm-no-kl methods)."""

    n_goals: int = Field(16, ge=2)  # codebook size (PTGM: 100 in Minecraft, 50 in Kitchen)
    #: MiniLM on captions, an autoencoder's code of the observation, or the observation
    embedding: Literal["caption-minilm", "learned", "observation"] = "caption-minilm"
    low_level_gap: tuple[int, int] = (1, 8)  # hindsight goals this many steps ahead
    prior_gap: tuple[int, int] = (1, 8)  # the prior's targets this many steps ahead
    #: the prior also reads a prediction of the current state's code (not in PTGM's paper)
    prior_sees_code: bool = False
    epochs: int = Field(20, gt=0)
    low_level_steps: int = Field(10, gt=0)  # env steps per goal (PTGM: 100)
    prior_kl_coeff: float = Field(0.05, ge=0)  # PTGM's README: kl_reward 0.05
    greedy_low_level: bool = False
    #: PPO's training() values for the high level (its steps are goals, not env steps)
    high_level_ppo: dict[str, Any] = Field(default_factory=dict)

    def pretraining(self) -> dict[str, Any]:
        """The settings the pre-trained models depend on (the artifact's key): not those
        read only at RL time, so changing those reuses the models."""
        rl_only = {"low_level_steps", "prior_kl_coeff", "greedy_low_level", "high_level_ppo"}
        return {k: v for k, v in self.model_dump(mode="json").items() if k not in rl_only}


#: the task file's sections this family adds, by name (read by the task config)
TASK_SECTIONS = {"ptgm": PTGMSettings}
