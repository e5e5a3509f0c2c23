"""Where a run's knowledge lives reaches its trials as the task's ``knowledge.dir``, resolved
once by the driver: the trial processes never depend on the driver's environment."""

from pathlib import Path

from rl_bk.experiments.artifacts import knowledge_root
from rl_bk.experiments.run import with_knowledge_dir
from rl_bk.experiments.task_config import load_task


def test_the_root_is_resolved_once_into_the_task(tmp_path, monkeypatch):
    task = load_task("babyai-gotolocal-redball-s20")
    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path / "from-env"))
    resolved = with_knowledge_dir(task)
    assert resolved.knowledge.dir == str(tmp_path / "from-env")
    # a trial reads the task, not its environment
    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path / "elsewhere"))
    assert knowledge_root(resolved) == tmp_path / "from-env"
    assert knowledge_root(task) == tmp_path / "elsewhere"  # unresolved: the environment's


def test_the_command_line_beats_the_environment_and_a_shared_mount_beats_both(tmp_path):
    task = load_task("babyai-gotolocal-redball-s20")
    given = with_knowledge_dir(task, tmp_path / "given")
    assert Path(given.knowledge.dir) == (tmp_path / "given").resolve()
    mounted = task.model_copy(update={"storage": str(tmp_path / "shared")})
    assert with_knowledge_dir(mounted, tmp_path / "given").knowledge.dir == str(
        tmp_path / "shared" / "knowledge"
    )
    # artifacts are found under the resolved root
    from rl_bk.experiments.artifacts import dataset_dir

    assert dataset_dir(given).is_relative_to((tmp_path / "given").resolve())
