"""The Serve labeler app's configuration: a labeler (``rl_bk.labeling.config.LabelerConfig``:
backend, model, label store) and how the app serves it (YAML files or CLI flags fill it).

host: 127.0.0.1            # HTTP binds to loopback unless you say otherwise
num_replicas: 1            # max_replicas above it: Serve autoscales
resources: {llm_node: 1}   # run replicas only on nodes with this custom resource
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rl_bk.labeling.config import LabelerConfig, load_config


class LabelerAppConfig(LabelerConfig):
    app_name: str = "labeler"
    route_prefix: str = "/"
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    num_cpus: float = Field(0.25, ge=0)  # per replica; llama.cpp uses n_threads regardless
    num_gpus: float = Field(0.0, ge=0)  # per replica (vLLM on a GPU node)
    #: custom Ray resources per replica, e.g. {"llm_node": 1} to run only on GPU workers
    resources: dict[str, float] = Field(default_factory=dict)
    num_replicas: int = Field(1, ge=1)
    max_replicas: int | None = Field(None, ge=1)  # above num_replicas: Serve autoscales
    target_ongoing_requests: float = Field(2.0, gt=0)  # per replica, when autoscaling
    max_ongoing_requests: int = Field(64, ge=1)
    # @serve.batch: handle calls merged into one backend call per task
    max_batch_size: int = Field(64, ge=1)
    #: how long a call for new labels waits for others to merge with (stored labels never wait)
    batch_wait_timeout_s: float = Field(0.02, ge=0)


def load_labeler_app_config(
    path: str | Path | None = None, **overrides: object
) -> LabelerAppConfig:
    return load_config(LabelerAppConfig, path, **overrides)
