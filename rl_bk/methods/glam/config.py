"""GLAM-PPO's config: RLlib's PPO with an LLM as the policy (:class:`GLAMTorchRLModule`). It
wires the RLModule spec (built at call time, so values Tune sets apply); PPO's learner, loss
and GAE are RLlib's own. Defaults are GLAM's (flowersteam/Grounding_LLMs_with_online_RL),
with two adaptations to RLlib's PPO: :class:`GLAMPPOConfig`, and
docs/methods.md#where-ptgm-and-glam-here-depart-from-their-papers-and-why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.methods.glam.language_model import VALID_MODELS
from rl_bk.methods.glam.rl_module import GLAMTorchRLModule
from rl_bk.methods.glam.settings import GLAMSettings


class GLAMPPOConfig(BasePPOConfig):
    """RLlib's PPO with GLAM's module and GLAM's PPO settings::

        env = register_glam_env("BabyAI-Text-GoToLocal-RedBall-S20-v0")   # prompt observations
        config = (GLAMPPOConfig()
                  .environment(env)
                  .training(glam_model="smollm2", lora_r=None, max_prompt_tokens=512, lr=1e-6))

    The module gives the action logits (the action texts' log-likelihoods) and the values, and
    RLlib's GAE asks for values only (one prompt pass; see ``compute_values``). GLAM's
    defaults: the whole LLM fine-tuned (``lora_r=None``), clip 0.2, entropy 0.01, value 0.5,
    grad-norm clip 0.5, 4 epochs, γ 0.99, λ 0.99, lr 1e-6, no KL term; task files usually set
    PPO's settings themselves. Two adaptations to RLlib's PPO:

    - RLlib's ``vf_clip_param`` clamps the squared value error (GLAM clips the value's change
      instead); its default 10 would stop value gradients on GLAM's 20-scaled returns, so the
      default here is 400 (= 20²);
    - LoRA dropout, target modules and the value head's width can be set through
      ``.rl_module(model_config={"lora": {...}, "value_hidden": ...})``; ``training(lora_r=...,
      lora_alpha=...)`` sets r and alpha on top (and ``lora_r=None`` turns LoRA off).

    ``validate()`` checks that a model given by path is a folder with a ``config.json``, so a
    wrong path fails before any trial starts, and that GPUs asked for env runners
    (``env_runners(num_gpus_per_env_runner=...)``) have remote runners to go to.
    """

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or GLAMPPO)
        # GLAM's PPO settings (flowersteam/Grounding_LLMs_with_online_RL), over RLlib's.
        self.lr = 1e-6
        self.gamma = 0.99
        self.lambda_ = 0.99
        self.clip_param = 0.2
        self.entropy_coeff = 0.01
        self.vf_loss_coeff = 0.5
        self.grad_clip = 0.5
        self.grad_clip_by = "global_norm"
        self.num_epochs = 4
        self.use_kl_loss = False
        self.vf_clip_param = 400.0  # = 20², for GLAM's 20-scaled returns (class docstring)
        # GLAM's settings (declared once, in GLAMSettings, the task's ``glam:`` section), but
        # for lora_r: GLAM's paper's (the whole LLM fine-tuned) where a task's is LoRA.
        self.glam = GLAMSettings(lora_r=None)

    @override(PPOConfig)
    def training(
        self,
        *,
        glam: GLAMSettings = NotProvided,
        glam_model: str = NotProvided,
        **kwargs: Any,
    ) -> GLAMPPOConfig:
        """PPO's training settings, plus GLAM's.

        Args:
            glam: GLAM's settings (:class:`~rl_bk.methods.glam.settings.GLAMSettings`, each
                field's meaning there); any of its fields may also be given by name
                (``training(lora_r=8)``), but for ``model``, which is RLlib's own
                ``training()`` argument:
            glam_model: the policy's LLM (the settings' ``model``): "tiny" (random, for
                tests), "smollm2" (the packaged SmolLM2-135M-Instruct) or a Hugging Face
                causal-LM folder.
        """
        glam = self.glam if glam is NotProvided else glam
        if glam_model is not NotProvided:
            glam = glam.updated({"model": glam_model})
        self.glam = glam.take_from(kwargs)
        super().training(**kwargs)
        return self

    @override(PPOConfig)
    def validate(self) -> None:
        super().validate()
        if not (self.enable_rl_module_and_learner and self.enable_env_runner_and_connector_v2):
            self._value_error("GLAM-PPO runs on RLlib's new API stack only")
        model = self.glam.model
        if not model:
            self._value_error(
                'glam_model must be "tiny", "smollm2" or the path of a Hugging '
                f"Face causal-LM folder, got {model!r}"
            )
        if model not in ("tiny", "smollm2"):
            folder = Path(model).expanduser()
            if not (folder / "config.json").is_file():
                what = "does not exist" if not folder.exists() else "has no config.json"
                self._value_error(
                    f"glam_model {model!r} ({folder}) {what}: give {VALID_MODELS} "
                    "(a task file's glam.model), on a path every node running the learner or "
                    "an env runner reads"
                )
        # (An evaluation config inherits the setting; its runners are the evaluation's own.)
        if self.num_gpus_per_env_runner and not self.num_env_runners and not self.in_evaluation:
            self._value_error(
                "num_gpus_per_env_runner is for remote env runners; with num_env_runners 0 "
                "the trial's own env runner samples on the CPU: set num_env_runners >= 1 (a "
                "task's env_runners section)"
            )
        model = self.model_config
        if model.get("use_lstm") or model.get("use_attention"):
            self._value_error(
                "GLAM's policy is the LLM on the prompt's history: use_lstm / "
                "use_attention do not apply"
            )

    def glam_model_config(self) -> dict[str, Any]:
        """The GLAM keys of the RLModule's model_config, from the training settings (the seed,
        which initialises the value head and the tiny LLM, is ``debugging(seed=...)``'s)."""
        g, lora = self.glam, None
        if g.lora_r is not None:
            user = dict(self.model_config.get("lora") or {})
            lora = {**user, "r": g.lora_r, "alpha": g.lora_alpha}
        return {
            "model": g.model,
            "lora": lora,
            "seed": int(self.seed or 0),
            "max_prompt_tokens": g.max_prompt_tokens,
            "float32_matmul_precision": g.float32_matmul_precision,
        }

    @override(PPOConfig)
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=GLAMTorchRLModule, model_config=self.glam_model_config())


class GLAMPPO(PPO):
    """RLlib's PPO with GLAM's config, so that what asks the algorithm class for its default
    config (Tune's resource request, on the driver) validates GLAM's settings too."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> GLAMPPOConfig:
        return GLAMPPOConfig()
