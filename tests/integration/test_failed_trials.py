"""A sweep with a trial that raises in the middle of training says so: ``tune_run.py`` exits 1
and names the trial, its row says ERROR, the other trial's row is intact, and the failed
trial's numbers are in no mean."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import tune_run

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[2]


def test_a_trial_that_raises_mid_training_is_an_error_row_and_a_non_zero_exit(
    ray_session, tmp_path, capsys
):
    # The second variant's learning rate turns NaN after 1,024 env steps: its second update
    # makes the weights NaN and the next forward pass raises (torch refuses NaN logits), a
    # divergence in the middle of training. No greedy evaluation: the test needs none.
    # Sampling in the trial's process (one CPU each), so both trials run side by side.
    task = tmp_path / "diverging.yaml"
    task.write_text(
        f"extends: {ROOT / 'tune_configs' / 'babyai-gotolocal-redball-s20.yaml'}\n"
        "name: diverging\n"
        "methods: [ppo]\n"
        "env_runners: {num_env_runners: 0, num_envs_per_env_runner: 4}\n"
        "learner: {threads: 1}\n"
        "smoke:\n"
        "  evaluation: {every_env_steps: null}\n"
        "  sweep:\n"
        "    ppo:\n"
        "      extrinsic_coeff: [10.0]\n"
        "      lr: [0.0003, [[0, 0.0003], [1024, .nan]]]\n"
    )
    status = tune_run.main(["--task", str(task), "--smoke", "--output-dir", str(tmp_path)])
    err = capsys.readouterr().err

    assert status == 1
    assert "1 trial(s) did not finish" in err and "ERROR: ppo" in err and "error.txt" in err
    (run_dir,) = (tmp_path / "diverging").iterdir()
    trials = pd.read_csv(run_dir / "trials.csv").set_index("status")
    assert sorted(trials.index) == ["ERROR", "done"]
    assert trials.loc["done", "env_steps"] >= 4096  # the other trial ran to its end
    assert trials.loc["ERROR", "env_steps"] < 4096
    summary = pd.read_csv(run_dir / "summary.csv")
    # Only the finished variant has a row; its mean is its one finished seed's value.
    assert list(summary["seeds"]) == [1]
    assert summary.loc[0, "env_steps_mean"] == trials.loc["done", "env_steps"]
    assert "did not finish" in (run_dir / "summary.md").read_text()
