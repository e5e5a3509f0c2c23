"""Who labels: one configuration type for every labeler (:class:`LabelerConfig`: a task file's
``knowledge.labeler``, what ``rl-bk label`` reads, and the base of the Serve labeler app's
configuration), and the backend names, declared once. Where a labeler runs is
:class:`rl_bk.labeling.labeler.LabelerSpec`;
:func:`rl_bk.labeling.backends.registry.build_label_service` is the one place a config
becomes a working labeler. Details: docs/labeler.md#backends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeVar, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

#: Who can label: the rule-based oracle (the default: nothing to install), the embedded
#: llama.cpp model, a vLLM app or any OpenAI-compatible server, and a fake for tests.
BackendName = Literal["oracle", "llamacpp", "vllm", "openai", "fake"]
BACKENDS: tuple[str, ...] = get_args(BackendName)
#: The models PyPI packages ship (``backends/packaged_models.py``). The default labeller is the
#: best that runs at a usable speed on two cores; SmolLM2 is for fast plumbing tests.
PackagedModel = Literal["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2", "gemma3-270m"]
PACKAGED_MODELS: tuple[str, ...] = get_args(PackagedModel)
DEFAULT_PACKAGED: PackagedModel = "qwen2.5-coder-1.5b"
AnswerMode = Literal["token-scores", "text"]


class LabelerConfig(BaseModel):
    """Who labels: the backend and its model, and the label store its answers go to::

        backend: oracle            # oracle | llamacpp | vllm | openai | fake
        packaged: qwen2.5-coder-1.5b  # llamacpp: the embedded model (packaged_models.py) ...
        model_path: null           # ... or any GGUF file
        answer_mode: token-scores  # closed questions from the answers' token scores, or "text"
        preference_orders: 2       # each pair asked in both orders (position bias cancels)
        store_path: null           # SQLite label store (default ~/.cache/rl-bk/labels.sqlite3)

    The Serve labeler app's configuration extends it with how the app is served
    (``serve_deployments.configs.LabelerAppConfig``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: BackendName = "oracle"
    # llamacpp
    packaged: PackagedModel = DEFAULT_PACKAGED
    model_path: str | None = None  # a GGUF file; overrides `packaged`
    n_ctx: int = Field(4096, ge=256)
    n_threads: int = Field(2, ge=1)
    # how an LLM answers closed questions (preference, helpful): closed_answers.py
    answer_mode: AnswerMode = "token-scores"
    preference_orders: int = Field(2, ge=1, le=2)
    helpful_threshold: float = Field(0.5, gt=0, lt=1)
    # openai (any OpenAI-compatible server); the key is read from the named env variable
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    request_timeout_s: float = Field(60.0, gt=0)
    # fake (tests)
    fake_delay_s: float = Field(0.0, ge=0)
    # the label store (None: $RLBK_LABEL_STORE or the default file)
    store_path: str | None = None


class ConfigError(ValueError):
    pass


Config = TypeVar("Config", bound=BaseModel)


def load_config(
    config_type: type[Config], path: str | Path | None = None, /, **overrides: object
) -> Config:
    """A ``config_type`` from a YAML file (optional) with overrides (None: not given); one-line
    errors that name the field."""
    data: dict = {}
    if path is not None:
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as err:
            raise ConfigError(f"{path}: {str(err).splitlines()[0]}") from None
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return config_type.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise ConfigError(f"labeler config: {problems}") from None


def load_labeler_config(path: str | Path | None = None, **overrides: object) -> LabelerConfig:
    return load_config(LabelerConfig, path, **overrides)
