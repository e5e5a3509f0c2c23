"""tune_run.py: a user's mistake ends in one line on stderr and exit code 2, before Ray starts."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("tune_run", ROOT / "tune_run.py")
tune_run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tune_run)


def run(capsys, *argv):
    code = tune_run.main(list(argv))
    err = capsys.readouterr().err
    return code, err


def test_unknown_task(capsys):
    code, err = run(capsys, "--task", "babyai-nope")
    assert code == 2 and err.count("\n") == 1
    assert "unknown task 'babyai-nope'; available tasks:" in err
    assert "babyai-gotolocal-redball-s20" in err


def test_unknown_method(capsys):
    code, err = run(capsys, "--task", "babyai-gotolocal-redball-s20", "--methods", "ppo,magic")
    assert code == 2
    from rl_bk.methods.registry import METHODS

    assert f"unknown method 'magic'; valid methods: {', '.join(sorted(METHODS))}" in err


def test_unknown_flag_lists_valid_flags(capsys):
    with pytest.raises(SystemExit) as exit_info:
        tune_run.main(["--task", "x", "--stop-steps", "5"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1
    assert "unrecognized arguments: --stop-steps 5" in err and "--stop-timesteps" in err


def test_missing_task_lists_tasks(capsys):
    code, err = run(capsys)
    assert code == 2 and "give --task; available:" in err


def test_bad_yaml_file(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("env: [\n")
    code, err = run(capsys, "--task", str(bad))
    assert code == 2 and "is not valid YAML" in err and "Traceback" not in err


def test_list_shows_tasks_methods_and_envs(capsys):
    assert tune_run.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "babyai-gotolocal-redball-s20" in out and "ppo" in out
    assert "BabyAI-Text-GoToLocal-RedBall-S20-v0" in out


def test_resume_refuses_settings_it_cannot_change(tmp_path, capsys):
    code, err = run(capsys, "--resume", str(tmp_path), "--stop-timesteps", "5")
    assert code == 2 and "drop --stop-timesteps" in err
    code, err = run(capsys, "--resume", str(tmp_path), "--wandb")
    assert code == 2 and "drop --wandb" in err


def test_resume_of_a_folder_that_is_not_a_run(tmp_path, capsys):
    code, err = run(capsys, "--resume", str(tmp_path))
    assert code == 2 and "is not a run folder of tune_run.py" in err


def test_missing_optional_dependency_is_one_line_before_ray_starts(tmp_path, capsys):
    task = tmp_path / "minedojo.yaml"
    task.write_text("description: x\nenv: MineDojo-Text-LogPlains-v0\n")
    code, err = run(capsys, "--task", str(task), "--smoke")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "minedojo" in err.lower() and "java" in err.lower()


def test_wandb_flag_without_wandb_says_what_to_install(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # makes `import wandb` fail
    code, err = run(capsys, "--task", "babyai-gotolocal-redball-s20", "--smoke", "--wandb")
    assert code == 2 and "pip install 'rl-bk[wandb]'" in err


def test_cluster_flags_set_the_tasks_storage_and_labeler_app():
    from rl_bk.experiments.task_config import load_task

    task = load_task("babyai-gotolocal-redball-s20")
    args = tune_run.parse_args(
        [
            "--task",
            "t",
            "--storage",
            "s3://lab/rl-bk",
            "--labeler-app",
            "shared",
            "--backend",
            "llamacpp",
        ]
    )
    out = tune_run._with_flags(task, args)
    assert out.storage == "s3://lab/rl-bk" and out.knowledge.labeler.backend == "llamacpp"
    assert (out.labeler.mode, out.labeler.app_name, out.labeler.attach) == ("serve", "shared", True)
    started = tune_run._with_flags(task, tune_run.parse_args(["--task", "t", "--labeler", "serve"]))
    assert (started.labeler.mode, started.labeler.attach) == ("serve", False)
    assert tune_run._with_flags(task, tune_run.parse_args(["--task", "t"])) == task


def test_labeler_app_with_local_labels_is_refused(capsys):
    code, err = run(
        capsys, "--task", "babyai-gotolocal-redball-s20", "--labeler", "local", "--labeler-app", "x"
    )
    assert code == 2 and "--labeler-app attaches to a Serve app: drop --labeler local" in err


def test_resume_builds_missing_knowledge_before_restoring(tmp_path, monkeypatch):
    """A run resumed on another machine (or after the knowledge cache was cleared) builds the
    artifacts its trials read, as a fresh run does, before Tune restores the trials."""
    import yaml

    from rl_bk.experiments import run as run_module
    from rl_bk.experiments.task_config import load_task

    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    (tmp_path / run_module.RESOLVED_TASK_FILE).write_text(
        yaml.safe_dump(task.model_dump(mode="json"), sort_keys=False)
    )
    order = []
    monkeypatch.setattr(run_module, "check_labelers", lambda *a: None)
    monkeypatch.setattr(run_module, "init_ray", lambda *a: None)
    monkeypatch.setattr(run_module, "_preflight", lambda *a: None)
    monkeypatch.setattr(
        run_module,
        "_prepare_knowledge",
        lambda t, variants, d: order.append(("knowledge", sorted({v.method for v in variants}))),
    )

    class Restored:
        def fit(self):
            order.append(("fit", None))

    from ray import tune

    monkeypatch.setattr(tune.Tuner, "restore", lambda *a, **k: Restored())
    monkeypatch.setattr(run_module, "_write", lambda *a: None)
    run_module.resume_experiment(tmp_path, run_module.RunOptions())
    assert order[0] == ("knowledge", sorted(set(task.methods)))
    assert order[1] == ("fit", None)


def test_trials_get_expandable_cuda_segments_unless_the_user_set_the_allocator(monkeypatch):
    """GLAM's LLM processes share one GPU: a fragmented caching allocator would reserve more
    than a process's share (bench/results/glam_gpu.md)."""
    import ray

    from rl_bk.experiments import run as run_module

    calls = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: calls.append(kwargs))
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    run_module.init_ray(None)
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128")
    run_module.init_ray("auto")
    env = [c["runtime_env"]["env_vars"]["PYTORCH_CUDA_ALLOC_CONF"] for c in calls]
    assert env == ["expandable_segments:True", "max_split_size_mb:128"]
