"""rl-bk's APPO learner-thread buffer: RLlib's circular buffer semantics (N batches, each
given at most K times), with a get() that waits instead of polling."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from ray.rllib.algorithms.appo import utils as appo_utils
from ray.rllib.algorithms.appo.utils import CircularBuffer

from rl_bk.algorithms.appo.learner import WaitingCircularBuffer


def _count_sleeps(monkeypatch) -> list[float]:
    """The sleeps RLlib's buffer module takes (its get() polls with time.sleep), each still
    slept."""
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        time.sleep(seconds)

    monkeypatch.setattr(
        appo_utils,
        "time",
        SimpleNamespace(sleep=sleep, time=time.time, perf_counter=time.perf_counter),
    )
    return sleeps


def _get_after_a_delayed_put(buffer, delay_s: float = 0.05):
    got = {}
    consumer = threading.Thread(target=lambda: got.update(batch=buffer.get()))
    consumer.start()
    threading.Event().wait(delay_s)  # not time.sleep: that is what is counted
    buffer.put("batch")
    consumer.join(timeout=5)
    assert not consumer.is_alive(), "get() did not return after a put"
    return got["batch"]


def test_a_put_wakes_a_waiting_get_which_never_polls(monkeypatch):
    sleeps = _count_sleeps(monkeypatch)
    assert _get_after_a_delayed_put(WaitingCircularBuffer(2, 2)) == "batch"
    assert sleeps == []


def test_rllibs_own_buffer_still_polls(monkeypatch):
    # If this fails, RLlib's get() no longer polls and WaitingCircularBuffer can go.
    sleeps = _count_sleeps(monkeypatch)
    assert _get_after_a_delayed_put(CircularBuffer(2, 2)) == "batch"
    assert len(sleeps) > 10 and set(sleeps) == {0.0001}


def test_each_batch_is_given_at_most_k_times_then_get_waits():
    buffer = WaitingCircularBuffer(num_batches=2, iterations_per_batch=2)
    buffer.put("a")
    buffer.put("b")
    assert sorted(buffer.get() for _ in range(4)) == ["a", "a", "b", "b"]
    with pytest.raises(TimeoutError):
        buffer.get(timeout=0.01)
    with pytest.raises(IndexError):
        buffer.get(block=False)


class _Batch(SimpleNamespace):
    def env_steps(self) -> int:
        return self.steps


def test_a_full_buffer_drops_its_oldest_batch_and_counts_its_env_steps():
    buffer = WaitingCircularBuffer(num_batches=1, iterations_per_batch=2)
    old, new = _Batch(steps=7), _Batch(steps=9)
    buffer.put(old)
    assert buffer.put(new) == 7
    assert [buffer.get(), buffer.get()] == [new, new]
    assert len(buffer) == 0
