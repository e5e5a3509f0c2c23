"""The LLM labeler as a Ray Serve app: HTTP for other programs, a handle for RLlib.

    app = build_labeler_app({"backend": "oracle"})
    # or: serve run serve_deployments.labeler:build_labeler_app backend=oracle
    handle = start_labeler(LabelerAppConfig(backend="fake"))
    handle.label.remote("helpful", [{"caption": "...", "task": "..."}]).result()

One deployment, ``LabelerServer``: it builds the configured backend and opens the shared
label store in each replica, serves :mod:`serve_deployments.http_api` over HTTP, and answers
``label(task, requests)`` calls through a DeploymentHandle (what trials use).

A call through the handle is answered from the label store at once where it can be (a
stored label costs one store read, no batching wait). What the store lacks is merged by
``@serve.batch``: the calls that arrive at a replica within ``batch_wait_timeout_s`` (up to
``max_batch_size`` of them, from any number of trials) become one backend call per task, so
the LLM sees one batch where trials sent many small ones. A merged call that fails is redone
call by call, so one caller's bad request fails only that caller. Backend calls block
(llama.cpp computes on the CPU): they run in a worker thread, so the replica's event loop
keeps answering stored labels and collecting the next batch.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from ray import serve
from ray.serve.handle import DeploymentHandle

from rl_bk.labeling.backends.registry import build_label_service
from serve_deployments.configs import LabelerAppConfig
from serve_deployments.http_api import create_app

DEPLOYMENT_NAME = "LabelerServer"


@serve.deployment(name=DEPLOYMENT_NAME)
@serve.ingress()  # the app is built in the replica, after __init__: see below
class LabelerServer:
    def __init__(self, config: dict[str, Any]):
        cfg = LabelerAppConfig.model_validate(config)
        self.service = build_label_service(cfg)
        self._label_calls.set_max_batch_size(cfg.max_batch_size)
        self._label_calls.set_batch_wait_timeout_s(cfg.batch_wait_timeout_s)
        self.merged = {"calls": 0, "batches": 0}  # handle calls, and the batches they became

    def __serve_build_asgi_app__(self):
        # Serve serves a copy of an app passed to @serve.ingress(app); building it here, in the
        # replica, lets the routes reach this replica's service.
        app = create_app()
        app.state.service = self.service
        return app

    async def label(self, task: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
        """Handle API: typed labels for a batch (BackendError propagates to the caller)."""
        stored = self.service.stored(task, requests)
        missing = [i for i, lab in enumerate(stored) if lab is None]
        b = self.service.backend
        reply = {
            "labels": [None if lab is None else lab.model_dump() for lab in stored],
            "from_store": [lab is not None for lab in stored],
            "backend": b.name,
            "model": b.model,
            "oracle": b.is_oracle,
        }
        if missing:
            new = await self._label_calls((task, [requests[i] for i in missing]))
            if isinstance(new, Exception):
                raise new
            for i, lab, hit in zip(missing, new["labels"], new["from_store"]):
                reply["labels"][i], reply["from_store"][i] = lab, hit
        return reply

    @serve.batch(max_batch_size=64, batch_wait_timeout_s=0.02)
    async def _label_calls(self, calls: list[tuple[str, list[dict[str, Any]]]]) -> list[Any]:
        """One reply (or the exception) per call; the calls of each task merged into one."""
        replies: list[Any] = [None] * len(calls)
        by_task: dict[str, list[int]] = defaultdict(list)
        for i, (task, _) in enumerate(calls):
            by_task[task].append(i)
        self.merged["calls"] += len(calls)
        for task, members in by_task.items():
            self.merged["batches"] += 1
            merged = [r for i in members for r in calls[i][1]]
            try:
                replies_of = self._split(
                    await asyncio.to_thread(self._reply, task, merged),
                    [len(calls[i][1]) for i in members],
                )
            except Exception:  # one caller's bad request must not fail the others
                replies_of = []
                for i in members:
                    try:
                        replies_of.append(await asyncio.to_thread(self._reply, task, calls[i][1]))
                    except Exception as err:
                        replies_of.append(err)
            for i, reply in zip(members, replies_of):
                replies[i] = reply
        return replies

    def _reply(self, task: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
        result = self.service.label(task, requests)
        return {
            "labels": [lab.model_dump() for lab in result.labels],
            "from_store": result.from_store,
            "backend": result.backend,
            "model": result.model,
            "oracle": result.is_oracle,
        }

    @staticmethod
    def _split(reply: dict[str, Any], sizes: list[int]) -> list[dict[str, Any]]:
        out, start = [], 0
        for n in sizes:
            out.append(
                {
                    **reply,
                    "labels": reply["labels"][start : start + n],
                    "from_store": reply["from_store"][start : start + n],
                }
            )
            start += n
        return out

    def describe(self) -> dict[str, Any]:
        return {**self.service.stats(), "merged": dict(self.merged)}


def build_labeler_app(args: dict[str, Any]) -> serve.Application:
    """Serve's app builder (``import_path: serve_deployments.labeler:build_labeler_app``).

    Replicas: ``num_replicas``, or autoscaling between it and ``max_replicas``; each asks for
    ``num_cpus``, ``num_gpus`` and any custom ``resources`` (on a cluster, the GPU worker
    type's ``llm_node`` puts the LLM there and nowhere else)."""
    cfg = LabelerAppConfig.model_validate(args)
    actor = {"num_cpus": cfg.num_cpus, "num_gpus": cfg.num_gpus}
    if cfg.resources:
        actor["resources"] = dict(cfg.resources)
    if cfg.max_replicas is not None and cfg.max_replicas > cfg.num_replicas:
        scaling = {
            "num_replicas": "auto",
            "autoscaling_config": {
                "min_replicas": cfg.num_replicas,
                "max_replicas": cfg.max_replicas,
                "target_ongoing_requests": cfg.target_ongoing_requests,
            },
        }
    else:
        scaling = {"num_replicas": cfg.num_replicas}
    return LabelerServer.options(
        max_ongoing_requests=cfg.max_ongoing_requests,
        ray_actor_options=actor,
        **scaling,
    ).bind(cfg.model_dump())


def start_labeler(cfg: LabelerAppConfig) -> DeploymentHandle:
    """Starts Serve's HTTP proxy on cfg.host:port (127.0.0.1 unless configured) and the app."""
    serve.start(http_options={"host": cfg.host, "port": cfg.port})
    return serve.run(
        build_labeler_app(cfg.model_dump()), name=cfg.app_name, route_prefix=cfg.route_prefix
    )


class LabelerAppMissing(ValueError):
    """``attach`` was asked for, and no labeler app of that name is running."""


def ensure_labeler_app(cfg: LabelerAppConfig, attach: bool = False) -> DeploymentHandle:
    """The labeler app named ``cfg.app_name`` on the connected Ray cluster: started from
    ``cfg`` unless one of that name is running (then it is used as it is, whoever started
    it); with ``attach``, never started (a clear error if it is not running)."""
    from ray.serve.exceptions import RayServeException

    running = False
    try:
        status = serve.status()
        app = status.applications.get(cfg.app_name)
        running = app is not None and str(app.status).endswith("RUNNING")
    except RayServeException:  # Serve not started on this cluster
        running = False
    if running:
        return serve.get_app_handle(cfg.app_name)
    if attach:
        raise LabelerAppMissing(
            f"no labeler app named {cfg.app_name!r} is running on this Ray cluster: start one "
            f"(`rl-bk serve --address auto --app-name {cfg.app_name} ...`) or let tune_run.py "
            "start it (drop --labeler-app, keep --labeler serve)"
        )
    serve.start(http_options={"host": cfg.host, "port": cfg.port})
    # Apps share Serve's one HTTP proxy: each but the default needs a route of its own.
    route = cfg.route_prefix if cfg.app_name == "labeler" else f"/{cfg.app_name}"
    return serve.run(build_labeler_app(cfg.model_dump()), name=cfg.app_name, route_prefix=route)
