"""Where the BK pipeline keeps its artifacts, and when it rebuilds them (no Ray, no LLM)."""

import pickle

import numpy as np
import pytest

from rl_bk.experiments import artifacts
from rl_bk.experiments import knowledge_pipeline as pipeline
from rl_bk.experiments.task_config import load_task
from rl_bk.knowledge.dataset import DatasetError
from rl_bk.knowledge.trajectory import Chunk
from rl_bk.methods.bk.method import source_spec
from rl_bk.methods.bk.sources import LazySource, SourceSpec, UnknownSourceError


@pytest.fixture
def task():
    return load_task("babyai-gotolocal-redball-s20")


def with_knowledge(task, **updates):
    return task.model_copy(update={"knowledge": task.knowledge.model_copy(update=updates)})


def test_artifacts_are_keyed_by_backend_and_settings(task, tmp_path):
    a = pipeline.artifact_dir(task, "bk-pref", "oracle", tmp_path)
    assert a == pipeline.artifact_dir(task, "bk-pref", "oracle", tmp_path)  # reused
    assert a != pipeline.artifact_dir(task, "bk-pref", "llamacpp", tmp_path)
    more_pairs = with_knowledge(
        task, preference=task.knowledge.preference.model_copy(update={"pairs": 10})
    )
    assert a != pipeline.artifact_dir(more_pairs, "bk-pref", "oracle", tmp_path)
    # A setting of another kind does not touch this kind's artifact.
    other = with_knowledge(task, code=task.knowledge.code.model_copy(update={"rounds": 9}))
    assert a == pipeline.artifact_dir(other, "bk-pref", "oracle", tmp_path)


def test_tasks_with_the_same_pretraining_env_share_one_dataset(task, tmp_path):
    purple = load_task("babyai-gotolocal-purpleball-s20")
    assert pipeline.dataset_dir(task, tmp_path) == pipeline.dataset_dir(purple, tmp_path)
    assert "Pretraining" in pipeline.dataset_dir(task, tmp_path).name
    random = with_knowledge(
        task, dataset=task.knowledge.dataset.model_copy(update={"collector": "random"})
    )
    assert pipeline.dataset_dir(random, tmp_path) != pipeline.dataset_dir(task, tmp_path)


def test_a_missing_artifact_says_how_to_build_it(task, tmp_path, monkeypatch):
    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path))
    with pytest.raises(
        artifacts.KnowledgeMissingError,
        match="rl-bk knowledge build --task "
        "babyai-gotolocal-redball-s20 --kinds bk-code --backend llamacpp",
    ):
        source_spec(task, "bk-code", "llamacpp")


def test_only_a_finished_build_counts(task, tmp_path, monkeypatch):
    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path))
    folder = pipeline.artifact_dir(task, "bk-goal")
    folder.mkdir(parents=True)
    (folder / "goals.json").write_text("{}")  # an interrupted build left a file
    assert not pipeline.is_built(folder)
    (folder / pipeline.DONE).write_text("{}")
    spec = source_spec(task, "bk-goal")
    assert spec.kind == "bk-goal" and spec.path == str(folder)
    assert spec.options["top_k"] == 3 and spec.options["horizon"] == 4


def test_unknown_source_kind_is_refused_with_the_valid_ones():
    with pytest.raises(UnknownSourceError, match="valid: bk-code, bk-goal, bk-pref"):
        SourceSpec("bk-magic", "/nowhere")


class CountingSource:
    name = "counting"

    def __init__(self):
        self.calls = 0

    def __call__(self, chunks):
        self.calls += 1
        return [np.zeros(len(c) + 1) for c in chunks]

    def metrics(self):
        return {"calls": self.calls}


def test_lazy_source_builds_once_on_first_batch_and_pickles_without_it(monkeypatch):
    built = []

    def build(self):
        built.append(self)
        return CountingSource()

    monkeypatch.setattr(SourceSpec, "build", build)
    lazy = LazySource(SourceSpec("bk-code", "/x"))
    assert lazy.metrics() == {} and not built  # nothing built before it is needed
    chunk = Chunk(np.zeros((3, 2)), ["a", "b", "c"], [0, 1])
    lazy([chunk]), lazy([chunk])
    assert len(built) == 1 and lazy.metrics() == {"calls": 2}
    copy = pickle.loads(pickle.dumps(lazy))  # what a learner receives: the spec only
    assert copy._source is None and copy.spec == lazy.spec


