"""The online label queue: training-side calls never wait; the worker labels the newest keys
first, retries a failed batch one key at a time, and forgets nothing it was given."""

import math
import threading
import time

import pytest

from rl_bk.labeling.config import LabelerConfig
from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.labeling.queue import AsyncLabelQueue
from rl_bk.labeling.tasks import HelpfulLabel, HelpfulRequest


def request(caption):
    return HelpfulRequest(caption=caption, task="maximise the score", env="nethack")


class ScriptedLabeler:
    """helpful = "good" in the caption; records batches; can block, or fail on a caption."""

    def __init__(self, fail_on=(), gate=None):
        self.batches, self.fail_on, self.gate = [], set(fail_on), gate

    def __call__(self, task, requests):
        if self.gate is not None:
            self.gate.wait()
        captions = [r.caption for r in requests]
        self.batches.append(captions)
        if self.fail_on & set(captions):
            raise ValueError("malformed answer")
        return [HelpfulLabel(helpful="good" in c) for c in captions]


def queue(labeler, **kwargs):
    return AsyncLabelQueue(
        lambda: labeler, "helpful", request, lambda lab: float(lab.helpful), **kwargs
    )


def test_ask_and_get_never_wait_for_a_blocked_labeler():
    gate = threading.Event()
    q = queue(ScriptedLabeler(gate=gate), batch_size=2)
    started = time.perf_counter()
    assert q.ask(["good 1", "bad 2", "good 3"]) == 3
    assert q.get("good 1") is None and q.pending == 3
    assert q.ask(["good 1"]) == 0  # already queued: not asked twice
    assert time.perf_counter() - started < 0.1
    gate.set()
    assert q.wait_until_idle(5)
    assert q.labels() == {"good 1": 1.0, "bad 2": 0.0, "good 3": 1.0}
    assert q.metrics()["labels_received"] == 3 and q.pending == 0
    assert q.ask(["good 3"]) == 0  # labelled: never asked again
    q.close()


def test_the_newest_keys_are_labelled_first_and_take_new_hands_each_label_once():
    gate = threading.Event()
    labeler = ScriptedLabeler(gate=gate)
    q = queue(labeler, batch_size=2, start=False)
    q.ask(["a", "b", "c", "d", "e"])
    q.start()
    gate.set()
    assert q.wait_until_idle(5)
    assert labeler.batches == [["e", "d"], ["c", "b"], ["a"]]
    assert set(q.take_new()) == {"a", "b", "c", "d", "e"}
    assert q.take_new() == {}
    q.close()


def test_a_failed_batch_is_retried_one_by_one_and_the_bad_key_waits_before_a_new_ask():
    labeler = ScriptedLabeler(fail_on={"bad"})
    q = queue(labeler, batch_size=3, retry_after_s=60)
    q.ask(["x good", "bad", "y"])
    assert q.wait_until_idle(5)
    assert q.labels() == {"x good": 1.0, "y": 0.0}
    assert q.metrics()["labels_failed"] == 1
    assert len(labeler.batches) == 4  # the batch, then each key alone
    assert q.ask(["bad"]) == 0  # failed a moment ago: not asked again yet
    q.retry_after_s = 0.0
    assert q.ask(["bad"]) == 1
    q.close()


def test_beyond_max_pending_the_oldest_keys_are_dropped_and_counted():
    q = queue(ScriptedLabeler(), max_pending=2, start=False)
    q.ask(["old", "mid", "new"])
    assert q.metrics()["labels_dropped"] == 1 and q.pending == 2
    q.start()
    assert q.wait_until_idle(5)
    assert set(q.labels()) == {"mid", "new"}
    assert q.ask(["old"]) == 1  # dropped, not lost: it can be asked again
    q.close()


def test_a_labeler_that_cannot_be_built_is_reported_and_training_goes_on():
    def broken():
        raise FileNotFoundError("no GGUF model file at /nowhere.gguf")

    q = AsyncLabelQueue(broken, "helpful", request)
    q.ask(["a"])
    assert not q.wait_until_idle(2)
    assert "no GGUF model file" in q.error
    assert q.get("a") is None
    q.close()


def test_labels_from_elsewhere_are_never_asked_for():
    labeler = ScriptedLabeler()
    q = queue(labeler)
    q.add({"known": 1.0})
    assert q.ask(["known"]) == 0 and q.get("known") == 1.0
    q.close()
    with pytest.raises(TypeError, match="pickle the settings"):
        import pickle

        pickle.dumps(q)


