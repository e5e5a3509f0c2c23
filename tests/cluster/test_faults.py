"""Faults on the two-node cluster (tests/cluster/two_nodes.py): the labeler replica killed
while trials label through it, and the worker node lost while trials train on it.

Opt-in (minutes, root): ``pytest -m cluster tests/cluster``.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.cluster.conftest import ROOT, on_cluster, task_file, tune_run_command
from tests.cluster.two_nodes import can_run

pytestmark = [pytest.mark.cluster, pytest.mark.skipif(can_run() is not None, reason=str(can_run()))]


def stored_labels(store: Path) -> int:
    if not store.exists():
        return 0
    with sqlite3.connect(store) as db:
        return db.execute("SELECT COUNT(*) FROM labels").fetchone()[0]


def wait_for(condition, timeout_s: float, what: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        if process.poll() is not None:
            raise AssertionError(f"tune_run.py ended (exit {process.returncode}) before {what}")
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def last_results(run_dir: Path, shared: Path) -> list[dict]:
    tune_dir = shared / "results" / "two-node" / run_dir.name / "tune"
    out = []
    for result in sorted(tune_dir.glob("*/result.json")):
        rows = [json.loads(line) for line in result.read_text().splitlines() if line.strip()]
        out.append(rows)
    return out


START_FAKE_LLM = (  # a slow fake LLM (1 s a call) on the head, its store on the shared disk
    "from serve_deployments.configs import LabelerAppConfig\n"
    "from serve_deployments.labeler import ensure_labeler_app\n"
    "ensure_labeler_app(LabelerAppConfig(backend='fake', fake_delay_s=1.0, app_name='faults',"
    " store_path={store!r}, num_cpus=0, resources={{'llm_node': 1}}))\n"
)
KILL_REPLICA = (
    "(replica,) = [a for a in ray.util.list_named_actors(all_namespaces=True)\n"
    "              if 'LabelerServer' in a['name'] and 'REPLICA' in a['name'].upper()]\n"
    "ray.kill(ray.get_actor(replica['name'], namespace=replica['namespace']))\n"
    "print(replica['name'])\n"
)


def test_a_failing_labeler_costs_counted_failures_never_training_time(cluster, tmp_path):
    """The replica killed (Serve restarts it and retries the call in flight), then the whole
    app gone for 20 s and back: the trial never waits, failed calls are counted, labelling
    resumes, and no label stored before is lost."""
    shared, store = tmp_path / "shared", tmp_path / "shared" / "labels.sqlite3"
    on_cluster(cluster, START_FAKE_LLM.format(store=str(store)))
    log = open(tmp_path / "tune_run.log", "w")
    sweep = subprocess.Popen(
        tune_run_command(
            cluster,
            "--task",
            str(task_file(tmp_path, oni="{label_batch_size: 4}", labeler="{timeout_s: 5}")),
            "--smoke",
            "--methods",
            "oni-retrieval",
            "--labeler-app",
            "faults",
            "--stop-timesteps",
            "40960",
            "--output-dir",
            str(tmp_path / "results"),
        ),
        env=cluster.env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    wait_for(lambda: stored_labels(store) >= 4, 600, "the first stored labels", sweep)
    before = stored_labels(store)
    killed = on_cluster(cluster, KILL_REPLICA).strip()
    time.sleep(5)
    on_cluster(cluster, "from ray import serve\nserve.delete('faults')\n")
    time.sleep(20)  # the labeler is down
    on_cluster(cluster, START_FAKE_LLM.format(store=str(store)))
    assert sweep.wait(timeout=1200) == 0, (tmp_path / "tune_run.log").read_text()[-3000:]
    assert killed.startswith("SERVE_REPLICA")
    (run_dir,) = (tmp_path / "results" / "two-node").iterdir()
    trials = pd.read_csv(run_dir / "trials.csv")
    assert len(trials) == 1 and trials["env_steps"].iloc[0] >= 40960
    (rows,) = last_results(run_dir, shared)
    failed = [r["learners"]["intrinsic/labels_failed"] for r in rows]
    received = [r["learners"]["intrinsic/labels_received"] for r in rows]
    assert failed[-1] >= 1  # calls while the app was gone: counted
    first_failure = next(i for i, f in enumerate(failed) if f >= 1)
    assert received[-1] > received[first_failure]  # labels came again once it was back
    assert stored_labels(store) >= before  # nothing stored before the faults was lost
    # Training never waited for the labeler: no iteration took as long as the 20 s outage.
    times = [r["time_this_iter_s"] for r in rows]
    assert max(times) < 15, times


def test_a_lost_worker_node_is_replaced_and_trials_resume_from_checkpoints(cluster, tmp_path):
    shared = tmp_path / "shared"
    log = open(tmp_path / "tune_run.log", "w")
    sweep = subprocess.Popen(
        tune_run_command(
            cluster,
            "--task",
            str(task_file(tmp_path)),
            "--smoke",
            "--methods",
            "ppo",
            "--num-samples",
            "2",
            "--stop-timesteps",
            "16384",
            "--output-dir",
            str(tmp_path / "results"),
        ),
        env=cluster.env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    tune_dir = shared / "results" / "two-node"
    wait_for(
        lambda: len(list(tune_dir.glob("*/tune/*/checkpoint_*"))) >= 2,
        900,
        "a checkpoint of each trial",
        sweep,
    )
    cluster.kill_worker()  # the instance is gone, its trials with it
    time.sleep(5)
    cluster.start_worker()  # the autoscaler's replacement
    assert sweep.wait(timeout=1800) == 0, (tmp_path / "tune_run.log").read_text()[-3000:]
    (run_dir,) = (tmp_path / "results" / "two-node").iterdir()
    trials = pd.read_csv(run_dir / "trials.csv")
    assert len(trials) == 2 and (trials["env_steps"] >= 16384).all()
    # Restored trials count their iterations since the restore from 1 again, mid-run.
    restored = [
        any(r["iterations_since_restore"] < r["training_iteration"] for r in rows)
        for rows in last_results(run_dir, shared)
    ]
    assert any(restored), "no trial was restored from a checkpoint"
