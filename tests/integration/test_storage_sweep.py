"""A sweep with ``storage`` behind a URI (``file://`` stands in for ``s3://``): the knowledge
artifact is published there and each trial fetches its own copy; Tune's experiment lives
there; the local run folder holds only the tables."""

import pandas as pd
import pytest

from rl_bk.experiments.run import RunOptions, run_experiment
from rl_bk.experiments.task_config import load_task

pytestmark = pytest.mark.ray


def test_knowledge_and_results_go_through_uri_storage(ray_session, tmp_path):
    import hashlib

    from rl_bk.storage import fetch_root

    storage = tmp_path / "bucket"
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    task = task.model_copy(
        update={"storage": f"file://{storage}", "sweep": {"bk-pref": {"include_mission": [False]}}}
    )
    run_dir = run_experiment(
        task, RunOptions(methods=["bk-pref"], output_dir=tmp_path / "out", smoke=True)
    )
    trials = pd.read_csv(run_dir / "trials.csv")
    assert len(trials) == 1 and trials["env_steps"].iloc[0] >= 4096
    assert not (run_dir / "tune").exists()  # Tune wrote to the storage instead
    tune_dir = storage / "results" / task.name / run_dir.name / "tune"
    assert list(tune_dir.glob("*/result.json"))
    (published,) = storage.glob("knowledge/*/bk-pref/*/DONE.json")
    uri = f"file://{published.parent}"
    assert uri in (run_dir / "knowledge.json").read_text()  # where the trial was told to read
    copy = fetch_root() / hashlib.sha256(uri.encode()).hexdigest()[:16]
    assert (copy / "model.pt").is_file()  # the trial's node fetched its own copy