def test_labeler_spec_builds_an_in_process_labeler_on_the_store(tmp_path):
    spec = LabelerSpec(LabelerConfig(backend="fake", store_path=str(tmp_path / "labels.sqlite3")))
    labeler = spec.build()
    (label,) = labeler("helpful", [request("You kill the newt!")])
    assert isinstance(label, HelpfulLabel)
    assert not labeler.is_oracle and labeler.identity == "fake/fake-v1"
    assert LabelerSpec().build().is_oracle  # the default labeler is the oracle


def test_the_worker_thread_runs_at_a_lower_priority():
    import os

    seen = {}

    def labeler_factory():
        import threading as th

        tid = th.get_native_id()
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, tid)
        return ScriptedLabeler()

    base = os.getpriority(os.PRIO_PROCESS, 0)
    q = AsyncLabelQueue(labeler_factory, "helpful", request, niceness=5)
    q.ask(["x"])
    assert q.wait_until_idle(5)
    q.close()
    assert seen["nice"] == min(19, base + 5)
    assert os.getpriority(os.PRIO_PROCESS, 0) == base  # the training thread is untouched


class TimedLabeler:
    """Takes ``seconds`` per call and records when each call started and ended."""

    def __init__(self, seconds):
        self.seconds, self.calls = seconds, []

    def __call__(self, task, requests):
        start = time.perf_counter()
        time.sleep(self.seconds)
        self.calls.append((start, time.perf_counter()))
        return [HelpfulLabel(helpful=True) for _ in requests]


def test_a_busy_fraction_makes_the_worker_rest_three_times_a_call_at_one_quarter():
    labeler = TimedLabeler(0.05)
    q = queue(labeler, batch_size=1, max_busy_fraction=0.25)
    q.ask(["a", "b", "c"])
    assert q.wait_until_idle(10)
    q.close()
    gaps = [nxt[0] - prev[1] for prev, nxt in zip(labeler.calls, labeler.calls[1:])]
    # rest = t * (1 / 0.25 - 1) = 3t >= 0.15 s after each call; a wait never ends early
    assert len(gaps) == 2 and min(gaps) >= 0.14
    # two whole rests; close() ends the third early
    assert q.metrics()["labelling_rest_seconds"] >= 0.28


def test_without_a_busy_fraction_the_worker_never_rests():
    q = queue(TimedLabeler(0.0), batch_size=1)
    q.ask(["a", "b"])
    assert q.wait_until_idle(5)
    q.close()
    assert q.metrics()["labelling_rest_seconds"] == 0.0


def test_a_busy_fraction_outside_zero_to_one_is_refused():
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="max_busy_fraction"):
            queue(ScriptedLabeler(), max_busy_fraction=bad, start=False)


def test_a_paused_queue_finishes_its_call_in_flight_then_calls_nothing_until_resumed():
    gate = threading.Event()
    labeler = ScriptedLabeler(gate=gate)
    q = queue(labeler, batch_size=1)
    q.ask(["good 1"])
    deadline = time.monotonic() + 5
    while q.metrics()["labels_pending"] and not q._in_flight and time.monotonic() < deadline:
        time.sleep(0.01)  # until the worker has taken the key
    assert q.pause(timeout_s=0.1) is False  # the call in flight is blocked on the gate
    gate.set()
    assert q.pause(timeout_s=5) is True
    q.ask(["good 2"])
    time.sleep(0.2)
    assert labeler.batches == [["good 1"]] and q.pending == 1
    q.resume()
    assert q.wait_until_idle(5)
    assert q.labels() == {"good 1": 1.0, "good 2": 1.0}
    q.close()


def test_each_labeler_call_is_recorded_as_an_interval_in_order():
    labeler = TimedLabeler(0.01)
    q = queue(labeler, batch_size=1)
    q.ask(["a", "b"])
    assert q.wait_until_idle(5)
    q.close()
    (s1, e1), (s2, e2) = q.call_intervals
    assert s1 < e1 <= s2 < e2
    assert e1 - s1 >= 0.01 and e2 - s2 >= 0.01


def test_label_latency_counts_from_queueing_to_arrival():
    gate = threading.Event()
    q = queue(ScriptedLabeler(gate=gate), batch_size=8)
    # no label yet: no latency, but the column is there from the first report (Tune's CSV
    # keeps the columns of its first row)
    assert math.isnan(q.metrics()["label_latency_s_p50"])
    q.ask(["good 1", "bad 2"])
    time.sleep(0.2)  # the labeler is held: both labels wait at least this long
    gate.set()
    assert q.wait_until_idle(5)
    m = q.metrics()
    assert 0.2 <= m["label_latency_s_p50"] <= m["label_latency_s_p90"] < 5
    q.close()
