"""BK-Code at RL time: the written potential function as a PotentialSource
(:class:`CodePotential`), one sandbox round trip per train batch. Code that fails at RL time
(refused, too slow, out of memory, raising) must not end a trial that may have run for hours:
that batch gets zero potentials, the failure is counted and logged, and the next batch tries
again.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rl_bk.knowledge.trajectory import Chunk, flat
from rl_bk.methods.bk.code.descriptions import FUNCTION_NAME, window_records
from rl_bk.methods.bk.code.sandbox import CodeDefinitionError, Sandbox, SandboxError
from rl_bk.methods.bk.sources import split_by_chunk

logger = logging.getLogger(__name__)


class CodePotential:
    """Phi(state) = the written function on the window ending at that state.

    One train batch is one sandbox round trip: every window of every chunk is built,
    identical windows are merged (captions repeat a lot: an agent that turns in place sees few
    views), and the distinct ones go to the code in a single ``call_many``. A batch the code
    fails on gets zero potentials (shaping adds nothing to it), the failure is counted in
    :meth:`metrics` and logged, and the next batch tries again in a fresh worker where needed.
    The sandbox is created lazily, in the process that calls the source (RLlib builds the
    shaping connector on the learner), and is left out of pickles.
    """

    name = "bk-code"

    def __init__(
        self,
        code: str,
        *,
        family: str,
        horizon: int = 5,
        time_limit_s: float = 10.0,
        memory_mb: int = 512,
        function: str = FUNCTION_NAME,
    ):
        self.code = code
        self.family = family
        self.horizon = int(horizon)
        self.time_limit_s = float(time_limit_s)
        self.memory_mb = int(memory_mb)
        self.function = function
        self.calls = 0
        self.errors = 0
        self.windows = 0
        self.unique_windows = 0
        self.seconds = 0.0
        self.last_error: str | None = None
        self._sandbox: Sandbox | None = None
        self._unloadable = False  # the code does not define the function: never will

    @classmethod
    def from_dir(cls, out_dir: str | Path, candidate: int | None = None, **kw) -> CodePotential:
        """The code the writer saved in ``out_dir``: ``code-final.py``, or candidate ``i``'s.
        ``family`` and ``horizon`` default to those in its ``meta.json``."""
        folder = Path(out_dir)
        name = "code-final.py" if candidate is None else f"code-candidate-{candidate}.py"
        path = folder / name
        if not path.is_file():
            raise FileNotFoundError(
                f"no BK-Code function at {path}: write one first "
                "(`rl-bk knowledge build ... bk-code`)"
            )
        meta_path = folder / "meta.json"
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        kw.setdefault("family", meta.get("family"))
        kw.setdefault("horizon", meta.get("horizon", 5))
        if kw["family"] is None:
            raise ValueError(f"{folder} has no meta.json with the env family: pass family=")
        return cls(path.read_text(), **kw)

    def __call__(self, chunks: Sequence[Chunk]) -> list[np.ndarray]:
        started = time.perf_counter()
        all_windows = flat(chunks, self.horizon)
        index: dict[tuple, int] = {}
        inverse = np.empty(len(all_windows), np.int64)
        unique = []
        for i, w in enumerate(all_windows):
            key = (*w.captions, *w.actions)
            j = index.get(key)
            if j is None:
                j = index[key] = len(unique)
                unique.append(w)
            inverse[i] = j
        self.calls += 1
        self.windows += len(all_windows)
        self.unique_windows += len(unique)
        values = np.zeros(len(unique), np.float64)
        if unique and self._unloadable:
            self._failed(None)
        elif unique:
            try:
                sandbox = self._ready_sandbox()
                values = np.asarray(
                    sandbox.call_many([[window_records(w, self.family)] for w in unique]),
                    np.float64,
                )
            except SandboxError as e:
                self._unloadable = isinstance(e, CodeDefinitionError)
                self._failed(e)
        self.seconds += time.perf_counter() - started
        return split_by_chunk(values[inverse], chunks)

    def metrics(self) -> dict[str, float]:
        return {
            "code_calls": float(self.calls),
            "code_errors": float(self.errors),
            "code_unique_window_fraction": self.unique_windows / max(self.windows, 1),
            "code_seconds_per_call": self.seconds / max(self.calls, 1),
        }

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def _ready_sandbox(self) -> Sandbox:
        if self._sandbox is None:
            sandbox = Sandbox(time_limit_s=self.time_limit_s, memory_mb=self.memory_mb)
            try:
                sandbox.load(self.code, self.function)
            except BaseException:
                sandbox.close()
                raise
            self._sandbox = sandbox
        return self._sandbox

    def _failed(self, error: SandboxError | None) -> None:
        """Counts a batch that got zeros; None: the code is known not to load."""
        self.errors += 1
        if error is not None:
            self.last_error = f"{type(error).__name__}: {error}"
        # The first failure in full, then every 100th: a broken code fails on every batch.
        if self.errors == 1 or self.errors % 100 == 0:
            logger.warning(
                "bk-code potential failed on a batch (%d so far), using zeros: %s",
                self.errors,
                self.last_error,
            )

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_sandbox"] = None
        return state

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
