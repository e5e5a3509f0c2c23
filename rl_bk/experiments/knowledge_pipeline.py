"""The offline knowledge pipeline, stage by stage: collect a dataset, label it, build each
knowledge kind's artifact (a potential for BK, a reward model for Motif, PTGM's pre-trained
models, BC-PPO's pairs). The kinds are declared with their methods
(:mod:`rl_bk.methods.registry`) and looked up here by name; their folders are
:mod:`rl_bk.experiments.artifacts`'s. Every stage runs on one torch thread and records the
numerics it ran on (:mod:`rl_bk.knowledge.numerics`). Details: docs/methods.md#the-bk-pipeline.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import ray
from tqdm import tqdm

import env_registry
from rl_bk.experiments.artifacts import (
    DONE,
    dataset_dir,
    dataset_env,
    dataset_fingerprint,
    is_built,
)
from rl_bk.experiments.labelers import labeler_for
from rl_bk.experiments.ppo_config import base_ppo_config
from rl_bk.experiments.task_config import TaskConfig
from rl_bk.knowledge.collect import collect_bot_episodes, collect_episodes
from rl_bk.knowledge.dataset import DatasetError, read_episodes, write_episodes
from rl_bk.knowledge.numerics import numerics_in_effect, pinned_torch, ray_runtime_env
from rl_bk.methods.registry import knowledge_of
from rl_bk.methods.rnd import RNDPPOConfig
from rl_bk.storage import publish

logger = logging.getLogger(__name__)


def artifact_dir(
    task: TaskConfig, kind: str, backend: str | None = None, root: Path | None = None
) -> Path:
    return knowledge_of(kind).folder(task, backend, root)


def published_location(
    task: TaskConfig, kind: str, backend: str | None = None, root: Path | None = None
) -> str:
    """Where trials read the artifact of ``kind``: the local folder, or with the task's
    ``storage`` its copy under ``<storage>/knowledge/`` (a shared mount or a URI)."""
    return knowledge_of(kind).published(task, backend, root)


def _finish(folder: Path, started: float, **facts: Any) -> Path:

    facts = {
        "seconds": round(time.time() - started, 1),
        "finished_at": time.time(),
        "numerics": numerics_in_effect(),
        **facts,
    }
    (folder / DONE).write_text(json.dumps(facts, indent=2, sort_keys=True, default=str))
    return folder


def _fresh(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)  # an interrupted earlier build: start over
    folder.mkdir(parents=True)


# ------------------------------------------------------------------------------ stage 1
def collect_dataset(task: TaskConfig, *, force: bool = False, root: Path | None = None) -> Path:
    """Stage 1: trajectories from RND-PPO's stochastic policy (BK) or a uniform policy."""
    folder = dataset_dir(task, root)
    if is_built(folder) and not force:
        return folder

    with pinned_torch():
        return _collect(task, folder)


