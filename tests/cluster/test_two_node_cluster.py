"""tune_run.py on a two-node Ray cluster whose worker cannot see the head's private folders
(tests/cluster/two_nodes.py): every trial lands on the worker, reads its knowledge from the
shared storage, labels through the one Serve labeler app (on the head, as on a cluster's GPU
node), and writes its results to the shared storage; the summary lists every trial.

Opt-in (minutes, root): ``pytest -m cluster tests/cluster``. Run it before landing a change
that touches storage, the labeler app or tune_run.py's cluster path.
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.cluster.conftest import task_file, tune_run
from tests.cluster.two_nodes import can_run

pytestmark = [pytest.mark.cluster, pytest.mark.skipif(can_run() is not None, reason=str(can_run()))]

METHODS = "ppo,bk-code,bk-pref,bk-goal,oni-retrieval,ellm"


def test_every_trial_runs_on_the_worker_node_and_the_summary_lists_them(cluster, tmp_path):
    done = tune_run(
        cluster,
        "--task",
        str(task_file(tmp_path)),
        "--smoke",
        "--methods",
        METHODS,
        "--output-dir",
        str(tmp_path / "results"),
        log=tmp_path / "tune_run.log",
    )
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


@pytest.mark.parametrize("storage", ["none", "private"])
def test_without_storage_every_node_sees_tune_run_stops_before_any_trial(
    cluster, tmp_path, storage
):
    # "none": no storage at all; "private": a folder the worker node cannot see.
    folder = tmp_path / "none" if storage == "none" else tmp_path / "results" / "private"
    done = tune_run(
        cluster,
        "--task",
        str(task_file(tmp_path, storage=folder)),
        "--smoke",
        "--methods",
        "ppo",
        "--output-dir",
        str(tmp_path / "results"),
        log=tmp_path / "tune_run.log",
    )
    log = (tmp_path / "tune_run.log").read_text()
    assert done.returncode == 2, log[-3000:]
    assert "--storage" in log and "docs/cluster.md" in log and "Traceback" not in log
    # Nothing started: no trial folder anywhere, no knowledge built.
    assert not list(tmp_path.glob("**/result.json"))
    assert not list(tmp_path.glob("**/DONE.json"))
