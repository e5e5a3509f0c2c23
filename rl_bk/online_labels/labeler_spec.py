"""Which labeler online labelling uses, as a small picklable value.

An RLlib learner connector is built from its config inside the learner process; the labeler it
talks to (a llama.cpp model in process, an OpenAI-compatible server, or the Serve labeler app)
must be built there too, so the config carries this spec, not a live labeler.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from rl_bk.online_labels.queue import Labeler


@dataclass(frozen=True)
class LabelerSpec:
    """``backend``: oracle | llamacpp | openai | fake (with ``packaged``, ``model_path``,
    ``base_url``, ``model`` as for ``rl-bk serve``); ``store_path``: the label store (None:
    the default one). ``serve_url``: label through a running labeler app instead: an
    ``http://`` base URL, or ``"handle"`` for a Serve deployment handle inside the cluster
    (the app named ``serve_app``).
    ``n_threads``: llama.cpp threads (1 leaves the other core to training). ``isolate``: run
    the labeler in a Ray actor process of its own (default: for llamacpp, when Ray is up)."""

    backend: str = "oracle"
    packaged: str = "smollm2"
    model_path: str | None = None
    base_url: str | None = None
    model: str | None = None
    store_path: str | None = None
    serve_url: str | None = None
    serve_app: str = "labeler"
    n_threads: int = 1
    fake_delay_s: float = 0.0
    timeout_s: float = 120.0
    isolate: bool | None = None  # None: a process of its own for llamacpp, when Ray is up

    @property
    def is_oracle(self) -> bool:
        return self.backend == "oracle" and self.serve_url is None

    @property
    def computes_here(self) -> bool:
        """Whether the labeler computes on this machine's CPUs (the embedded llama.cpp
        model), sharing them with training; a server or the Serve app computes elsewhere."""
        return self.backend == "llamacpp" and self.serve_url is None

    def build(self) -> Labeler:
        isolate = self.backend == "llamacpp" if self.isolate is None else self.isolate
        if isolate and self.serve_url is None:
            import ray

            if ray.is_initialized():
                return IsolatedLabeler(dataclasses.replace(self, isolate=False))
        if self.serve_url is not None:
            from rl_bk.labeling.client import HandleTransport, HTTPTransport

            transport = (HandleTransport(app_name=self.serve_app) if self.serve_url == "handle"
                         else HTTPTransport(self.serve_url))  # fmt: skip
            return ServedLabeler(transport, self.timeout_s)
        from rl_bk.labeling.backends.registry import build_label_service
        from rl_bk.labeling.config import load_labeler_config

        config = load_labeler_config(
            backend=self.backend, packaged=self.packaged, model_path=self.model_path,
            base_url=self.base_url, model=self.model, store_path=self.store_path,
            n_threads=self.n_threads, fake_delay_s=self.fake_delay_s,
        )  # fmt: skip
        service = build_label_service(config)
        return lambda task, requests: list(service.label(task, list(requests)).labels)


class ServedLabeler:
    """The labeler app through a transport; unlike LabelerClient it raises on failure (an
    online label queue must not store a fallback as if the LLM had said it)."""

    def __init__(self, transport: Any, timeout_s: float):
        self.transport, self.timeout_s = transport, timeout_s

    def __call__(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        from rl_bk.labeling.tasks import get_task

        spec = get_task(task)
        reply = self.transport.label(task, [r.model_dump() for r in requests], self.timeout_s)
        return [spec.label.model_validate(x) for x in reply["labels"]]


class IsolatedLabeler:
    """The labeler in a Ray actor of its own (no CPU reserved, nice +10), called from the
    label queue's thread. llama-cpp-python runs its token loop in Python, holding the GIL, so
    in the learner's process it slowed training far more than its CPU time (NetHack Score,
    SmolLM2 in a thread: ``bench/results/async_labelling.md``); in its own process the learner
    keeps the GIL and the model gets the CPU time left idle."""

    def __init__(self, spec: LabelerSpec):
        import ray

        self.timeout_s = spec.timeout_s
        self._actor = ray.remote(num_cpus=0)(_LabelerProcess).remote(spec)

    def __call__(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        import ray

        return ray.get(self._actor.label.remote(task, list(requests)), timeout=self.timeout_s)


class _LabelerProcess:
    def __init__(self, spec: LabelerSpec):
        os.nice(10)
        self._labeler = spec.build()

    def label(self, task: str, requests: list[BaseModel]) -> list[BaseModel]:
        return self._labeler(task, requests)