def test_bk_trial_parameters_pick_the_artifact_the_rest_reach_training(task, tmp_path, monkeypatch):
    from rl_bk.methods.registry import get_method

    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path))
    folder = pipeline.artifact_dir(task, "bk-code", "llamacpp")
    folder.mkdir(parents=True)
    (folder / pipeline.DONE).write_text("{}")
    params = {"backend": "llamacpp", "candidate": 2, "shaping_coeff": 0.5}
    config = get_method("bk-code").build(task, 0, params)
    # Eureka-style: a sweep over `candidate` compares the writer's candidate codes as trials.
    assert config.potential == SourceSpec("bk-code", str(folder), {"candidate": 2})
    assert config.shaping.shaping_coeff == 0.5
    # The rest are BK's defaults, from the task's knowledge section; BK's 10 x env reward
    # from its ppo section, as every method of the task has it.
    s = config.shaping
    assert (s.potential_normalization, s.shaping_convention) == ("discounted-sum-std", "bk")
    assert config.extrinsic_coeff == 10.0 == task.ppo.extrinsic_coeff


def test_task_agnostic_knowledge_is_one_artifact_for_every_bk_task(task, tmp_path):
    # BK's setting: knowledge built once on the pre-training env, without the mission, and
    # reused on every downstream task.
    assert task.knowledge.include_mission is False
    artifacts = {
        pipeline.artifact_dir(load_task(name), "bk-pref", "oracle", tmp_path)
        for name in (
            "babyai-gotolocal-redball-s20",
            "babyai-gotolocal-purpleball-s20",
            "babyai-gotolocal-redkey-s20",
            "babyai-gotolocal-purplekey-s20",
        )
    }
    assert len(artifacts) == 1
    assert "Pretraining" in next(iter(artifacts)).parent.parent.name


def test_goal_aware_knowledge_is_one_artifact_per_mission(task, tmp_path, monkeypatch):
    from rl_bk.methods.registry import get_method, knowledge_task

    aware = knowledge_task(task, {"include_mission": True})
    purple = knowledge_task(load_task("babyai-gotolocal-purpleball-s20"), {"include_mission": True})
    assert artifacts.task_mission(aware) == "go to the red ball"
    agnostic = pipeline.artifact_dir(task, "bk-code", "oracle", tmp_path)
    assert pipeline.artifact_dir(aware, "bk-code", "oracle", tmp_path) != agnostic
    assert pipeline.artifact_dir(aware, "bk-code", "oracle", tmp_path) != pipeline.artifact_dir(
        purple, "bk-code", "oracle", tmp_path
    )
    # A trial's include_mission picks the goal-aware artifact.
    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path))
    folder = pipeline.artifact_dir(aware, "bk-code", "oracle")
    folder.mkdir(parents=True)
    (folder / pipeline.DONE).write_text("{}")
    config = get_method("bk-code").build(task, 0, {"backend": "oracle", "include_mission": True})
    assert config.potential.path == str(folder)


def test_ptgm_models_are_one_artifact_whatever_the_backend_or_rl_settings(tmp_path):
    from rl_bk.methods.registry import get_method

    task = load_task("babyai-gotolocal-redball-s20-ptgm")
    a = pipeline.artifact_dir(task, "ptgm", "oracle", tmp_path)
    assert a == pipeline.artifact_dir(task, "ptgm", "llamacpp", tmp_path)  # no labeler
    assert a.name.startswith("unlabelled-")
    # RL-time settings do not call for new pre-training; pre-training settings do.
    rl = task.model_copy(
        update={"ptgm": task.ptgm.model_copy(update={"prior_kl_coeff": 0.0, "low_level_steps": 9})}
    )
    assert a == pipeline.artifact_dir(rl, "ptgm", None, tmp_path)
    more = task.model_copy(update={"ptgm": task.ptgm.model_copy(update={"n_goals": 32})})
    assert a != pipeline.artifact_dir(more, "ptgm", None, tmp_path)
    assert get_method("ptgm").knowledge is get_method("ptgm-no-kl").knowledge


