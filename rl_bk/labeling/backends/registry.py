"""Builds the backend a labeler config names. Each backend's packages (llama-cpp-python, vLLM,
an HTTP client, the packaged models) are optional dependencies: they are imported inside the
function that builds that backend, so a missing one is a clear error only for its users, and
``rl-bk --help``, which imports this module, loads none of them."""

from __future__ import annotations

from pathlib import Path

from rl_bk.labeling.backends.base import Backend
from rl_bk.labeling.config import LabelerConfig
from rl_bk.labeling.service import LabelService
from rl_bk.labeling.store import LabelStore


def preflight(config: LabelerConfig) -> None:
    """Cheap checks, run where the command was typed, before Serve starts a replica: a missing
    package, model file or setting fails here in one line instead of in a replica's log."""
    if config.backend == "llamacpp":
        # kept light: a backend loads on use (module docstring)
        from rl_bk.labeling.backends.llamacpp import _import_llama_cpp
        from rl_bk.labeling.backends.packaged_models import check_installed

        _import_llama_cpp()
        if config.model_path is not None:
            if not Path(config.model_path).expanduser().is_file():
                raise FileNotFoundError(f"no GGUF model file at {config.model_path}")
        else:
            check_installed(config.packaged)  # split models are joined in the replica
    elif config.backend in ("openai", "vllm") and (not config.base_url or not config.model):
        raise ValueError(f"the {config.backend} backend needs --base-url and --model")


def labeler_identity(config: LabelerConfig) -> tuple[str, bool]:
    """Whose labels ``config`` gives, named as a built labeler names them (``backend/model``;
    a GGUF file by name and the start of its SHA-256), and whether that is the oracle: for the
    results of methods that label while they train, without loading a model."""
    if config.backend == "oracle":
        # kept light: a backend loads on use (module docstring)
        from rl_bk.labeling.backends.oracle import OracleBackend

        return f"oracle/{OracleBackend.model}", True
    if config.backend == "llamacpp":
        # kept light: a backend loads on use (module docstring)
        from rl_bk.labeling.backends.packaged_models import model_digest, packaged_model_path

        path = (
            Path(config.model_path).expanduser()
            if config.model_path is not None
            else packaged_model_path(config.packaged)
        )
        return f"llamacpp/{path.name}@sha256:{model_digest(path)[:12]}", False
    if config.backend == "fake":
        return "fake/fake-v1", False
    return f"{config.backend}/{config.model}", False


def make_backend(config: LabelerConfig) -> Backend:
    name = config.backend
    if name == "fake":
        # kept light: a backend loads on use (module docstring)
        from rl_bk.labeling.backends.fake import FakeBackend

        return FakeBackend(delay_s=config.fake_delay_s)
    if name == "oracle":
        # kept light: a backend loads on use (module docstring)
        from rl_bk.labeling.backends.oracle import OracleBackend

        return OracleBackend()
    if name == "llamacpp":
        # kept light: a backend loads on use (module docstring)
        from rl_bk.labeling.backends.llamacpp import LlamaCppGenerator
        from rl_bk.labeling.backends.llm import LLMBackend

        generator = LlamaCppGenerator(
            model_path=config.model_path,
            packaged=config.packaged,
            n_ctx=config.n_ctx,
            n_threads=config.n_threads,
        )
        return LLMBackend(generator, name="llamacpp", **_answering(config))
    if name == "openai":
        # kept light: a backend loads on use (module docstring)
        from rl_bk.labeling.backends.llm import LLMBackend
        from rl_bk.labeling.backends.openai_compat import OpenAICompatGenerator

        if not config.base_url or not config.model:
            raise ValueError(
                "the openai backend needs base_url and model (e.g. --base-url "
                "http://host:8000/v1 --model my-model)"
            )
        generator = OpenAICompatGenerator(
            base_url=config.base_url,
            model=config.model,
            api_key_env=config.api_key_env,
            timeout_s=config.request_timeout_s,
        )
        return LLMBackend(generator, name="openai", **_answering(config))
    if name == "vllm":
        # kept light: a backend loads on use (module docstring)
        from rl_bk.labeling.backends.llm import LLMBackend
        from rl_bk.labeling.backends.vllm import VLLMGenerator

        if not config.base_url or not config.model:
            raise ValueError(
                "the vllm backend needs base_url and model: the vLLM app's URL "
                "(e.g. http://127.0.0.1:8000/vllm/v1) and its model_id "
                "(docs/vllm.md)"
            )
        generator = VLLMGenerator(
            config.base_url,
            config.model,
            api_key_env=config.api_key_env,
            timeout_s=config.request_timeout_s,
        )
        return LLMBackend(generator, name="vllm", **_answering(config))
    raise ValueError(f"unknown backend {name!r}: use llamacpp, vllm, openai, oracle or fake")


def _answering(config: LabelerConfig) -> dict:
    """How an LLM backend answers closed questions (``closed_answers.py``)."""
    return {
        "answer_mode": config.answer_mode,
        "preference_orders": config.preference_orders,
        "helpful_threshold": config.helpful_threshold,
    }


def build_label_service(config: LabelerConfig) -> LabelService:
    """The labeler a config names, in this process: its backend (checked first, so a missing
    package or model fails in one line) and its label store."""
    preflight(config)
    return LabelService(make_backend(config), LabelStore(config.store_path))
