"""The whole BK pipeline, offline: RND collects a dataset, the labeler turns it into code,
a preference potential and a goal list, and each bk-* method trains PPO shaped by its own."""

import importlib.util
import json

import numpy as np
import pytest

from rl_bk.experiments import knowledge_pipeline as pipeline
from rl_bk.experiments.task_config import load_task
from rl_bk.knowledge.dataset import read_episodes
from rl_bk.methods.bk.potential_shaping import SHAPING_REWARD_MEAN
from rl_bk.methods.oni.settings import MotifSettings
from rl_bk.methods.registry import BK_KINDS, get_method

pytestmark = pytest.mark.ray


def tiny_task(backend, **knowledge):
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    # Plumbing: the smallest packaged model where an LLM labels.
    labeler = task.knowledge.labeler.model_copy(update={"backend": backend, "packaged": "smollm2"})
    k = task.knowledge.model_copy(update={"labeler": labeler, **knowledge})
    runners = task.env_runners.model_copy(update={"num_env_runners": 0})
    return task.model_copy(update={"knowledge": k, "env_runners": runners})


def run_pipeline(task, tmp_path, monkeypatch):
    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path / "knowledge"))
    monkeypatch.setenv("RLBK_LABEL_STORE", str(tmp_path / "labels.sqlite3"))
    dataset = pipeline.collect_dataset(task)
    episodes = read_episodes(dataset)
    assert len(episodes) >= task.knowledge.dataset.episodes
    assert all(ep.mission and ep.captions[0] for ep in episodes)  # captions and mission kept
    results = {}
    for kind in BK_KINDS:
        folder = pipeline.build_knowledge(task, kind)
        done = json.loads((folder / pipeline.DONE).read_text())
        built = get_method(kind).build(task, 0, {"backend": task.knowledge.labeler.backend})
        algo = built.build_algo()
        try:
            results[kind] = (done, algo.train()["learners"])
        finally:
            algo.stop()
    return results


def test_bk_pipeline_end_to_end_with_the_oracle(ray_session, tmp_path, monkeypatch):
    results = run_pipeline(tiny_task("oracle"), tmp_path, monkeypatch)
    for kind, (done, learners) in results.items():
        assert done["is_oracle"] and done["labels"] == "oracle/rules-v2", kind
        assert np.isfinite(learners[SHAPING_REWARD_MEAN]), kind
    # The oracle's code runs: no batch fell back to zero potentials.
    assert results["bk-code"][1]["potential/code_errors"] == 0


def test_motif_is_built_from_the_dataset_and_rewards_a_trial(ray_session, tmp_path, monkeypatch):
    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path / "knowledge"))
    monkeypatch.setenv("RLBK_LABEL_STORE", str(tmp_path / "labels.sqlite3"))
    task = tiny_task("oracle", motif=MotifSettings(pairs=64, epochs=2))
    folder = pipeline.build_knowledge(task, "motif")
    report = json.loads((folder / "motif.json").read_text())
    assert report["is_oracle"] and report["pairs"] == 64 and report["std"] > 0
    algo = get_method("motif").build(task, 0, {"backend": "oracle"}).build_algo()
    try:
        learners = algo.train()["learners"]
    finally:
        algo.stop()
    assert np.isfinite(learners["intrinsic_reward_mean"])


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason="the embedded LLM is not installed (scripts/setup.sh --with-llm)",
)
def test_bk_pipeline_end_to_end_with_the_embedded_model(ray_session, tmp_path, monkeypatch):
    task = tiny_task("llamacpp")
    k = task.knowledge
    task = task.model_copy(
        update={
            "knowledge": k.model_copy(
                update={
                    "preference": k.preference.model_copy(update={"pairs": 8}),
                    "goals": k.goals.model_copy(update={"iterations": 3}),
                }
            )
        }
    )
    results = run_pipeline(task, tmp_path, monkeypatch)
    for kind, (done, learners) in results.items():
        assert not done["is_oracle"] and done["labels"].startswith("llamacpp/"), kind
        assert np.isfinite(learners[SHAPING_REWARD_MEAN]), kind


def _cli_build(root, **machine):
    """``rl-bk knowledge build`` at smoke size in a process of its own (its own Ray, its own
    pinned numerics), from an empty cache and an empty label store under ``root``, on a
    machine as ``machine`` describes it (environment variables)."""
    import os
    import subprocess
    import sys

    from rl_bk.knowledge.numerics import PINNED

    env = {k: v for k, v in os.environ.items() if k not in PINNED}
    env.update(
        RLBK_KNOWLEDGE_DIR=str(root / "knowledge"),
        RLBK_LABEL_STORE=str(root / "labels.sqlite3"),
        **machine,
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "rl_bk.cli",
            "knowledge",
            "build",
            "--task",
            "babyai-gotolocal-redball-s20",
            "--smoke",
            "--backend",
            "oracle",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]


@pytest.mark.slow
def test_two_builds_from_clean_caches_have_the_same_fingerprints(tmp_path):
    # The second build on a machine as another one would be: MKL limited to AVX2 (a CPU
    # without AVX-512) and two threads where the first had one. The builds pin their numerics
    # (rl_bk/knowledge/numerics.py); without the pins these two machines trained other weights.
    from rl_bk.experiments.artifacts import artifact_fingerprint, dataset_fingerprint

    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    prints = []
    for n, machine in enumerate(
        [{"OMP_NUM_THREADS": "1"}, {"OMP_NUM_THREADS": "2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}]
    ):
        root = tmp_path / f"machine{n}"
        _cli_build(root, **machine)
        knowledge = root / "knowledge"
        built = {"dataset": dataset_fingerprint(pipeline.dataset_dir(task, knowledge))}
        for kind in BK_KINDS:
            folder = pipeline.artifact_dir(task, kind, "oracle", knowledge)
            assert json.loads((folder / pipeline.DONE).read_text())["numerics"]["pinned"], kind
            built[kind] = artifact_fingerprint(folder)
        prints.append(built)
    assert prints[0] == prints[1]