def _episode(actions, episode_id):
    n = len(actions)
    return Chunk(
        np.arange(n + 1, dtype=np.float32)[:, None] * [1, 10],
        [f"c{i}" for i in range(n + 1)],
        actions,
        episode_id=episode_id,
    )


def test_dataset_fingerprint_follows_the_trajectories_not_their_ids_or_files(tmp_path):
    from rl_bk.knowledge.dataset import write_episodes

    write_episodes(tmp_path / "a", [_episode([0, 1], "x"), _episode([2], "y")])
    write_episodes(tmp_path / "b", [_episode([0, 1], "p"), _episode([2], "q")], part="000")
    write_episodes(tmp_path / "c", [_episode([0, 1], "x"), _episode([3], "y")])
    fp = artifacts.dataset_fingerprint
    assert fp(tmp_path / "a") == fp(tmp_path / "b")  # other ids and part names: same data
    assert fp(tmp_path / "a") != fp(tmp_path / "c")  # one action differs


def test_artifact_fingerprint_ignores_build_timings_and_done_but_not_content(tmp_path):
    def build(folder, weights, seconds):
        folder.mkdir()
        (folder / "model.pt").write_bytes(weights)
        (folder / "report.json").write_text(f'{{"pairs": 10, "seconds_training": {seconds}}}')
        (folder / artifacts.DONE).write_text(f'{{"finished_at": {seconds}}}')
        return artifacts.artifact_fingerprint(folder)

    first = build(tmp_path / "a", b"\x01\x02", 4.0)
    assert first == build(tmp_path / "b", b"\x01\x02", 9.5)  # rebuilt, same weights
    assert first != build(tmp_path / "c", b"\x01\x03", 4.0)  # other weights


def test_artifact_fingerprint_of_bk_code_is_its_code_and_settings_not_its_build_log(tmp_path):
    # BK-Code's writer stamps meta.json with the time and logs dataset episodes by random id.
    def build(folder, code, created, episode):
        folder.mkdir()
        (folder / "code-final.py").write_text(code)
        (folder / "meta.json").write_text(f'{{"horizon": 5, "created_at": "{created}"}}')
        (folder / "history.json").write_text(f'[{{"round": 1, "segments": ["{episode}"]}}]')
        return artifacts.artifact_fingerprint(folder)

    first = build(tmp_path / "a", "def f(w): return 0.0", "2026-11-27T04:20", "9f1c")
    assert first == build(tmp_path / "b", "def f(w): return 0.0", "2026-11-28T10:04", "e4db")
    assert first != build(tmp_path / "c", "def f(w): return 1.0", "2026-11-27T04:20", "9f1c")


def test_knowledge_show_prints_each_built_folders_fingerprint(task, tmp_path, capsys, monkeypatch):
    from rl_bk.cli import main
    from rl_bk.knowledge.dataset import write_episodes

    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path))  # undone after; main sets it
    data = pipeline.dataset_dir(task, tmp_path)
    write_episodes(data, [_episode([0, 1], "x")])
    # built elsewhere: a probe no machine's numerics give
    (data / artifacts.DONE).write_text('{"numerics": {"probe": "0000000000000000"}}')
    args = [
        "knowledge",
        "show",
        "--task",
        task.name,
        "--kinds",
        "bk-pref",
        "--knowledge-dir",
        str(tmp_path),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"fingerprint {artifacts.dataset_fingerprint(data)}" in out
    assert "other numerics (probe 0000000000000000): a build here differs" in out
    assert out.rstrip().endswith("missing")  # bk-pref is not built


def test_compare_without_a_dataset_says_to_build_and_collects_nothing(tmp_path, monkeypatch):
    """Comparing knowledge never starts a collection (an RND run): with no dataset there is
    no built knowledge to compare, and the error says what to run."""
    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path))
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    with pytest.raises(DatasetError, match="rl-bk knowledge build --task babyai-gotolocal"):
        pipeline.compare_knowledge(task, ["bk-pref"], ["llamacpp", "oracle"])
    assert not any(tmp_path.iterdir())
