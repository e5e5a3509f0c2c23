"""Labelling with a memory: the label store first, then one backend call for what it lacks.
:class:`LabelService` (what the Serve deployment runs, and what a process without Serve uses
directly) de-duplicates a batch of typed requests, reads every distinct one from the store in
one query, asks the backend once for the misses and stores its answers with their latency,
and returns one label per request, in order, with whether each came from the store.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from rl_bk.labeling.backends.base import Backend, BackendError, PartialLabelError
from rl_bk.labeling.store import LabelStore
from rl_bk.labeling.tasks import canonical_json, get_task


@dataclass
class LabelResult:
    labels: list[BaseModel]
    from_store: list[bool]
    backend: str
    model: str
    is_oracle: bool


@dataclass
class ServiceMetrics:
    requests: int = 0  # typed requests received (before de-duplication)
    store_hits: int = 0
    backend_calls: int = 0  # one per batch of misses
    backend_labels: int = 0
    backend_errors: int = 0
    backend_seconds: float = 0.0
    by_task: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float | int | dict[str, int]]:
        return dict(self.__dict__)


class LabelService:
    def __init__(self, backend: Backend, store: LabelStore):
        self.backend, self.store = backend, store
        self.metrics = ServiceMetrics()
        self._lock = threading.Lock()  # metrics only; backends guard themselves

    def stored(self, task: str, requests: Sequence[BaseModel | dict]) -> list[BaseModel | None]:
        """The stored label of each request, None where there is none: one store read, no
        backend call (a server answers these at once and batches only the rest)."""
        spec = get_task(task)
        requests = [
            r if isinstance(r, spec.request) else spec.request.model_validate(r) for r in requests
        ]
        b = self.backend
        found = self.store.get_many(
            b.name, b.model, task, list(requests), asked_as=b.asked_as(task)
        )
        hits = sum(lab is not None for lab in found)
        if hits:
            with self._lock:
                m = self.metrics
                m.requests += hits
                m.store_hits += hits
                m.by_task[task] = m.by_task.get(task, 0) + hits
        return list(found)

    def label(self, task: str, requests: Sequence[BaseModel]) -> LabelResult:
        """One label per request. Raises BackendError if the backend fails on a miss."""
        spec = get_task(task)
        requests = [
            r if isinstance(r, spec.request) else spec.request.model_validate(r) for r in requests
        ]
        request_keys = [canonical_json(r) for r in requests]
        unique: dict[str, BaseModel] = {}
        for k, r in zip(request_keys, requests):
            unique.setdefault(k, r)
        keys, distinct = list(unique), list(unique.values())

        b = self.backend
        stored = self.store.get_many(b.name, b.model, task, distinct, asked_as=b.asked_as(task))
        found = {k: lab for k, lab in zip(keys, stored) if lab is not None}
        misses = [(k, r) for k, r in zip(keys, distinct) if k not in found]
        if misses:
            start = time.perf_counter()
            try:
                answers = b.label(task, [r for _, r in misses])
            except PartialLabelError as err:
                # Keep what did work: the next call finds those labels in the store.
                good = [(r, lab) for (_, r), lab in zip(misses, err.labels) if lab is not None]
                if good:
                    self.store.put_many(
                        b.name,
                        b.model,
                        task,
                        [r for r, _ in good],
                        [lab for _, lab in good],
                        latency_s=(time.perf_counter() - start) / len(misses),
                        is_oracle=b.is_oracle,
                        asked_as=b.asked_as(task),
                    )
                with self._lock:
                    self.metrics.backend_errors += 1
                raise BackendError(f"{err} ({len(good)} stored)") from err
            except Exception:
                with self._lock:
                    self.metrics.backend_errors += 1
                raise
            seconds = time.perf_counter() - start
            self.store.put_many(
                b.name,
                b.model,
                task,
                [r for _, r in misses],
                answers,
                latency_s=seconds / len(misses),
                is_oracle=b.is_oracle,
                asked_as=b.asked_as(task),
            )
            new = {k: lab for (k, _), lab in zip(misses, answers)}
        else:
            seconds, new = 0.0, {}

        with self._lock:
            m = self.metrics
            m.requests += len(requests)
            m.store_hits += len(found)
            m.by_task[task] = m.by_task.get(task, 0) + len(requests)
            if misses:
                m.backend_calls += 1
                m.backend_labels += len(misses)
                m.backend_seconds += seconds
        labels, from_store = [], []
        for k in request_keys:
            labels.append(found[k] if k in found else new[k])
            from_store.append(k in found)
        return LabelResult(labels, from_store, b.name, b.model, b.is_oracle)

    def stats(self) -> dict:
        return {
            "backend": self.backend.name,
            "model": self.backend.model,
            "oracle": self.backend.is_oracle,
            "service": self.metrics.as_dict(),
            "store": self.store.stats(),
        }
