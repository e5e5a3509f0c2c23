"""PPO on BabyAI-Text: built from a task, trained by RLlib, swept by Tune, written to disk."""

import pandas as pd
import pytest

from rl_bk import metrics as M
from rl_bk.experiments.run import RunOptions, run_experiment
from rl_bk.experiments.task_config import load_task
from rl_bk.methods.registry import get_method

pytestmark = pytest.mark.ray


def test_ppo_from_a_task_trains_and_reports_task_metrics(ray_session):
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    config = get_method("ppo").build(task, 0, {"lr": 1e-3})
    assert config.lr == 1e-3 and config.train_batch_size_per_learner == 1024
    config.env_runners(num_env_runners=0)  # sample in the driver: no actor start-up in a test
    algo = config.build_algo()
    try:
        result = algo.train()
        result = algo.train()
    finally:
        algo.stop()
    assert result[M.ENV_STEPS] >= 2048
    runners = result["env_runners"]
    assert 0.0 <= runners["success_rate"] <= 1.0  # logged by EpisodeMetricsCallback
    assert "episode_return_mean" in runners


@pytest.mark.parametrize("lockstep", [True, False])
def test_greedy_evaluation_runs_at_its_interval_and_marks_its_reports(ray_session, lockstep):
    from rl_bk.experiments.lockstep_evaluation import LockstepEvaluation

    # The smoke task evaluates 4 greedy episodes every 2048 env steps (2 iterations of 1024).
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    task = task.model_copy(
        update={"evaluation": task.evaluation.model_copy(update={"lockstep": lockstep})}
    )
    config = get_method("ppo").build(task, 0, {})
    # Greedy; each episode on an env of its own in lockstep, or RLlib's on one env, episode
    # after episode (RLlib's on parallel envs would over-count short ones).
    assert config.evaluation_interval == 2
    assert config.evaluation_config == {"explore": False, "num_envs_per_env_runner": 1}
    assert isinstance(config.custom_evaluation_function, LockstepEvaluation) == lockstep
    config.env_runners(num_env_runners=0)
    algo = config.build_algo()
    try:
        results = [algo.train() for _ in range(3)]
    finally:
        algo.stop()
    assert "evaluation" not in results[0]
    fresh = results[1]["evaluation"]
    assert fresh["trained_env_steps"] == results[1][M.ENV_STEPS]
    runners = fresh["env_runners"]
    if lockstep:  # exactly the episodes asked for, every one to its end, greedy then sampled
        assert runners["num_episodes"] == 4 + 4
        assert 8 <= runners["num_env_steps_sampled"] <= 8 * 400
        lengths = runners["episode_len_mean"] + runners["sampled_episode_len_mean"]
        assert lengths * 4 == pytest.approx(runners["num_env_steps_sampled"])
        assert 0.0 <= runners["sampled_success_rate"] <= 1.0
    else:
        assert runners["num_episodes"] >= 4
    assert 0.0 <= runners["success_rate"] <= 1.0
    assert "episode_return_mean" in runners
    # RLlib repeats the last evaluation's numbers in the next report, without the mark.
    assert "trained_env_steps" not in results[2].get("evaluation", {})


def test_smoke_sweep_writes_table_plot_and_tensorboard(ray_session, tmp_path):
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    options = RunOptions(methods=["ppo"], output_dir=tmp_path, smoke=True, num_samples=2)
    run_dir = run_experiment(task, options)
    trials = pd.read_csv(run_dir / "trials.csv")
    assert sorted(trials["seed"]) == [0, 1] and (trials["env_steps"] >= 4096).all()
    assert (run_dir / "learning_curves.png").stat().st_size > 10_000
    assert "| ppo extrinsic_coeff=10.0 | 2 |" in (run_dir / "summary.md").read_text()
    assert list((run_dir / "tune").glob("*/events.out.tfevents.*"))  # TensorBoard
    assert list((run_dir / "tune").glob("*/checkpoint_*"))


def test_wandb_logs_offline_into_the_run_folder_without_a_key(ray_session, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    task = load_task("babyai-gotoredballnodists", smoke=True)
    options = RunOptions(
        methods=["ppo"], output_dir=tmp_path, smoke=True, wandb=True, stop_timesteps=1024
    )
    run_dir = run_experiment(task, options)
    (run_file,) = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    assert run_file.stat().st_size > 1000  # the whole run, not a stub


def test_the_learner_updates_with_the_threads_its_task_names(ray_session):
    import torch

    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    task = task.model_copy(update={"learner": task.learner.model_copy(update={"threads": 2})})
    config = get_method("ppo").build(task, 0, {}).evaluation(evaluation_interval=None)
    config.env_runners(num_env_runners=0)
    before = torch.get_num_threads()
    algo = config.build_algo()  # the learner lives in this process (num_learners=0)
    try:
        assert torch.get_num_threads() == 2
    finally:
        algo.stop()
        torch.set_num_threads(before)
