"""The offline knowledge pipeline, stage by stage: collect a dataset, label it, build a
potential (BK) or a reward model (Motif).

    collect  -> <root>/datasets/<env>-<hash>/              (Parquet, rl_bk.knowledge.dataset)
    bk-code  -> <root>/<data env>/bk-code/<backend>-<hash>/  (code-final.py, history.json)
    bk-pref  -> <root>/<data env>/bk-pref/<backend>-<hash>/  (model.pt, report.json)
    bk-goal  -> <root>/<data env>/bk-goal/<backend>-<hash>/  (goals.json, sentence_vectors.npz)
    motif    -> <root>/<data env>/motif/<backend>-<hash>/    (motif_model.pt, motif.json)
    ptgm     -> <root>/<data env>/ptgm/unlabelled-<hash>/
    bc       -> <root>/<data env>/bc/unlabelled-<hash>/    (bc.npz: the pairs BC-PPO clones)

Each folder's name carries a hash of every setting that shaped it (the kind's section of the
task's ``knowledge``, the labeler, the dataset's own hash, and the mission the labeler was
told, if any), and nothing else: the task's name is not part of it. So knowledge built on a
pre-training env without the mission (BK's setting) is one artifact that every task sharing
that dataset and those settings reuses, as BK reuses its knowledge on all its downstream
tasks; a goal-aware build gets one artifact per mission. A changed setting builds a new
artifact and an unchanged one is reused. A folder counts as built once ``DONE.json`` is in it: an
interrupted build is redone, never half-used. The root is ``$RLBK_KNOWLEDGE_DIR`` or
``~/.cache/rl-bk/knowledge`` (on a cluster, point it at storage every node sees).

Labels go through the label store (:mod:`rl_bk.knowledge.labeler`), so rebuilding an
artifact with the same backend re-reads its labels instead of asking again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rl_bk.experiments.task_config import TaskConfig

logger = logging.getLogger(__name__)

BK_KINDS = ("bk-code", "bk-pref", "bk-goal")
#: Knowledge learned from the dataset alone, with no labeler: PTGM's pre-trained models, and
#: the state-action pairs BC-PPO clones (PTGM's data, for the flat baseline).
UNLABELLED_KINDS = ("ptgm", "bc")
KINDS = (*BK_KINDS, "motif", *UNLABELLED_KINDS)
DONE = "DONE.json"


class KnowledgeMissingError(RuntimeError):
    """A bk-* trial found no built artifact for its task and backend."""


def knowledge_root() -> Path:
    return Path(os.environ.get("RLBK_KNOWLEDGE_DIR", "~/.cache/rl-bk/knowledge")).expanduser()


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]


def family_of(env: str) -> str:
    import env_registry

    return env_registry.get_spec(env).family


def dataset_env(task: TaskConfig) -> str:
    return task.knowledge.dataset.env or task.env


def dataset_dir(task: TaskConfig, root: Path | None = None) -> Path:
    # Keyed by its settings alone: tasks sharing a pre-training env share one dataset (BK
    # collects once on Pretraining-S20 for all its GoToLocal tasks).
    d = task.knowledge.dataset
    settings = {
        "env": dataset_env(task),
        "env_config": dict(task.env_config) if d.env is None else {},
        "ppo": task.ppo.model_dump(mode="json"),
        **d.model_dump(mode="json"),
    }
    return (root or knowledge_root()) / "datasets" / f"{dataset_env(task)}-{_digest(settings)}"


def artifact_dir(task: TaskConfig, kind: str, backend: str | None = None,
                 root: Path | None = None) -> Path:  # fmt: skip
    if kind not in KINDS:
        raise ValueError(f"unknown knowledge kind {kind!r}; valid: {', '.join(KINDS)}")
    k = task.knowledge
    home = (root or knowledge_root()) / dataset_env(task) / kind
    if kind in UNLABELLED_KINDS:  # no labeler: one artifact whatever the backend
        section = task.ptgm.pretraining() if kind == "ptgm" else {}
        settings = {"section": section, "dataset": dataset_dir(task, root).name}
        return home / f"unlabelled-{_digest(settings)}"
    backend = backend or k.backend
    section = {"bk-code": k.code, "bk-pref": k.preference, "bk-goal": k.goals,
               "motif": k.motif}[kind]  # fmt: skip
    settings = {
        "backend": backend, "packaged": k.packaged, "model_path": k.model_path,
        "base_url": k.base_url, "model": k.model, "mission": task_mission(task),
        "family": family_of(task.env),
        # RL-time choices (how Phi is computed, not what it is) do not make a new artifact
        "section": section.model_dump(mode="json", exclude={"served"}),
        "dataset": dataset_dir(task, root).name,
    }  # fmt: skip
    if kind == "motif":  # the criterion the pairs are labelled by; v2 saves the quantiles
        settings.update(goal=task.oni.goal, format=2)
    if kind == "bk-code" and k.code.path:  # a hand-written potential: its text is the setting
        settings["code"] = hashlib.sha256(hand_written_code(task).encode()).hexdigest()
        return home / f"hand-{_digest(settings)}"
    return home / f"{backend}-{_digest(settings)}"


def hand_written_code(task: TaskConfig) -> str:
    """The text of the task's hand-written BK-Code potential (``knowledge.code.path``)."""
    path = Path(task.knowledge.code.path or "")
    if not path.is_absolute():
        path = Path(__file__).resolve().parents[2] / path
    if not path.is_file():
        raise FileNotFoundError(f"knowledge.code.path: no potential function at {path}")
    return path.read_text()


