"""tune_run.py on a two-node Ray cluster whose worker cannot see the head's private folders
(tests/cluster/two_nodes.py): every trial lands on the worker, reads its knowledge from the
shared storage, labels through the one Serve labeler app (on the head, as on a cluster's GPU
node), and writes its results to the shared storage; the summary lists every trial.

Opt-in (minutes, root): ``pytest -m cluster tests/cluster``. Run it before landing a change
that touches storage, the labeler app or tune_run.py's cluster path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.cluster.two_nodes import TwoNodeCluster, can_run

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(can_run() is not None, reason=str(can_run()))]  # fmt: skip

ROOT = Path(__file__).resolve().parents[2]
METHODS = "ppo,bk-code,bk-pref,bk-goal,oni-retrieval,ellm"


@pytest.fixture
def cluster(tmp_path):
    # The worker sees neither the head's knowledge cache nor the driver's results folder.
    hidden = [Path("~/.cache/rl-bk").expanduser(), tmp_path / "results"]
    env = {"PYTHONPATH": str(ROOT)}  # workers import this checkout, as the driver does
    os.environ.update(env)
    c = TwoNodeCluster(hidden, head_cpus=0, worker_cpus=4, log_dir=tmp_path / "logs").start()
    yield c
    c.stop()


def task_file(tmp_path: Path) -> Path:
    """The BK smoke task, with the labeler app on the head's llm_node (as cluster.yaml puts
    it on a GPU node) and the knowledge and results on the shared storage."""
    path = tmp_path / "task.yaml"
    path.write_text(
        f"extends: {ROOT / 'tune_configs' / 'babyai-gotolocal-redball-s20.yaml'}\n"
        "name: two-node\n"
        "labeler: {mode: serve, resources: {llm_node: 1}}\n"
        f"storage: {tmp_path / 'shared'}\n"
    )
    return path


def tune_run(cluster: TwoNodeCluster, *args: str, log: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, str(ROOT / "tune_run.py"), "--address", cluster.address, *args]
    with open(log, "w") as out:
        return subprocess.run(command, env=cluster.env, cwd=ROOT, stdout=out,
                              stderr=subprocess.STDOUT, timeout=1800)  # fmt: skip


def test_every_trial_runs_on_the_worker_node_and_the_summary_lists_them(cluster, tmp_path):
    done = tune_run(cluster, "--task", str(task_file(tmp_path)), "--smoke",
                    "--methods", METHODS, "--output-dir", str(tmp_path / "results"),
                    log=tmp_path / "tune_run.log")  # fmt: skip
    log = (tmp_path / "tune_run.log").read_text()
    assert done.returncode == 0, log[-3000:]
    (run_dir,) = (tmp_path / "results" / "two-node").iterdir()
    trials = pd.read_csv(run_dir / "trials.csv")
    assert sorted(v.split()[0] for v in trials["variant"]) == sorted(METHODS.split(","))
    assert (trials["env_steps"] >= 4096).all()
    # Tune's experiment and the knowledge are on the shared storage, not the driver's disk.
    shared = tmp_path / "shared"
    assert list((shared / "results" / "two-node" / run_dir.name / "tune").glob("*/result.json"))
    assert list((shared / "knowledge").glob("*/bk-pref/*/DONE.json"))
