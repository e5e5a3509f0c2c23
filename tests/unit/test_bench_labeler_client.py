"""bench's LabelerClient on a stand-in labeler: batching, caching, fallbacks, recovery, async."""

import threading
import time

import pytest

from bench.labeler_client import LabelerClient, fallback_label
from rl_bk.labeling.tasks import ActionScoresRequest, HelpfulLabel, HelpfulRequest


class StandInLabeler:
    """Answers helpful=True for captions containing 'ball'; can fail or be slow."""

    def __init__(self):
        self.calls, self.fail, self.delay_s = [], False, 0.0

    def __call__(self, task, requests):
        self.calls.append(requests)
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail:
            raise ConnectionError("service down")
        return [HelpfulLabel(helpful="ball" in r.caption) for r in requests]


def req(caption):
    return HelpfulRequest(caption=caption, task="go to the red ball")


def test_one_call_per_batch_with_duplicates_removed_and_order_kept():
    t = StandInLabeler()
    client = LabelerClient(t)
    labels = client.label("helpful", [req("a ball"), req("a wall"), req("a ball")])
    assert [lab.helpful for lab in labels] == [True, False, True]
    assert len(t.calls) == 1 and len(t.calls[0]) == 2  # the duplicate went once


def test_repeated_requests_come_from_the_cache_without_a_call():
    t = StandInLabeler()
    client = LabelerClient(t)
    client.label("helpful", [req("a ball")])
    client.label("helpful", [req("a ball"), req("a ball")])
    assert len(t.calls) == 1 and client.metrics["cache_hits"] == 2


def test_failure_gives_counted_fallbacks_then_recovers_after_the_pause():
    t = StandInLabeler()
    client = LabelerClient(t, retries=1, retry_after_s=0.2)
    t.fail = True
    labels = client.label("helpful", [req("a ball"), req("a box")])
    assert labels == [HelpfulLabel(helpful=False)] * 2
    assert client.metrics["fallbacks"] == 2 and client.metrics["failures"] == 2  # 1 + 1 retry
    calls = len(t.calls)
    client.label("helpful", [req("a key")])  # within the pause: no call, an immediate fallback
    assert len(t.calls) == calls and client.metrics["fallbacks"] == 3
    t.fail = False
    time.sleep(0.25)
    assert client.label("helpful", [req("a ball")])[0].helpful is True  # recovered
    assert client.label("helpful", [req("a box")])[0].helpful is False  # fallbacks not cached


def test_fallbacks_change_nothing():
    scores = fallback_label("action_scores", ActionScoresRequest(prompt="p", actions=["a", "b"]))
    assert scores.logprobs == [0.0, 0.0]
    assert fallback_label("preference", None).choice == "tie"


def test_submit_returns_at_once_and_the_caller_never_waits():
    t = StandInLabeler()
    t.delay_s = 0.3
    client = LabelerClient(t)
    start = time.perf_counter()
    future = client.submit("helpful", [req("a ball")])
    assert time.perf_counter() - start < 0.05 and client.pending == 1
    assert future.result(timeout=5)[0].helpful is True
    time.sleep(0.01)
    assert client.pending == 0
    client.close()


def test_client_is_safe_from_several_threads():
    t = StandInLabeler()
    client = LabelerClient(t)
    results = []
    threads = [
        threading.Thread(
            target=lambda i=i: results.append(
                client.label("helpful", [req(f"ball {i}")])[0].helpful
            )
        )
        for i in range(8)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [True] * 8


def test_unknown_task_is_an_error_not_a_fallback():
    with pytest.raises(KeyError, match="unknown labelling task"):
        LabelerClient(StandInLabeler()).label("nope", [])
