"""GLAM: an LLM is the policy, and PPO fine-tunes it (Carta et al. 2023), on RLlib's new API stack.

    from rl_bk.methods.glam import GLAMPPOConfig, register_glam_env
    env = register_glam_env("BabyAI-Text-GoToLocal-RedBall-S20-v0")
    config = GLAMPPOConfig().environment(env).training(glam_model="smollm2", lora_r=16)

The observation is GLAM's text prompt (:class:`GLAMPromptObservation`), the policy scores each
action text by its log-likelihood under the LLM and a value head reads the prompt's last hidden
state (:class:`GLAMTorchRLModule`). The names are loaded lazily, so that the model loader
(used by ``scripts/convert_gguf_to_hf.py``) and the env wrapper import without RLlib.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "GLAMPPOConfig": "config",
    "GLAMTorchRLModule": "rl_module",
    "GLAMPromptObservation": "prompt_observation",
    "register_glam_env": "prompt_observation",
    "load_causal_lm": "language_model",
}
__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