def _collect(task: TaskConfig, folder: Path) -> Path:
    _fresh(folder)
    started, d = time.time(), task.knowledge.dataset
    env = dataset_env(task)
    per_round = max(1, d.episodes // d.collections)
    if d.collector == "bot":
        meta = {"env": env, "collector": "bot", "bot_epsilon": d.bot_epsilon, "task": task.name}
        for i in range(d.collections):
            episodes = collect_bot_episodes(
                env, dict(task.env_config), per_round, d.seed * 1000 + i, d.bot_epsilon
            )
            write_episodes(folder, episodes, meta, part=f"{i:03d}")
    elif d.collector == "random":
        meta = {"env": env, "collector": "random", "task": task.name}
        for i in range(d.collections):
            episodes = collect_episodes(
                None, env, dict(task.env_config), per_round, seed=d.seed * 1000 + i
            )
            write_episodes(folder, episodes, meta, part=f"{i:03d}")
    else:
        _collect_with_rnd(task, folder, env, per_round)

    n = len(read_episodes(folder))
    logger.info("dataset for %s: %d episodes in %s", task.name, n, folder)
    return _finish(folder, started, episodes=n, env=env, collector=d.collector)


def _collect_with_rnd(task: TaskConfig, folder: Path, env: str, per_round: int) -> None:

    d = task.knowledge.dataset
    # No greedy evaluation while collecting: the dataset is the stochastic policy's episodes.
    # The learner on one thread whatever the task's trials use: a pinned build (numerics.py).
    collect_task = task.model_copy(
        update={
            "env": env,
            "evaluation": type(task.evaluation)(),
            "learner": task.learner.model_copy(update={"threads": 1}),
        }
    )
    every = max(1, d.rnd_timesteps // d.collections)
    # BK's stage 1 (train_rnd.py) collects on the env's own reward, whatever env-reward weight
    # the task's trials train on.
    on_env_reward = {"extrinsic_coeff": 1.0}
    config = base_ppo_config(collect_task, d.seed, on_env_reward, config=RNDPPOConfig()).training(
        precollect_dir=str(folder),
        precollect_every_timesteps=every,
        precollect_episodes=per_round,
    )
    if not ray.is_initialized():
        ray.init(
            address="local",
            include_dashboard=False,
            logging_level="ERROR",
            runtime_env=ray_runtime_env(),
        )
    env_registry.register_all()
    algo = config.build_algo()
    try:
        with tqdm(total=d.rnd_timesteps, desc="RND collection", unit="step") as bar:
            steps = 0
            while steps < d.rnd_timesteps:
                result = algo.train()
                now = int(
                    result.get("num_env_steps_sampled_lifetime", 0)
                    or result["env_runners"]["num_env_steps_sampled_lifetime"]
                )
                bar.update(now - steps)
                steps = now
    finally:
        algo.stop()


# ------------------------------------------------------------------------------ stage 2+3
def build_knowledge(
    task: TaskConfig,
    kind: str,
    backend: str | None = None,
    *,
    force: bool = False,
    root: Path | None = None,
) -> Path:
    """Stages 2 and 3 for one kind: label the dataset and build the potential (dataset first
    if it is missing). Returns the artifact folder."""
    folder = artifact_dir(task, kind, backend, root)
    if is_built(folder) and not force:
        return folder

    # Knowledge written by hand (BK-Code's code.path) learns nothing from the dataset: none
    # is collected.
    hand = knowledge_of(kind).hand_written
    hand_written = hand is not None and hand(task) is not None
    episodes = [] if hand_written else read_episodes(collect_dataset(task, root=root))

    with pinned_torch():
        return _build(task, kind, backend, folder, episodes)


def _build(task: TaskConfig, kind: str, backend: str | None, folder: Path, episodes: list) -> Path:
    _fresh(folder)
    started = time.time()
    knowledge = knowledge_of(kind)
    if not knowledge.labelled:  # learned from the dataset alone (PTGM's models, BC's pairs)
        facts = knowledge.build(task, None, episodes, folder)
        return _finish(folder, started, kind=kind, labels=None, is_oracle=False, **facts)
    labeler = labeler_for(task, backend).build()
    facts = {
        "labels": labeler.identity,
        "is_oracle": labeler.is_oracle,
        **knowledge.build(task, labeler, episodes, folder),
    }
    return _finish(folder, started, kind=kind, **facts)


def publish_artifact(task: TaskConfig, kind: str, backend: str | None = None) -> str:
    """Copies a built artifact to the task's storage (nothing to do without one); where."""

    location = published_location(task, kind, backend)
    return publish(artifact_dir(task, kind, backend), location)


def compare_knowledge(
    task: TaskConfig, kinds: list[str], backends: list[str], reference: str = "oracle"
) -> list[str]:
    """What each backend's built knowledge of each kind holds beside ``reference``'s, as
    markdown lines (each kind's ``Knowledge.compare``; a kind without one is said so). Builds
    nothing: without the dataset the knowledge was built from there is nothing to compare."""
    dataset = dataset_dir(task)
    if not is_built(dataset):
        raise DatasetError(
            f"no dataset at {dataset}: build the knowledge first "
            f"(rl-bk knowledge build --task {task.name} --backend <backend>)"
        )
    episodes = read_episodes(dataset)
    lines = [
        f"Task `{task.name}`, dataset `{dataset.name}` (fingerprint "
        f"`{dataset_fingerprint(dataset)}`); labellers {', '.join(backends)}; reference: "
        f"{reference}.",
        "",
    ]
    for kind in kinds:
        compare = knowledge_of(kind).compare
        if compare is None:
            lines += [f"## {kind}", "", "no comparison for this kind.", ""]
        else:
            lines += compare(task, backends, reference, episodes)
    return lines
