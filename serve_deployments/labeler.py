"""The LLM labeler as a Ray Serve app: HTTP for other programs, a handle for RLlib.

    app = build_labeler_app({"backend": "oracle"})
    # or: serve run serve_deployments.labeler:build_labeler_app backend=oracle
    handle = start_labeler(LabelerConfig(backend="fake"))
    handle.label.remote("helpful", [{"caption": "...", "task": "..."}]).result()

One deployment, ``LabelerServer``: it builds the configured backend and opens the shared
label store in each replica, serves :mod:`serve_deployments.http_api` over HTTP, and answers
``label(task, requests)`` calls through a DeploymentHandle (what the RLlib-side client uses).
Backend calls block (llama.cpp computes on the CPU); FastAPI runs the sync endpoints in a
thread pool and Serve runs the sync handle method in one, so the event loop stays free.
"""

from __future__ import annotations

from typing import Any

from ray import serve
from ray.serve.handle import DeploymentHandle

from rl_bk.labeling.backends.registry import make_backend
from rl_bk.labeling.service import LabelService
from rl_bk.labeling.store import LabelStore
from serve_deployments.configs import LabelerConfig
from serve_deployments.http_api import create_app

DEPLOYMENT_NAME = "LabelerServer"


@serve.deployment(name=DEPLOYMENT_NAME)
@serve.ingress()  # the app is built in the replica, after __init__: see below
class LabelerServer:
    def __init__(self, config: dict[str, Any]):
        cfg = LabelerConfig.model_validate(config)
        self.service = LabelService(make_backend(cfg), LabelStore(cfg.store_path))

    def __serve_build_asgi_app__(self):
        # Serve serves a copy of an app passed to @serve.ingress(app); building it here, in the
        # replica, lets the routes reach this replica's service.
        app = create_app()
        app.state.service = self.service
        return app

    def label(self, task: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
        """Handle API: typed labels for a batch (BackendError propagates to the caller)."""
        result = self.service.label(task, requests)
        return {
            "labels": [lab.model_dump() for lab in result.labels],
            "from_store": result.from_store,
            "backend": result.backend,
            "model": result.model,
            "oracle": result.is_oracle,
        }

    def describe(self) -> dict[str, Any]:
        return self.service.stats()


def build_labeler_app(args: dict[str, Any]) -> serve.Application:
    """Serve's app builder (``import_path: serve_deployments.labeler:build_labeler_app``)."""
    cfg = LabelerConfig.model_validate(args)
    return LabelerServer.options(
        num_replicas=cfg.num_replicas,
        max_ongoing_requests=cfg.max_ongoing_requests,
        ray_actor_options={"num_cpus": cfg.num_cpus},
    ).bind(cfg.model_dump())


def start_labeler(cfg: LabelerConfig) -> DeploymentHandle:
    """Starts Serve's HTTP proxy on cfg.host:port (127.0.0.1 unless configured) and the app."""
    serve.start(http_options={"host": cfg.host, "port": cfg.port})
    return serve.run(build_labeler_app(cfg.model_dump()), name=cfg.app_name,
                     route_prefix=cfg.route_prefix)  # fmt: skip
