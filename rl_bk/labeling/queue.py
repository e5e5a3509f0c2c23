"""Labels asked for while training goes on: ONI's LLM worker, as a thread beside the learner.
Training hands :class:`AsyncLabelQueue` the keys it meets (captions, caption pairs) and reads
whatever labels have arrived; neither call waits for the labeler, and a background thread
labels the newest keys first, in batches, through the label service, so the labels land in
the persistent store. How it batches, retries, drops and rests: :class:`AsyncLabelQueue`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import numpy as np
from pydantic import BaseModel

from rl_bk.labeling.labeler import Labeler

logger = logging.getLogger(__name__)


class AsyncLabelQueue:
    """``task``: the labelling task (``helpful``, ``goals``, ``preference``, ...);
    ``make_request(key)``: the typed request for a key; ``read_label(label)``: what is kept
    per key (e.g. ``label.helpful``), so callers see plain values.

    Training calls :meth:`ask` with the keys it meets and reads whatever labels have arrived
    with :meth:`get`. Neither call waits for the labeler: a key that has no label yet simply
    has none (its reward is the documented default), and it is counted as pending.

    A background thread takes the **newest** ``batch_size`` pending keys at a time (ONI's
    worker does the same: what the agent meets now matters more than what it met an hour ago),
    turns them into typed requests and makes one labeler call per batch. A batch the labeler
    fails on is retried one key at a time, so one malformed answer costs one key; a key that
    fails alone is counted and not asked again for ``retry_after_s``. When more than
    ``max_pending`` keys wait, the oldest are dropped (counted; a later ``ask`` may queue them
    again). The worker thread runs at a lower priority (``niceness``, Linux), so a labeler that
    computes in this process (the embedded llama.cpp model) uses the CPU time training leaves
    idle.

    A labeler computing on the same few cores as training slows training even at the lowest
    priority (shared caches and memory bandwidth; bench/results/async_labelling.md), so the
    worker can be held to a duty cycle: after a call that took ``t`` seconds it rests
    ``t * (1 / max_busy_fraction - 1)`` seconds, so the labeler computes at most that fraction
    of the time. Fewer labels arrive; the trade is measured, not guessed. :meth:`pause` holds
    the worker between calls (a benchmark measuring training without the labeler running, an
    evaluation phase).

    The labeler is any :data:`~rl_bk.labeling.labeler.Labeler` (what a
    :class:`~rl_bk.labeling.labeler.LabelerSpec` builds: in process, or the Serve labeler app),
    built by ``make_labeler`` in the thread on first use, so loading a model never stalls
    training. Labels go through the label service, so they land in the persistent store: a
    re-run, or another trial on the same store, gets them back without asking the LLM."""

    def __init__(
        self,
        make_labeler: Callable[[], Labeler],
        task: str,
        make_request: Callable[[Any], BaseModel],
        read_label: Callable[[BaseModel], Any] = lambda label: label,
        *,
        batch_size: int = 32,
        max_pending: int = 10_000,
        retry_after_s: float = 60.0,
        niceness: int = 10,
        max_busy_fraction: float = 1.0,
        start: bool = True,
    ):
        if batch_size < 1 or max_pending < 1:
            raise ValueError(
                f"batch_size and max_pending must be >= 1, got {batch_size} and {max_pending}"
            )
        if not 0.0 < max_busy_fraction <= 1.0:
            raise ValueError(
                f"max_busy_fraction is the share of time the labeler may compute, "
                f"in (0, 1]; got {max_busy_fraction}"
            )
        self._make_labeler = make_labeler
        self._labeler: Labeler | None = None
        self.task = task
        self._make_request = make_request
        self._read_label = read_label
        self.batch_size, self.max_pending, self.retry_after_s = (
            batch_size,
            max_pending,
            retry_after_s,
        )
        self.niceness, self.max_busy_fraction = niceness, max_busy_fraction
        self._paused = False
        self._labels: dict[Hashable, Any] = {}
        self._new: dict[Hashable, Any] = {}  # received since the last take_new()
        # key -> when it was queued (time.monotonic), oldest first
        self._pending: OrderedDict[Hashable, float] = OrderedDict()
        self._asked_at: dict[Hashable, float] = {}  # the keys of the batch in flight
        self._failed_at: dict[Hashable, float] = {}
        self._in_flight = 0
        self._cond = threading.Condition()
        self._closed = False
        self.error: str | None = None  # why the labeler could not be built, if it could not
        self.counts = dict.fromkeys(("requested", "received", "failed", "dropped", "batches"), 0)
        self.seconds_labelling = 0.0
        self.seconds_resting = 0.0  # held back by max_busy_fraction
        # queued -> received, per label: how stale a label is when training first sees it
        self.latencies: deque[float] = deque(maxlen=10_000)
        # (start, end) of the latest labeler calls (time.perf_counter), for measuring how much
        # of a stretch of training the labeler computed in.
        self.call_intervals: deque[tuple[float, float]] = deque(maxlen=10_000)
        self._thread: threading.Thread | None = None
        if start:
            self.start()

    # ------------------------------------------------------------------ the training side
    def ask(self, keys: Iterable[Hashable]) -> int:
        """Queues the keys that have no label, are not queued and did not fail lately; returns
        how many were queued. Never waits for the labeler."""
        now = time.monotonic()
        queued = 0
        with self._cond:
            for key in keys:
                if key in self._labels or key in self._pending:
                    continue
                failed = self._failed_at.get(key)
                if failed is not None and now - failed < self.retry_after_s:
                    continue
                self._pending[key] = now
                queued += 1
            while len(self._pending) > self.max_pending:
                self._pending.popitem(last=False)
                self.counts["dropped"] += 1
            self.counts["requested"] += queued
            if queued:
                self._cond.notify()
        return queued

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self._labels.get(key, default)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._labels

    def labels(self) -> dict[Hashable, Any]:
        """A snapshot of every label received so far."""
        with self._cond:
            return dict(self._labels)

    def take_new(self) -> dict[Hashable, Any]:
        """The labels received since the last call (to grow an online training set)."""
        with self._cond:
            new, self._new = self._new, {}
        return new

    def add(self, labels: dict[Hashable, Any]) -> None:
        """Labels known from elsewhere (a checkpoint, an offline dataset): never asked for."""
        with self._cond:
            self._labels.update(labels)
            for key in labels:
                self._pending.pop(key, None)

    @property
    def pending(self) -> int:
        return len(self._pending) + self._in_flight

    def metrics(self) -> dict[str, float]:
        c = self.counts
        return {
            "labels_requested": float(c["requested"]),
            "labels_received": float(c["received"]),
            "labels_pending": float(self.pending),
            "labels_failed": float(c["failed"]),
            "labels_dropped": float(c["dropped"]),
            "label_batches": float(c["batches"]),
            "labelling_seconds": self.seconds_labelling,
            "labelling_rest_seconds": self.seconds_resting,
            **self.latency_metrics(),
        }

    def latency_metrics(self) -> dict[str, float]:
        """Seconds from a key's queueing to its label's arrival, over the latest 10,000
        labels: median and 90th percentile; NaN before the first label (reported from the
        start, as Tune's CSV keeps only the columns of its first row)."""
        if not self.latencies:
            return {"label_latency_s_p50": float("nan"), "label_latency_s_p90": float("nan")}
        p50, p90 = np.percentile(np.fromiter(self.latencies, float), [50, 90])
        return {"label_latency_s_p50": float(p50), "label_latency_s_p90": float(p90)}

    def wait_for(self, keys: Iterable[Hashable], timeout_s: float) -> bool:
        """Blocks until every key has a label or has failed (or ``timeout_s`` passes): for a
        reward that needs some labels now (ELLM's), never for ONI's. True if none is missing.
        The keys must have been asked for; the newest are labelled first."""
        deadline = time.monotonic() + timeout_s
        todo = set(keys)
        with self._cond:
            while True:
                todo = {k for k in todo if k not in self._labels and k not in self._failed_at}
                left = deadline - time.monotonic()
                if not todo or left <= 0 or self.error is not None or self._closed:
                    return not todo
                self._cond.wait(min(left, 0.5))

    def wait_until_idle(self, timeout_s: float) -> bool:
        """Blocks until nothing is pending (for tests and offline use, never in training)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self.pending and not self._closed and self.error is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return not self.pending

    def pause(self, timeout_s: float = 300.0) -> bool:
        """Holds the worker before its next labeler call and waits for the call in flight to
        end (up to ``timeout_s``). Keys can still be asked for; they wait. True once idle."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._paused = True
            self._cond.notify_all()  # a resting worker stops counting its rest
            while self._in_flight and not self._closed and self.error is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))
            return True

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    # -------------------------------------------------------------------- the worker side
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"labels-{self.task}", daemon=True
            )
            self._thread.start()

    def close(self, timeout_s: float = 5.0) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _next_batch(self) -> list[Hashable] | None:
        with self._cond:
            while (not self._pending or self._paused) and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            batch = []
            while self._pending and len(batch) < self.batch_size:
                key, queued_at = self._pending.popitem(last=True)  # newest first
                batch.append(key)
                self._asked_at[key] = queued_at
            self._in_flight = len(batch)
            return batch

    def _run(self) -> None:
        _lower_this_threads_priority(self.niceness)
        try:
            self._labeler = self._make_labeler()
        except Exception as err:  # a missing model or package: say so once, label nothing
            self.error = f"{type(err).__name__}: {err}"
            logger.error("online labelling is off: the labeler could not be built (%s)", err)
            with self._cond:
                self._cond.notify_all()
            return
        while (batch := self._next_batch()) is not None:
            started = time.perf_counter()
            got = self._label(batch)
            ended = time.perf_counter()
            self.call_intervals.append((started, ended))
            with self._cond:
                self._labels.update(got)
                self._new.update(got)
                self._in_flight = 0
                self.counts["received"] += len(got)
                self.counts["batches"] += 1
                self.seconds_labelling += ended - started
                now = time.monotonic()
                for key in batch:
                    queued_at = self._asked_at.pop(key, now)
                    if key in got:
                        self.latencies.append(now - queued_at)
                    else:
                        self.counts["failed"] += 1
                        self._failed_at[key] = now
                self._cond.notify_all()
            self._rest((ended - started) * (1.0 / self.max_busy_fraction - 1.0))

    def _rest(self, seconds: float) -> None:
        """Waits ``seconds`` of unpaused time (time spent paused does not count, so a paused
        benchmark phase does not let the labeler compute more than its share after it)."""
        left = seconds
        with self._cond:
            while left > 0 and not self._closed:
                if self._paused:
                    self._cond.wait()
                    continue
                t0 = time.monotonic()
                self._cond.wait(left)
                left -= time.monotonic() - t0
            self.seconds_resting += seconds - max(left, 0.0)

    def _label(self, batch: list[Hashable]) -> dict[Hashable, Any]:
        assert self._labeler is not None
        try:
            requests = [self._make_request(k) for k in batch]
            labels = self._labeler(self.task, requests)
            return {k: self._read_label(lab) for k, lab in zip(batch, labels)}
        except Exception as err:  # backend-specific errors: retry one by one
            logger.warning(
                "a %s batch of %d failed (%s); retrying one by one", self.task, len(batch), err
            )
        got = {}
        for key in batch:
            try:
                (label,) = self._labeler(self.task, [self._make_request(key)])
                got[key] = self._read_label(label)
            except Exception as err:
                logger.warning("no %s label for %r: %s", self.task, key, err)
        return got

    def __getstate__(self) -> dict:
        raise TypeError(
            "an AsyncLabelQueue holds a thread and lives where it was built; "
            "pickle the settings that build it instead"
        )


def _lower_this_threads_priority(niceness: int) -> None:
    """Raises the calling thread's nice value (Linux: per thread), so a labeler computing in
    this process (llama.cpp, which computes on the calling thread and the threads it starts
    from it) gets the CPU time training leaves idle rather than taking it from training."""
    if niceness <= 0:
        return
    try:
        tid = threading.get_native_id()
        current = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, current + niceness))
    except (AttributeError, OSError):  # not Linux, or not allowed: run at normal priority
        pass
