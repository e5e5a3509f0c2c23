"""The floating-point path a knowledge build runs on, pinned, so that two machines build the
same artifact from the same settings: MKL's reproducible AVX2 branch (``MKL_CBWR``), oneDNN's
and ATen's dispatch capped at AVX2, and one thread. The libraries read these when they load,
so ``rl-bk knowledge`` sets them before torch is imported and the Ray workers a build starts
inherit them (:func:`ray_runtime_env`); :func:`numerics_in_effect` says what a build ran on.
Why: docs/methods.md#the-bk-pipeline.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager

#: The environment a reproducible build runs in.
PINNED = {
    "MKL_CBWR": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "ATEN_CPU_CAPABILITY": "avx2",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def pin_build_numerics(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Puts :data:`PINNED` into ``environ``, over what a machine set there (a build that kept a
    machine's own setting would not be reproducible). Returns whether torch was still unloaded
    in this process, that is whether the pins take effect here and not only in the processes it
    starts."""
    environ.update(PINNED)
    return "torch" not in sys.modules


def ray_runtime_env() -> dict:
    """A ``runtime_env`` for ``ray.init`` that gives a build's Ray workers the pinned numerics
    whatever the environment Ray was started from."""
    return {"env_vars": dict(PINNED)}


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch's intra-op threads at one for the duration (a reduction split over more threads
    sums in another order), restored after."""
    # load order: torch reads the pinned variables when it loads (pin_build_numerics)
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def numerics_in_effect() -> dict:
    """What this process computes with: the pinned variables' values here, ATen's dispatch
    level, torch's threads and version, and whether all of it is the pinned path (``pinned``).
    MKL and oneDNN do not report their branch; their variables are what they read at load."""
    # load order: torch reads the pinned variables when it loads (pin_build_numerics)
    import torch

    facts = {name: os.environ.get(name) for name in PINNED}
    capability = str(torch.backends.cpu.get_cpu_capability())
    facts.update(
        aten_capability=capability, torch_threads=torch.get_num_threads(), torch=torch.__version__
    )
    facts["pinned"] = (
        all(os.environ.get(k) == v for k, v in PINNED.items())
        and capability.lower() == PINNED["ATEN_CPU_CAPABILITY"]
        and facts["torch_threads"] == 1
    )
    return facts
