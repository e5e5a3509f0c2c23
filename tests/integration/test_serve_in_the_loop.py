"""Ray Serve in the training loop: one labeler deployment for a whole sweep (``labeler:
{mode: serve}``), through whose handle knowledge builds and every trial's online labels go
and whose replica merges concurrent callers' calls; and bk-pref's Phi read from the
reward-model app, one call per train batch."""

import pandas as pd
import pytest

from rl_bk.experiments.run import RunOptions, run_experiment
from rl_bk.experiments.task_config import load_task

pytestmark = pytest.mark.ray


def test_concurrent_handle_calls_are_merged_into_one_backend_call(ray_session, tmp_path):
    from ray import serve

    from serve_deployments.configs import LabelerAppConfig
    from serve_deployments.labeler import ensure_labeler_app

    cfg = LabelerAppConfig(
        backend="fake",
        app_name="merging",
        store_path=str(tmp_path / "s.db"),
        max_batch_size=16,
        batch_wait_timeout_s=0.5,
    )
    handle = ensure_labeler_app(cfg)
    try:
        calls = [
            handle.label.remote(
                "helpful", [{"caption": f"c{i}", "task": "t"}, {"caption": "shared", "task": "t"}]
            )
            for i in range(8)
        ]
        replies = [c.result(timeout_s=60) for c in calls]
        merged = handle.describe.remote().result()["merged"]
        # A bad request fails its own caller only, after the merged call failed.
        bad = handle.label.remote("helpful", [{"caption": "x"}])
        good = handle.label.remote("helpful", [{"caption": "y", "task": "t"}])
        with pytest.raises(Exception, match="task"):
            bad.result(timeout_s=60)
        assert len(good.result(timeout_s=60)["labels"]) == 1
    finally:
        serve.delete("merging")
    assert [len(r["labels"]) for r in replies] == [2] * 8
    assert merged["calls"] == 8 and merged["batches"] < 8  # one backend call served many


def test_a_sweep_labels_through_one_serve_app(ray_session, tmp_path):
    from ray import serve

    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    task = task.model_copy(
        update={
            "labeler": task.labeler.model_copy(update={"mode": "serve", "app_name": "sweep"}),
            "oni": task.oni.model_copy(
                update={"goal": "go to the red ball", "label_batch_size": 8}
            ),
        }
    )
    try:
        run_dir = run_experiment(
            task, RunOptions(methods=["bk-pref", "oni-retrieval"], output_dir=tmp_path, smoke=True)
        )
        stats = serve.get_app_handle("sweep").describe.remote().result()
    finally:
        serve.delete("sweep")
    trials = pd.read_csv(run_dir / "trials.csv")
    assert len(trials) == 2 and (trials["env_steps"] >= 4096).all()
    # The knowledge build's preference pairs and the ONI trial's captions reached the app.
    by_task = stats["service"]["by_task"]
    assert by_task.get("preference", 0) >= 64 and by_task.get("helpful", 0) > 0
    assert stats["merged"]["calls"] > 0


def test_bk_pref_reads_phi_from_the_reward_model_app(ray_session, tmp_path):
    from ray import serve

    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    task = task.model_copy(update={"sweep": {"bk-pref": {"served": [False, True]}}})
    try:
        run_dir = run_experiment(
            task, RunOptions(methods=["bk-pref"], output_dir=tmp_path, smoke=True)
        )
        passes = serve.get_app_handle("reward_models").forward_passes.remote().result()
    finally:
        serve.delete("reward_models")
    trials = pd.read_csv(run_dir / "trials.csv")
    assert sorted(trials["variant"]) == [
        "bk-pref backend=oracle served=False (ORACLE)",
        "bk-pref backend=oracle served=True (ORACLE)",
    ]
    assert (trials["env_steps"] >= 4096).all()
    assert passes >= 4  # the served trial's batches were scored by the app
