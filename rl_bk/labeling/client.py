"""The client that RLlib connectors and callbacks use to get labels: batched, cached, and
never the reason training stops.

- One call per batch: requests are de-duplicated, answered from an in-process cache where
  possible, and the rest go to the labeler in a single call (a Serve DeploymentHandle inside
  the cluster, or HTTP from anywhere).
- The service keeps the persistent store; this cache only saves the round trip for labels
  this process has already seen.
- Failures never raise: a call that times out or errors is retried, then each request gets
  its task's fallback label, counted in ``metrics["fallbacks"]``. After a failure the client
  stops calling for ``retry_after_s`` (answering with fallbacks at once, so a dead service
  does not cost a timeout per batch), then tries again: it recovers on its own.
- Asynchronous mode: ``submit(task, requests)`` returns a Future at once; a background
  thread sends it. ONI-style online labelling submits new captions and collects what has
  arrived, never waiting.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from pydantic import BaseModel

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


class Transport(Protocol):
    def label(self, task: str, requests: list[dict[str, Any]], timeout_s: float) -> dict: ...


class HandleTransport:
    """Calls the LabelerServer deployment through a Serve DeploymentHandle (in the cluster)."""

    def __init__(self, app_name: str = "labeler", deployment: str = "LabelerServer"):
        self.app_name, self.deployment = app_name, deployment
        self._handle = None

    def label(self, task: str, requests: list[dict[str, Any]], timeout_s: float) -> dict:
        if self._handle is None:
            from ray import serve

            self._handle = serve.get_deployment_handle(self.deployment, app_name=self.app_name)
        return self._handle.label.remote(task, requests).result(timeout_s=timeout_s)


class HTTPTransport:
    """POSTs to ``<url>/v1/labels/<task>`` (from any process, no Ray needed)."""

    def __init__(self, url: str = "http://127.0.0.1:8000"):
        import httpx

        self.url = url.rstrip("/")
        self._http = httpx.Client()

    def label(self, task: str, requests: list[dict[str, Any]], timeout_s: float) -> dict:
        response = self._http.post(f"{self.url}/v1/labels/{task}", json={"requests": requests},
                                   timeout=timeout_s)  # fmt: skip
        if response.status_code != 200:
            message = response.json().get("error", {}).get("message", response.text[:200])
            raise RuntimeError(f"labeler answered {response.status_code}: {message}")
        return response.json()


class LabelerClient:
    def __init__(
        self,
        transport: Transport | None = None,
        *,
        timeout_s: float = 30.0,
        retries: int = 1,
        retry_after_s: float = 5.0,
        cache_size: int = 100_000,
    ):
        self.transport = transport or HandleTransport()
        self.timeout_s, self.retries, self.retry_after_s = timeout_s, retries, retry_after_s
        self._cache: OrderedDict[tuple[str, str], BaseModel] = OrderedDict()
        self._cache_size = cache_size
        self._down_until = 0.0
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pending = 0
        self.metrics: dict[str, float] = dict.fromkeys(
            ("requests", "cache_hits", "calls", "labels_received", "fallbacks", "failures",
             "call_seconds", "from_store"), 0,
        )  # fmt: skip

    # ------------------------------------------------------------------------- synchronous
    def label(self, task: str, requests: Sequence[BaseModel | dict]) -> list[BaseModel]:
        """One label per request, in order; fallbacks (counted) where the labeler failed."""
        spec = get_task(task)
        requests = [r if isinstance(r, BaseModel) else spec.request.model_validate(r)
                    for r in requests]  # fmt: skip
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
        spec = get_task(task)
        if time.monotonic() >= self._down_until:
            payload = [r.model_dump() for r in todo.values()]
            for _attempt in range(1 + self.retries):
                start = time.perf_counter()
                try:
                    reply = self.transport.label(task, payload, self.timeout_s)
                    labels = [spec.label.model_validate(x) for x in reply["labels"]]
                except Exception:
                    with self._lock:
                        self.metrics["failures"] += 1
                    continue
                with self._lock:
                    self.metrics["calls"] += 1
                    self.metrics["call_seconds"] += time.perf_counter() - start
                    self.metrics["labels_received"] += len(labels)
                    self.metrics["from_store"] += sum(reply.get("from_store", []))
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
