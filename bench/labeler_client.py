"""A labeler with an in-process cache and fallbacks, for benchmarks that call a labeler app
many times (``bench/labeler.py``): batched, cached, and never raising.

- One call per batch: requests are de-duplicated, answered from the cache where possible,
  and the rest go to the labeler (any :data:`rl_bk.labeling.labeler.Labeler`, e.g. what
  ``LabelerSpec(serve_app=...).build()`` returns) in a single call.
- Failures never raise: a call that errors is retried, then each request gets its task's
  fallback label, counted in ``metrics["fallbacks"]``. After a failure the client stops
  calling for ``retry_after_s``, then tries again: it recovers on its own.
- ``submit(task, requests)`` returns a Future at once; a background thread sends it.

rl-bk's own training never uses it: an online label queue must not store a fallback as if
the LLM had said it (:mod:`rl_bk.labeling.queue` retries later instead).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from pydantic import BaseModel

from rl_bk.labeling.labeler import Labeler
from rl_bk.labeling.tasks import (
    ActionScoresLabel,
    ActionScoresRequest,
    GoalsLabel,
    HelpfulLabel,
    PreferenceLabel,
    RewardCodeLabel,
    canonical_json,
    get_task,
)


def fallback_label(task: str, request: BaseModel) -> BaseModel:
    """What a request gets when the labeler cannot answer: the label that changes nothing
    (no goals, a tie, not helpful, no code, equal scores)."""
    if task == "goals":
        return GoalsLabel(goals=[])
    if task == "preference":
        return PreferenceLabel(choice="tie")
    if task == "helpful":
        return HelpfulLabel(helpful=False)
    if task == "reward_code":
        return RewardCodeLabel(code="")
    assert isinstance(request, ActionScoresRequest)
    return ActionScoresLabel(logprobs=[0.0] * len(request.actions))


class LabelerClient:
    def __init__(
        self,
        labeler: Labeler,
        *,
        retries: int = 1,
        retry_after_s: float = 5.0,
        cache_size: int = 100_000,
    ):
        self.labeler = labeler
        self.retries, self.retry_after_s = retries, retry_after_s
        self._cache: OrderedDict[tuple[str, str], BaseModel] = OrderedDict()
        self._cache_size = cache_size
        self._down_until = 0.0
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pending = 0
        self.metrics: dict[str, float] = dict.fromkeys(
            (
                "requests",
                "cache_hits",
                "calls",
                "labels_received",
                "fallbacks",
                "failures",
                "call_seconds",
            ),
            0,
        )

    # ------------------------------------------------------------------------- synchronous
    def label(self, task: str, requests: Sequence[BaseModel | dict]) -> list[BaseModel]:
        """One label per request, in order; fallbacks (counted) where the labeler failed."""
        spec = get_task(task)
        requests = [
            r if isinstance(r, BaseModel) else spec.request.model_validate(r) for r in requests
        ]
        keys = [(task, canonical_json(r)) for r in requests]
        with self._lock:
            self.metrics["requests"] += len(requests)
            known = {k: self._cache[k] for k in keys if k in self._cache}
            self.metrics["cache_hits"] += sum(k in known for k in keys)
        todo = {k: r for k, r in zip(keys, requests) if k not in known}
        if todo:
            known.update(self._fetch(task, todo))
        return [known[k] for k in keys]

    def _fetch(self, task: str, todo: dict[tuple[str, str], BaseModel]) -> dict:
        if time.monotonic() >= self._down_until:
            for _attempt in range(1 + self.retries):
                start = time.perf_counter()
                try:
                    labels = self.labeler(task, list(todo.values()))
                except Exception:
                    with self._lock:
                        self.metrics["failures"] += 1
                    continue
                with self._lock:
                    self.metrics["calls"] += 1
                    self.metrics["call_seconds"] += time.perf_counter() - start
                    self.metrics["labels_received"] += len(labels)
                    for k, lab in zip(todo, labels):
                        self._cache[k] = lab
                    while len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
                return dict(zip(todo, labels))
            self._down_until = time.monotonic() + self.retry_after_s
        with self._lock:
            self.metrics["fallbacks"] += len(todo)
        return {k: fallback_label(task, r) for k, r in todo.items()}

    # ------------------------------------------------------------------------ asynchronous
    def submit(self, task: str, requests: Sequence[BaseModel | dict]) -> Future:
        """Labels in the background; the Future's result is ``label(task, requests)``."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="labeler")
        with self._lock:
            self._pending += 1
        future = self._executor.submit(self.label, task, list(requests))
        future.add_done_callback(lambda _: self._done())
        return future

    def _done(self) -> None:
        with self._lock:
            self._pending -= 1

    @property
    def pending(self) -> int:
        return self._pending

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
