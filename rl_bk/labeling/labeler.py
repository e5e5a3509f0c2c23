"""One labeler, built from one spec: who labels and where it runs. Everything in rl-bk that
asks for labels holds a :class:`LabelerSpec` and calls what :meth:`LabelerSpec.build` returns,
a :data:`Labeler` (``labeler(task, requests) -> labels``, with ``identity`` and
``is_oracle``): in this process, in a Ray actor of its own, or in a running Serve labeler app.
A labeler raises when it cannot answer; callers decide what to do. Details:
docs/labeler.md#one-labeler-from-one-spec.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from tqdm import tqdm

from rl_bk.labeling.backends.registry import build_label_service
from rl_bk.labeling.config import LabelerConfig
from rl_bk.labeling.tasks import get_task

logger = logging.getLogger(__name__)

#: What asks for labels gets one of these: ``labeler(task, requests) -> labels``, in order.
Labeler = Callable[[str, Sequence[BaseModel]], list[BaseModel]]


@dataclass(frozen=True)
class LabelerSpec:
    """``config``: who labels. ``serve_app``: label through the Serve labeler app of that name
    (its deployment handle, inside the Ray cluster); ``url``: through a labeler app's HTTP
    API; neither: in this process. ``timeout_s``: a call's limit (served or isolated).
    ``isolate``: an in-process labeler in a Ray actor of its own (None: for the embedded
    llama.cpp model, when Ray is up).

    A spec is a small frozen value, so it pickles into an RLlib config and is built where it
    is used (the learner process)."""

    config: LabelerConfig = field(default_factory=LabelerConfig)
    serve_app: str | None = None
    url: str | None = None
    timeout_s: float = 120.0
    isolate: bool | None = None

    def __post_init__(self) -> None:
        if self.serve_app is not None and self.url is not None:
            raise ValueError("a labeler is reached by serve_app or by url, not both")

    @property
    def in_process(self) -> bool:
        return self.serve_app is None and self.url is None

    @property
    def backend(self) -> str:
        return self.config.backend

    @property
    def computes_here(self) -> bool:
        """Whether the labeler computes on this machine's CPUs (the embedded llama.cpp
        model), sharing them with training; a server or the Serve app computes elsewhere."""
        return self.config.backend == "llamacpp" and self.in_process

    def build(self) -> LocalLabeler | ServedLabeler | IsolatedLabeler:
        if not self.in_process:
            # kept light: rl-bk --help imports this module; the HTTP transport loads httpx
            from rl_bk.labeling.transport import HandleTransport, HTTPTransport

            transport = (
                HandleTransport(app_name=self.serve_app)
                if self.serve_app is not None
                else HTTPTransport(self.url)
            )
            return ServedLabeler(transport, self.timeout_s)
        isolate = self.config.backend == "llamacpp" if self.isolate is None else self.isolate
        if isolate:
            import ray  # kept light: rl-bk --help imports this module

            if ray.is_initialized():
                return IsolatedLabeler(dataclasses.replace(self, isolate=False))
        return LocalLabeler(self.config)


class LocalLabeler:
    """A :class:`~rl_bk.labeling.service.LabelService` in this process: the config's backend
    and its label store."""

    def __init__(self, config: LabelerConfig):
        self.service = build_label_service(config)
        backend = self.service.backend
        self.identity = f"{backend.name}/{backend.model}"
        self.is_oracle = backend.is_oracle

    def __call__(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        return list(self.service.label(task, list(requests)).labels)


class ServedLabeler:
    """A running labeler app through a transport (:mod:`rl_bk.labeling.transport`). Who
    labels there is the app's business: ``identity`` and ``is_oracle`` are asked of it."""

    def __init__(self, transport: Any, timeout_s: float):
        self.transport, self.timeout_s = transport, timeout_s
        self._described: dict | None = None

    def __call__(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        spec = get_task(task)
        reply = self.transport.label(task, [r.model_dump() for r in requests], self.timeout_s)
        return [spec.label.model_validate(x) for x in reply["labels"]]

    def _describe(self) -> dict:
        if self._described is None:
            self._described = self.transport.describe(self.timeout_s)
        return self._described

    @property
    def identity(self) -> str:
        d = self._describe()
        return f"{d['backend']}/{d['model']}"

    @property
    def is_oracle(self) -> bool:
        return bool(self._describe()["oracle"])


class IsolatedLabeler:
    """The labeler in a Ray actor of its own (no CPU reserved, nice +10), called from the
    label queue's thread. llama-cpp-python runs its token loop in Python, holding the GIL, so
    in the learner's process it slowed training far more than its CPU time (NetHack Score,
    SmolLM2 in a thread: ``bench/results/async_labelling.md``); in its own process the learner
    keeps the GIL and the model gets the CPU time left idle."""

    def __init__(self, spec: LabelerSpec):
        import ray  # kept light: rl-bk --help imports this module

        self.timeout_s = spec.timeout_s
        self._actor = ray.remote(num_cpus=0)(_LabelerProcess).remote(spec)
        self._described: tuple[str, bool] | None = None

    def _describe(self) -> tuple[str, bool]:
        import ray  # kept light: rl-bk --help imports this module

        if self._described is None:
            self._described = ray.get(self._actor.describe.remote(), timeout=self.timeout_s)
        return self._described

    @property
    def identity(self) -> str:
        return self._describe()[0]

    @property
    def is_oracle(self) -> bool:
        return self._describe()[1]

    def __call__(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        import ray  # kept light: rl-bk --help imports this module

        return ray.get(self._actor.label.remote(task, list(requests)), timeout=self.timeout_s)


class _LabelerProcess:
    def __init__(self, spec: LabelerSpec):
        os.nice(10)
        self._labeler = spec.build()

    def describe(self) -> tuple[str, bool]:
        return self._labeler.identity, self._labeler.is_oracle

    def label(self, task: str, requests: list[BaseModel]) -> list[BaseModel]:
        return self._labeler(task, requests)


def label_in_batches(
    labeler: Labeler,
    task: str,
    requests: Sequence[BaseModel],
    *,
    batch_size: int,
    desc: str,
    unit: str = "request",
) -> list[BaseModel | None]:
    """One label per request, asked ``batch_size`` at a time under a progress bar (the
    offline stages' way of asking).

    A batch the labeler fails on is retried one request at a time, so one malformed answer
    costs one request; a request that fails alone gets None (the caller drops it).
    """
    labels: list[BaseModel | None] = []
    with tqdm(total=len(requests), desc=desc, unit=unit, leave=False) as bar:
        for start in range(0, len(requests), batch_size):
            batch = list(requests[start : start + batch_size])
            try:
                labels += labeler(task, batch)
            except Exception as err:  # the labeler's errors are backend-specific
                logger.warning("a %s batch failed (%s); retrying one by one", task, err)
                for request in batch:
                    try:
                        labels.append(labeler(task, [request])[0])
                    except Exception as one:
                        logger.warning("dropped a %s request: %s", task, one)
                        labels.append(None)
            bar.update(len(batch))
    return labels
