"""The two-node cluster these tests share, and how they run tune_run.py against it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.two_nodes import TwoNodeCluster

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cluster(tmp_path):
    # The worker sees neither the head's knowledge cache nor the driver's results folder.
    hidden = [Path("~/.cache/rl-bk").expanduser(), tmp_path / "results"]
    os.environ["PYTHONPATH"] = str(ROOT)  # nodes import this checkout, as the driver does
    c = TwoNodeCluster(hidden, head_cpus=0, worker_cpus=4, log_dir=tmp_path / "logs").start()
    yield c
    c.stop()


def task_file(tmp_path: Path, storage: Path | None = None, **sections: str) -> Path:
    """The BK smoke task, with the labeler app on the head's llm_node (as cluster.yaml puts
    it on a GPU node) and the knowledge and results on ``storage`` (default: the shared
    folder both nodes see; ``tmp_path / "none"``: no storage at all)."""
    path = tmp_path / "task.yaml"
    storage = tmp_path / "shared" if storage is None else storage
    lines = [
        f"extends: {ROOT / 'tune_configs' / 'babyai-gotolocal-redball-s20.yaml'}",
        "name: two-node",
        "labeler: {mode: serve, resources: {llm_node: 1}}",
        *([f"storage: {storage}"] if storage != tmp_path / "none" else []),
        *(f"{k}: {v}" for k, v in sections.items()),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def tune_run_command(cluster: TwoNodeCluster, *args: str) -> list[str]:
    return [sys.executable, str(ROOT / "tune_run.py"), "--address", cluster.address, *args]


def tune_run(cluster: TwoNodeCluster, *args: str, log: Path) -> subprocess.CompletedProcess:
    with open(log, "w") as out:
        return subprocess.run(
            tune_run_command(cluster, *args),
            env=cluster.env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=1800,
        )


def on_cluster(cluster: TwoNodeCluster, code: str, timeout_s: float = 120) -> str:
    """Runs Python ``code`` as a driver of the cluster (``ray`` is imported and connected);
    returns what it printed."""
    script = f"import ray\nray.init(address={cluster.address!r}, logging_level='ERROR')\n{code}"
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=cluster.env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if done.returncode != 0:
        raise RuntimeError(f"driver script failed:\n{done.stderr[-3000:]}")
    return done.stdout
