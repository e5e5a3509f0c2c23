"""APPO's torch learner, with a learner thread that sleeps until a batch arrives.

RLlib's learner thread polls its empty ``CircularBuffer`` every 0.1 ms, CPU that the env
runners need on a machine of few cores; :class:`WaitingCircularBuffer` is the same buffer (the
same N batches, each sampled at most K times) whose ``get()`` waits on a condition that
``put()`` notifies. Details: docs/methods.md#ppo-or-appo.
"""

from __future__ import annotations

import threading
from typing import Any

from ray.rllib.algorithms.appo.torch.appo_torch_learner import APPOTorchLearner
from ray.rllib.algorithms.appo.utils import CircularBuffer
from ray.rllib.algorithms.impala.impala_learner import IMPALALearner
from ray.rllib.utils.annotations import override


class WaitingCircularBuffer(CircularBuffer):
    """RLlib's APPO circular buffer, whose ``get()`` sleeps until a batch is in."""

    def __init__(self, num_batches: int, iterations_per_batch: int):
        super().__init__(num_batches=num_batches, iterations_per_batch=iterations_per_batch)
        self._not_empty = threading.Condition(self._lock)

    @override(CircularBuffer)
    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> int:
        dropped = super().put(item, block=block, timeout=timeout)
        with self._not_empty:
            self._not_empty.notify()
        return dropped

    @override(CircularBuffer)
    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        """A batch sampled uniformly from those not yet used K times; waits for one when
        ``block`` (at most ``timeout`` seconds: then ``TimeoutError``), else ``IndexError``
        on an empty buffer."""
        with self._not_empty:  # the predicate runs under the buffer's lock
            if not block and not self._indices:
                raise IndexError("the circular buffer is empty")
            if not self._not_empty.wait_for(lambda: self._indices, timeout=timeout):
                raise TimeoutError(f"no batch in the circular buffer within {timeout} s")
        # RLlib's get() samples under the same lock; a put never empties the buffer and the
        # learner thread is its one consumer, so the batch found above is still there.
        return super().get(block=block, timeout=timeout)


class WaitingLearnerQueue(IMPALALearner):
    """Gives the learner thread a :class:`WaitingCircularBuffer` in place of the polling one.

    In the method resolution order of :class:`BaseAPPOTorchLearner` this ``build()`` runs
    after ``APPOLearner.build`` has made the buffer and before ``IMPALALearner.build`` starts
    the learner thread on it, the one point where the buffer can be swapped."""

    @override(IMPALALearner)
    def build(self) -> None:
        queue = getattr(self, "_learner_thread_in_queue", None)
        if type(queue) is CircularBuffer:
            self._learner_thread_in_queue = WaitingCircularBuffer(
                num_batches=queue.num_batches, iterations_per_batch=queue.iterations_per_batch
            )
        super().build()


class BaseAPPOTorchLearner(APPOTorchLearner, WaitingLearnerQueue):
    """RLlib's APPO torch learner (loss, V-trace, target network and KL updates unchanged)
    whose learner thread waits for batches instead of polling for them."""


def _check_order() -> None:
    # The swap relies on this order; a future RLlib that changes it fails at import, loudly.
    names = [c.__name__ for c in BaseAPPOTorchLearner.__mro__]
    if (
        not names.index("APPOLearner")
        < names.index("WaitingLearnerQueue")
        < names.index("IMPALALearner")
    ):
        raise ImportError(
            f"unexpected APPO learner class order {names}: rl-bk's "
            "WaitingLearnerQueue must build between APPOLearner and "
            "IMPALALearner"
        )


_check_order()
