"""GLAM's settings, as a task file's ``glam:`` section gives them. The defaults of
:class:`~rl_bk.methods.glam.config.GLAMPPOConfig`'s own ``training()`` parameters come
from here, but for ``lora_r``: the config keeps GLAM's paper's (the whole LLM fine-tuned), a
task runs LoRA unless it says otherwise.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from rl_bk.algorithms.training_settings import SettingsSection


class GLAMSettings(SettingsSection):
    """GLAM (the ``glam`` method): the language model is the policy, PPO fine-tunes it."""

    #: ``model`` is also RLlib's ``training()`` argument: a config takes this one as ``glam_model``
    not_by_name: ClassVar[tuple[str, ...]] = ("model",)

    model: str = "smollm2"  # "smollm2" (packaged), "tiny" (random, plumbing) or a HF folder
    lora_r: int | None = Field(16, gt=0)  # None: fine-tune every weight (GLAM's paper)
    lora_alpha: int = Field(32, gt=0)
    n_obs: int = Field(3, gt=0)  # observations in the prompt (GLAM: nbr_obs 3)
    max_prompt_tokens: int = Field(512, gt=0)
    reward_scale: float = Field(20.0, gt=0)  # GLAM: 20 * r_env on success
    #: GPUs (or a share of one) for the learner, in the trial's process, and for each remote
    #: env runner (the local one, with num_env_runners 0, samples on the CPU)
    num_gpus_per_learner: float = Field(0.0, ge=0)
    num_gpus_per_env_runner: float = Field(0.0, ge=0)
    #: torch.set_float32_matmul_precision in each process that builds the LLM: "highest"
    #: (PyTorch's default, full float32 products) or "high" (TF32 on a GPU's tensor cores)
    float32_matmul_precision: Literal["highest", "high", "medium"] = "highest"
    #: PPO's training() values for GLAM (an LLM policy wants a far smaller lr and batch)
    ppo: dict[str, Any] = Field(default_factory=dict)


#: the task file's sections this family adds, by name (read by the task config)
TASK_SECTIONS = {"glam": GLAMSettings}
