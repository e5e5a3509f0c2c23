"""A knowledge build's numerics (rl_bk/knowledge/numerics.py). Trained as a build trains (a
small conv net and MLP, Adam, fixed seeds: the probe), pinned, the weights come out bit for
bit the same on this machine and on one that offers only AVX2 and two threads (MKL told to use
no more than AVX2, as on a CPU without AVX-512); unpinned, the thread count alone changes them,
which is what made two machines' builds differ."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rl_bk.knowledge.numerics import PINNED, pin_build_numerics, ray_runtime_env

ROOT = Path(__file__).resolve().parents[2]


def train_weights(pinned: bool) -> dict:
    """The probe's digest (a few Adam steps of a small conv net and MLP) and the numerics it
    ran on."""
    from contextlib import nullcontext

    from rl_bk.knowledge.numerics import numerics_in_effect, pinned_torch

    with pinned_torch() if pinned else nullcontext():
        facts = numerics_in_effect()
    return {"digest": facts["probe"], **facts}


def _main(mode: str) -> None:
    """In a fresh process: pins first (before torch loads) when ``mode`` is "pinned"."""
    if mode == "pinned":
        assert pin_build_numerics(), "torch was loaded before the pins"
    print(json.dumps(train_weights(mode == "pinned")))


def train(mode: str, **machine: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in PINNED}
    env.update(machine)
    code = f"from tests.unit.test_build_numerics import _main; _main({mode!r})"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_pinned_numerics_train_the_same_bits_on_a_narrower_machine_with_more_threads():
    here = train("pinned")
    narrower = train("pinned", MKL_ENABLE_INSTRUCTIONS="AVX2", OMP_NUM_THREADS="2")
    assert here["pinned"] and narrower["pinned"]
    assert here["digest"] == narrower["digest"]
    # Unpinned, two threads split the reductions otherwise: other weights from the same seed
    # (trained in this process, whose numerics are a test session's, to spare a start).
    import torch

    # oneDNN off as pinned: the threads, not the convolutions' kernels, make the difference
    before, onednn = torch.get_num_threads(), torch.backends.mkldnn.enabled
    torch.set_num_threads(2)
    torch.backends.mkldnn.enabled = False
    try:
        loose = train_weights(pinned=False)
    finally:
        torch.set_num_threads(before)
        torch.backends.mkldnn.enabled = onednn
    assert not loose["pinned"] and loose["torch_threads"] == 2
    assert loose["digest"] != here["digest"]


def test_pins_override_a_machines_own_settings_and_reach_ray_workers():
    environ = {"MKL_CBWR": "AUTO", "OMP_NUM_THREADS": "8", "HOME": "/home/x"}
    pin_build_numerics(environ)
    assert environ == {**PINNED, "HOME": "/home/x"}
    # Not the AVX2 branch: an AMD EPYC machine's MKL ignored it (docs/methods.md#the-bk-pipeline).
    assert PINNED["MKL_CBWR"] == "COMPATIBLE"
    runtime = ray_runtime_env()
    assert runtime["env_vars"] == PINNED
    # The hook Ray runs in each worker: it must import, and pin threads and oneDNN there.
    import importlib

    import torch

    module, name = runtime["worker_process_setup_hook"].rsplit(".", 1)
    threads, onednn = torch.get_num_threads(), torch.backends.mkldnn.enabled
    try:
        getattr(importlib.import_module(module), name)()
        assert torch.get_num_threads() == 1 and not torch.backends.mkldnn.enabled
    finally:
        torch.set_num_threads(threads)
        torch.backends.mkldnn.enabled = onednn
