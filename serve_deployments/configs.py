"""Configuration of the Serve apps, as pydantic models (YAML files or CLI flags fill them).

backend: llamacpp          # llamacpp | openai | oracle | fake  (vllm: next)
packaged: smollm2          # llamacpp: the embedded model (smollm2 | gemma3-270m) ...
model_path: null           # ... or any GGUF file
store_path: null           # SQLite label store (default ~/.cache/rl-bk/labels.sqlite3)
host: 127.0.0.1            # HTTP binds to loopback unless you say otherwise
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

BackendName = Literal["llamacpp", "vllm", "openai", "oracle", "fake"]


class LabelerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: BackendName = "llamacpp"
    # llamacpp
    packaged: Literal["smollm2", "gemma3-270m"] = "smollm2"
    model_path: str | None = None  # a GGUF file; overrides `packaged`
    n_ctx: int = Field(2048, ge=256)
    n_threads: int = Field(2, ge=1)
    # openai (any OpenAI-compatible server); the key is read from the named env variable
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    request_timeout_s: float = Field(60.0, gt=0)
    # fake (tests)
    fake_delay_s: float = Field(0.0, ge=0)
    # store and serving
    store_path: str | None = None
    app_name: str = "labeler"
    route_prefix: str = "/"
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    num_cpus: float = Field(0.25, ge=0)  # per replica; llama.cpp uses n_threads regardless
    num_gpus: float = Field(0.0, ge=0)  # per replica (vLLM on a GPU node)
    #: custom Ray resources per replica, e.g. {"llm_node": 1} to run only on GPU workers
    resources: dict[str, float] = {}
    num_replicas: int = Field(1, ge=1)
    max_replicas: int | None = Field(None, ge=1)  # above num_replicas: Serve autoscales
    target_ongoing_requests: float = Field(2.0, gt=0)  # per replica, when autoscaling
    max_ongoing_requests: int = Field(64, ge=1)
    # @serve.batch: handle calls merged into one backend call per task
    max_batch_size: int = Field(64, ge=1)
    #: how long a call for new labels waits for others to merge with (stored labels never wait)
    batch_wait_timeout_s: float = Field(0.02, ge=0)


class ConfigError(ValueError):
    pass


def load_labeler_config(path: str | Path | None = None, **overrides: object) -> LabelerConfig:
    """A LabelerConfig from a YAML file (optional) with CLI overrides; one-line errors."""
    data: dict = {}
    if path is not None:
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as err:
            raise ConfigError(f"{path}: {str(err).splitlines()[0]}") from None
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return LabelerConfig.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise ConfigError(f"labeler config: {problems}") from None
