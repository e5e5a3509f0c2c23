"""GLAM (Carta et al. 2023): an LLM is the policy, and PPO fine-tunes it, on RLlib's new API
stack. The observation is GLAM's text prompt (:class:`GLAMPromptObservation`), the policy
scores each action text by its log-likelihood under the LLM, and a value head reads the
prompt's last hidden state (:class:`GLAMTorchRLModule`). The names load lazily, so that the
model loader (``scripts/convert_gguf_to_hf.py`` uses it) and the env wrapper import without
RLlib.
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