def is_built(folder: Path) -> bool:
    return (folder / DONE).is_file()


def _finish(folder: Path, started: float, **facts: Any) -> Path:
    facts = {"seconds": round(time.time() - started, 1), "finished_at": time.time(), **facts}
    (folder / DONE).write_text(json.dumps(facts, indent=2, sort_keys=True, default=str))
    return folder


def _fresh(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)  # an interrupted earlier build: start over
    folder.mkdir(parents=True)


def task_mission(task: TaskConfig) -> str | None:
    """The task env's mission text (after one reset), if it has one and the task says to use it."""
    if not task.knowledge.include_mission:
        return None
    import env_registry

    env = env_registry.make_env(task.env, task.env_config)
    try:
        _, info = env.reset(seed=0)
    finally:
        env.close()
    mission = info.get("mission")
    return str(mission) if mission else None


# ------------------------------------------------------------------------------ stage 1
def collect_dataset(task: TaskConfig, *, force: bool = False, root: Path | None = None) -> Path:
    """Stage 1: trajectories from RND-PPO's stochastic policy (BK) or a uniform policy."""
    folder = dataset_dir(task, root)
    if is_built(folder) and not force:
        return folder
    _fresh(folder)
    started, d = time.time(), task.knowledge.dataset
    env = dataset_env(task)
    per_round = max(1, d.episodes // d.collections)
    if d.collector == "bot":
        from rl_bk.knowledge.collect import collect_bot_episodes
        from rl_bk.knowledge.dataset import write_episodes

        meta = {"env": env, "collector": "bot", "bot_epsilon": d.bot_epsilon, "task": task.name}
        for i in range(d.collections):
            episodes = collect_bot_episodes(env, dict(task.env_config), per_round,
                                            d.seed * 1000 + i, d.bot_epsilon)  # fmt: skip
            write_episodes(folder, episodes, meta, part=f"{i:03d}")
    elif d.collector == "random":
        from rl_bk.knowledge.collect import collect_episodes
        from rl_bk.knowledge.dataset import write_episodes

        meta = {"env": env, "collector": "random", "task": task.name}
        for i in range(d.collections):
            episodes = collect_episodes(None, env, dict(task.env_config), per_round,
                                        seed=d.seed * 1000 + i)  # fmt: skip
            write_episodes(folder, episodes, meta, part=f"{i:03d}")
    else:
        _collect_with_rnd(task, folder, env, per_round)
    from rl_bk.knowledge.dataset import read_episodes

    n = len(read_episodes(folder))
    logger.info("dataset for %s: %d episodes in %s", task.name, n, folder)
    return _finish(folder, started, episodes=n, env=env, collector=d.collector)


def _collect_with_rnd(task: TaskConfig, folder: Path, env: str, per_round: int) -> None:
    import ray

    import env_registry
    from rl_bk.algorithms.rnd_ppo import RNDPPOConfig
    from rl_bk.experiments.ppo_config import base_ppo_config

    d = task.knowledge.dataset
    # No greedy evaluation while collecting: the dataset is the stochastic policy's episodes.
    collect_task = task.model_copy(update={"env": env, "evaluation": type(task.evaluation)()})
    every = max(1, d.rnd_timesteps // d.collections)
    config = base_ppo_config(collect_task, d.seed, {}, config=RNDPPOConfig()).training(
        precollect_dir=str(folder), precollect_every_timesteps=every,
        precollect_episodes=per_round,
    )  # fmt: skip
    if not ray.is_initialized():
        ray.init(address="local", include_dashboard=False, logging_level="ERROR")
    env_registry.register_all()
    algo = config.build_algo()
    try:
        from tqdm import tqdm

        with tqdm(total=d.rnd_timesteps, desc="RND collection", unit="step") as bar:
            steps = 0
            while steps < d.rnd_timesteps:
                result = algo.train()
                now = int(result.get("num_env_steps_sampled_lifetime", 0) or
                          result["env_runners"]["num_env_steps_sampled_lifetime"])  # fmt: skip
                bar.update(now - steps)
                steps = now
    finally:
        algo.stop()


# ------------------------------------------------------------------------------ stage 2+3
def make_labeler(task: TaskConfig, backend: str | None = None):
    """The labeler of the offline stages: in this process, or the sweep's Serve app."""
    from rl_bk.experiments.labeler_app import app_name, uses_labeler_app
    from rl_bk.knowledge.labeler import HandleLabeler, LocalLabeler

    if uses_labeler_app(task):
        return HandleLabeler(app_name(task, backend))
    k = task.knowledge
    return LocalLabeler(backend=backend or k.backend, store_path=os.environ.get("RLBK_LABEL_STORE"),
                        packaged=k.packaged, model_path=k.model_path, base_url=k.base_url,
                        model=k.model)  # fmt: skip


def _build_code(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    from rl_bk.algorithms.bk_ppo.code.writer import write_potential_code

    c, family, mission = task.knowledge.code, family_of(task.env), task_mission(task)
    if c.path:
        return _copy_hand_written_code(task, folder, family)
    result = write_potential_code(
        labeler, episodes, folder, family=family, mission=mission, rounds=c.rounds,
        segments_per_round=c.segments_per_round, horizon=c.horizon, candidates=c.candidates,
        seed=task.knowledge.dataset.seed,
    )  # fmt: skip
    return {"result": repr(result)}


def _copy_hand_written_code(task: TaskConfig, folder: Path, family: str) -> dict:
    """A hand-written potential as a BK-Code artifact: no labeler, said so in its facts."""
    from rl_bk.algorithms.bk_ppo.code.writer import FUNCTION_NAME

    code = hand_written_code(task)
    if f"def {FUNCTION_NAME}(" not in code:
        raise ValueError(f"knowledge.code.path {task.knowledge.code.path}: the file must define "
                         f"{FUNCTION_NAME}(window)")  # fmt: skip
    (folder / "code-final.py").write_text(code)
    meta = {"family": family, "horizon": task.knowledge.code.horizon,
            "hand_written": task.knowledge.code.path}  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
    return {"labels": f"hand-written:{task.knowledge.code.path}", "is_oracle": False}


def _build_pref(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    from rl_bk.algorithms.bk_ppo.preference.training import train_preference_potential

    p = task.knowledge.preference
    report = train_preference_potential(
        labeler, episodes, folder, family=family_of(task.env), mission=task_mission(task),
        pairs=p.pairs, horizon=p.horizon, epochs=p.epochs, seed=task.knowledge.dataset.seed,
    )  # fmt: skip
    return {"report": repr(report)}


def _build_goals(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    from rl_bk.algorithms.bk_ppo.goals.builder import build_goal_list
    from rl_bk.algorithms.bk_ppo.goals.potential import save_sentence_vectors

    g = task.knowledge.goals
    goals = build_goal_list(
        labeler, episodes, folder, family=family_of(task.env), mission=task_mission(task),
        iterations=g.iterations, seed=task.knowledge.dataset.seed,
    )  # fmt: skip
    # The dataset's caption sentences, embedded once here rather than in every trial.
    save_sentence_vectors(folder, [c for ep in episodes for c in ep.captions],
                          family_of(task.env))  # fmt: skip
    return {"goals": repr(goals)[:2000]}


def _build_motif(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    from rl_bk.algorithms.oni_ppo.motif import train_motif

    m = task.knowledge.motif
    report = train_motif(
        labeler, episodes, folder, family=family_of(task.env), goal=task.oni.goal,
        labels=labeler.identity, is_oracle=labeler.is_oracle, pairs=m.pairs, epochs=m.epochs,
        seed=task.knowledge.dataset.seed,
    )  # fmt: skip
    return {"report": repr(report)}


def _build_ptgm(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    from rl_bk.algorithms.ptgm_ppo.pretraining import build_ptgm

    p = task.ptgm
    report = build_ptgm(
        episodes, folder, n_goals=p.n_goals, embedding=p.embedding,
        low_level_gap=tuple(p.low_level_gap), prior_gap=tuple(p.prior_gap), epochs=p.epochs,
        prior_sees_code=p.prior_sees_code, seed=task.knowledge.dataset.seed,
    )  # fmt: skip
    return {"report": repr(report)[:4000]}


def _build_bc(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    from rl_bk.algorithms.bc_ppo.cloning import write_bc_data

    return write_bc_data(episodes, folder)


BUILDERS: dict[str, Callable[..., dict]] = {
    "bk-code": _build_code, "bk-pref": _build_pref, "bk-goal": _build_goals,
    "motif": _build_motif, "ptgm": _build_ptgm, "bc": _build_bc,
}  # fmt: skip


def build_knowledge(task: TaskConfig, kind: str, backend: str | None = None, *,
                    force: bool = False, root: Path | None = None) -> Path:  # fmt: skip
    """Stages 2 and 3 for one kind: label the dataset and build the potential (dataset first
    if it is missing). Returns the artifact folder."""
    folder = artifact_dir(task, kind, backend, root)
    if is_built(folder) and not force:
        return folder
    from rl_bk.knowledge.dataset import read_episodes

    episodes = read_episodes(collect_dataset(task, root=root))
    _fresh(folder)
    started = time.time()
    if kind in UNLABELLED_KINDS:
        facts = BUILDERS[kind](task, None, episodes, folder)
        return _finish(folder, started, kind=kind, labels=None, is_oracle=False, **facts)
    labeler = make_labeler(task, backend)
    facts = {"labels": labeler.identity, "is_oracle": labeler.is_oracle,
             **BUILDERS[kind](task, labeler, episodes, folder)}  # fmt: skip
    return _finish(folder, started, kind=kind, **facts)


def published_location(task: TaskConfig, kind: str, backend: str | None = None,
                       root: Path | None = None) -> str:  # fmt: skip
    """Where trials read the artifact of ``kind``: the local folder, or with the task's
    ``storage`` its copy under ``<storage>/knowledge/`` (a shared mount or a URI)."""
    folder = artifact_dir(task, kind, backend, root)
    if task.storage is None:
        return str(folder)
    from rl_bk.storage import join

    return join(task.storage, "knowledge", folder.relative_to(root or knowledge_root()).as_posix())


def publish_artifact(task: TaskConfig, kind: str, backend: str | None = None) -> str:
    """Copies a built artifact to the task's storage (nothing to do without one); where."""
    from rl_bk.storage import publish

    location = published_location(task, kind, backend)
    return publish(artifact_dir(task, kind, backend), location)


def built_artifact(task: TaskConfig, kind: str, backend: str | None = None,
                   root: Path | None = None) -> str:  # fmt: skip
    """Where the built artifact of ``kind`` is (a folder, or a URI under the task's storage:
    loaders fetch it with :func:`rl_bk.storage.fetch`), or a clear error on how to build it."""
    from rl_bk.storage import exists

    location = published_location(task, kind, backend, root)
    if not exists(location, DONE):
        b = backend or task.knowledge.backend
        raise KnowledgeMissingError(
            f"{kind} has no knowledge built for task {task.name} with backend {b} (looked in "
            f"{location}); build it with `rl-bk knowledge build --task {task.name} --kinds "
            f"{kind} --backend {b}`, or let tune_run.py build it"
            + (" (with --storage, tune_run.py publishes it there)" if task.storage else "")
        )
    return location


def source_spec(task: TaskConfig, kind: str, backend: str | None = None,
                options: dict[str, Any] | None = None, root: Path | None = None):  # fmt: skip
    """The built artifact of ``kind`` as a potential source spec, or a clear error."""
    from rl_bk.algorithms.bk_ppo.sources import SourceSpec

    location = built_artifact(task, kind, backend, root)
    if kind == "bk-goal":
        g = task.knowledge.goals
        options = {"top_k": g.top_k, "horizon": g.horizon,
                   **({"threshold": g.threshold} if g.threshold is not None else {}),
                   **(options or {})}  # fmt: skip
    return SourceSpec(kind, location, dict(options or {}))


SERVED_POTENTIAL_VERSION = "1"


def served_potential_name(location: str) -> str:
    """The name a bk-pref artifact is registered under in the reward-model registry."""
    return f"bk-pref-{location.rstrip('/').rsplit('/', 1)[-1]}"


def register_served_potential(task: TaskConfig, backend: str | None, root: Path) -> str:
    """Exports a built bk-pref artifact's model to the reward-model registry at ``root`` (once;
    the name is the artifact's), so the reward-model app can serve its Phi. Returns the name."""
    from rl_bk.algorithms.bk_ppo.preference.model import script
    from rl_bk.algorithms.bk_ppo.preference.training import load_model
    from rl_bk.reward_models.registry import save_reward_model

    folder = artifact_dir(task, "bk-pref", backend)
    name = served_potential_name(str(folder))
    if not (root / name / SERVED_POTENTIAL_VERSION / "meta.json").is_file():
        model, config = load_model(folder)
        save_reward_model(script(model, config.obs_dim), name, SERVED_POTENTIAL_VERSION,
                          kind="potential", input="vector", input_dim=config.input_dim,
                          notes=f"bk-pref from {folder}", root=root)  # fmt: skip
    return name
