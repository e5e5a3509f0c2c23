"""The Serve labeler deployment a sweep's trials share (a task's ``labeler: {mode: serve}``).

The driver starts it before the sweep, or attaches to a running one (``attach``): one app
per labeler backend the sweep uses, named ``<app_name>`` for the task's own backend and
``<app_name>-<backend>`` for others. Trials reach it through a deployment handle
(:class:`~rl_bk.online_labels.LabelerSpec` with ``serve_url="handle"``), and the driver's
knowledge builds through the same handle, so the replicas batch every trial's calls and the
label store is the deployment's alone. In ``local`` mode nothing here runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from rl_bk.experiments.task_config import TaskConfig


def uses_labeler_app(task: TaskConfig) -> bool:
    return task.labeler.mode == "serve"


def app_name(task: TaskConfig, backend: str | None = None) -> str:
    b = backend or task.knowledge.backend
    base = task.labeler.app_name
    return base if b == task.knowledge.backend else f"{base}-{b}"


def app_config(task: TaskConfig, backend: str | None = None):
    """The Serve app's LabelerAppConfig: who labels from ``knowledge``, where from ``labeler``."""
    from serve_deployments.configs import load_labeler_app_config

    k, d = task.knowledge, task.labeler
    return load_labeler_app_config(
        backend=backend or k.backend, packaged=k.packaged, model_path=k.model_path,
        base_url=k.base_url, model=k.model, store_path=d.store_path,
        app_name=app_name(task, backend), num_replicas=d.num_replicas,
        max_replicas=d.max_replicas, num_cpus=d.num_cpus, num_gpus=d.num_gpus,
        resources=dict(d.resources), max_batch_size=d.max_batch_size,
        batch_wait_timeout_s=d.batch_wait_timeout_s,
    )  # fmt: skip


def start_labeler_apps(task: TaskConfig, backends: Iterable[str | None]) -> list[str]:
    """Starts (or finds) the app of each backend on the connected Ray cluster; their names."""
    from serve_deployments.labeler import ensure_labeler_app

    names = []
    for backend in dict.fromkeys(b or task.knowledge.backend for b in backends):
        ensure_labeler_app(app_config(task, backend), attach=task.labeler.attach)
        names.append(app_name(task, backend))
    return names
