"""The floating-point path a knowledge build runs on, pinned, so that two machines build the
same artifact from the same settings: MKL's vendor-neutral reproducible branch (``MKL_CBWR``
``COMPATIBLE``: an AMD CPU's MKL did not take the AVX2 branch asked of it, and ran a path of
its own), ATen's dispatch capped at AVX2, convolutions through ATen rather than oneDNN
(whose kernels are chosen per machine), and one thread. The libraries read the variables when
they load, so ``rl-bk knowledge`` sets them before torch is imported and the Ray workers a
build starts inherit them (:func:`ray_runtime_env`, with :func:`pin_worker` run in each);
:func:`numerics_in_effect` says what a build ran on, with the digest of a small training run
(:func:`probe_digest`): two machines whose probes differ build different artifacts.
Why: docs/methods.md#the-bk-pipeline.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager

#: The environment a reproducible build runs in.
PINNED = {
    "MKL_CBWR": "COMPATIBLE",
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
    return {
        "env_vars": dict(PINNED),
        "worker_process_setup_hook": f"{__name__}.pin_worker",
    }


def pin_worker() -> None:
    """In a build's Ray worker, for its whole life: one torch thread, convolutions off oneDNN."""
    # load order: torch reads the pinned variables when it loads (ray_runtime_env's env_vars)
    import torch

    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False


@contextmanager
def pinned_torch() -> Iterator[None]:
    """For the duration, torch's intra-op threads at one (a reduction split over more threads
    sums in another order) and convolutions off oneDNN; both restored after."""
    # load order: torch reads the pinned variables when it loads (pin_build_numerics)
    import torch

    threads, onednn = torch.get_num_threads(), torch.backends.mkldnn.enabled
    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.backends.mkldnn.enabled = onednn


def probe_digest() -> str:
    """The digest of the weights a small conv net and MLP reach in a few Adam steps from a
    fixed seed, on this process's numerics: equal on two machines when their builds' floating
    point is the same (the artifacts' fingerprints then say whether the builds are)."""
    # load order: torch reads the pinned variables when it loads (pin_build_numerics)
    import torch

    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3),
            torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
            torch.nn.Linear(32 * 3 * 3, 64),
            torch.nn.Tanh(),
            torch.nn.Linear(64, 7),
        )
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.randn(128, 3, 7, 7, generator=generator)
    y = torch.randint(0, 7, (128,), generator=generator)
    for _ in range(5):
        loss = torch.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    weights = b"".join(p.detach().numpy().tobytes() for p in net.parameters())
    return hashlib.sha256(weights).hexdigest()[:16]


def numerics_in_effect() -> dict:
    """What this process computes with: the pinned variables' values here, ATen's dispatch
    level, torch's threads, oneDNN's use and torch's version, whether all of it is the pinned
    path (``pinned``), and the :func:`probe_digest` on it. MKL does not report its branch: its
    variables are what it read at load."""
    # load order: torch reads the pinned variables when it loads (pin_build_numerics)
    import torch

    facts = {name: os.environ.get(name) for name in PINNED}
    capability = str(torch.backends.cpu.get_cpu_capability())
    facts.update(
        aten_capability=capability,
        torch_threads=torch.get_num_threads(),
        onednn=bool(torch.backends.mkldnn.enabled),
        torch=torch.__version__,
    )
    facts["pinned"] = (
        all(os.environ.get(k) == v for k, v in PINNED.items())
        and capability.lower() == PINNED["ATEN_CPU_CAPABILITY"]
        and facts["torch_threads"] == 1
        and not facts["onednn"]
    )
    facts["probe"] = probe_digest()
    return facts
