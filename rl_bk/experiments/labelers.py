"""A task's labeler: the one place a sweep, a knowledge build, a trial or ``rl-bk knowledge``
gets it from (:func:`labeler_for`). Who labels is the task's ``knowledge.labeler``, with a
trial's ``backend`` in place of its backend; where it runs is the task's ``labeler:`` section
(``local``: each process labels for itself; ``serve``: one Serve labeler app per backend,
which the driver starts before the sweep, or finds running). Details:
docs/labeler.md#one-labeler-from-one-spec, docs/cluster.md#the-labeler-app-in-training.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rl_bk.experiments.task_config import TaskConfig
from rl_bk.labeling.backends.registry import labeler_identity, preflight
from rl_bk.labeling.labeler import LabelerSpec
from serve_deployments.configs import LabelerAppConfig

if TYPE_CHECKING:
    from rl_bk.labeling.config import LabelerConfig

#: How long a knowledge build waits for one labeler app call: a batch of an offline stage
#: may be a few hundred requests to an LLM.
OFFLINE_TIMEOUT_S = 600.0


def uses_labeler_app(task: TaskConfig) -> bool:
    return task.labeler.mode == "serve"


def labeler_config(
    task: TaskConfig, backend: str | None = None, *, here: bool = True
) -> LabelerConfig:
    """Who labels for ``task``: its ``knowledge.labeler``, with ``backend`` if one is given.
    ``here``: it labels on this machine, and its label store defaults to
    ``$RLBK_LABEL_STORE`` as this process sees it, so the processes a sweep starts use the
    driver's store (a Serve app's replicas use their own node's)."""
    config = task.knowledge.labeler
    update: dict[str, object] = {}
    if backend is not None:
        update["backend"] = backend
    if here and config.store_path is None and os.environ.get("RLBK_LABEL_STORE"):
        update["store_path"] = os.environ["RLBK_LABEL_STORE"]
    return config.model_copy(update=update) if update else config


def whose_labels(task: TaskConfig, backend: str | None = None) -> tuple[str, bool]:
    """Whose labels ``task``'s labeler (with ``backend``) gives, as its labels name it, and
    whether that is the oracle, without building it."""
    return labeler_identity(labeler_config(task, backend))


def app_name(task: TaskConfig, backend: str | None = None) -> str:
    b = backend or task.knowledge.labeler.backend
    base = task.labeler.app_name
    return base if b == task.knowledge.labeler.backend else f"{base}-{b}"


def labeler_for(
    task: TaskConfig, backend: str | None = None, *, online: bool = False
) -> LabelerSpec:
    """The labeler of ``task`` (``backend``: a trial's, if it names one). ``online``: it
    labels while training runs beside it: the embedded model gets one thread (the other core
    is training's) unless the task sets ``n_threads``, and, once Ray is up, a process of its
    own. Offline (knowledge builds, in the driver) it runs in this process."""
    if uses_labeler_app(task):  # the sweep's shared Serve app, through its handle
        return LabelerSpec(
            labeler_config(task, backend, here=False),
            serve_app=app_name(task, backend),
            timeout_s=task.labeler.timeout_s if online else OFFLINE_TIMEOUT_S,
        )
    config = labeler_config(task, backend)
    if online:
        config = _threads_unless_set(task, config, 1)
    return LabelerSpec(config, isolate=None if online else False)


def _threads_unless_set(task: TaskConfig, config: LabelerConfig, threads: int) -> LabelerConfig:
    """``config`` computing on ``threads`` unless the task's ``knowledge.labeler`` sets
    ``n_threads``: a labeller that shares training's cores gains nothing from a second
    thread, which only waits on training's (docs/labeler.md#speed)."""
    if "n_threads" in task.knowledge.labeler.model_fields_set:
        return config
    return config.model_copy(update={"n_threads": threads})


def app_config(task: TaskConfig, backend: str | None = None):
    """The Serve app's LabelerAppConfig: who labels from ``knowledge.labeler``, how it is
    served from ``labeler``; the embedded model's threads are the CPUs a replica reserves
    (at least one) unless ``knowledge.labeler`` sets ``n_threads``."""
    d = task.labeler
    # with no CPUs reserved (one machine) a replica shares the trials' cores
    config = _threads_unless_set(
        task, labeler_config(task, backend, here=False), max(1, int(d.num_cpus))
    )
    return LabelerAppConfig(
        **config.model_dump(),
        app_name=app_name(task, backend),
        num_replicas=d.num_replicas,
        max_replicas=d.max_replicas,
        num_cpus=d.num_cpus,
        num_gpus=d.num_gpus,
        resources=dict(d.resources),
        max_batch_size=d.max_batch_size,
        batch_wait_timeout_s=d.batch_wait_timeout_s,
    )


def start_labeler_apps(task: TaskConfig, backends: Iterable[str | None]) -> list[str]:
    """Starts (or finds) the app of each backend on the connected Ray cluster; their names."""
    # kept light: rl-bk --help imports this module; the Serve app loads Ray
    from serve_deployments.labeler import ensure_labeler_app

    names = []
    for backend in dict.fromkeys(b or task.knowledge.labeler.backend for b in backends):
        ensure_labeler_app(app_config(task, backend), attach=task.labeler.attach)
        names.append(app_name(task, backend))
    return names


def check_labelers(task: TaskConfig, backends: dict[str | None, list[str]]) -> None:
    """The labelers that run in this process or the sweep's trials (not behind the Serve
    labeler app, whose nodes may have what this one lacks), checked here: a missing package,
    model file or setting fails before Ray starts, in one line, instead of in every trial's
    log while its labels quietly fail. ``backends``: each backend (None: the task's) and the
    variants that label with it."""
    # kept light: rl-bk --help imports this module; env_registry loads gymnasium
    from env_registry.errors import MissingDependencyError

    if uses_labeler_app(task):
        return
    for backend, labels in backends.items():
        try:
            preflight(labeler_config(task, backend))
        except (MissingDependencyError, FileNotFoundError, ValueError) as err:
            # Same type, so callers catch it as before; the message names who needs it.
            raise type(err)(
                f"{err} (needed by {', '.join(labels)}; leave those out with "
                "--methods or the task's sweep grid)"
            ) from None
