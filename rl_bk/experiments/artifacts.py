"""Knowledge artifacts: what a knowledge kind is (:class:`Knowledge`), and where its folders
are, built and published. A folder's name carries a hash of every setting that shaped it and
not the task's name, so knowledge built without the mission (BK's setting) is one artifact
every task sharing its dataset and settings reuses; a folder counts as built once
``DONE.json`` is in it. Layout: docs/methods.md#knowledge-artifacts-on-disk.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_bk.experiments.task_config import TaskConfig
from rl_bk.storage import exists, join

DONE = "DONE.json"

#: ``(task, labeler, episodes, folder) -> facts``: builds a kind's artifact into ``folder``
#: (the labeler is None for a kind built from the dataset alone); the facts go to DONE.json.
Builder = Callable[..., dict]


class KnowledgeMissingError(RuntimeError):
    """A trial found no built artifact for its task and backend."""


def knowledge_root(task: TaskConfig | None = None) -> Path:
    """The task's ``knowledge.dir`` if set, else ``$RLBK_KNOWLEDGE_DIR``, else the default."""
    if task is not None and task.knowledge.dir:
        return Path(task.knowledge.dir).expanduser()
    return Path(os.environ.get("RLBK_KNOWLEDGE_DIR", "~/.cache/rl-bk/knowledge")).expanduser()


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]


def family_of(env: str) -> str:
    # kept light: rl-bk --help imports this module; env_registry loads gymnasium
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
        # The collector's PPO; it always collects on the env's own reward (knowledge_pipeline).
        "ppo": task.ppo.model_dump(mode="json", exclude={"extrinsic_coeff"}),
        **d.model_dump(mode="json"),
    }
    return (root or knowledge_root(task)) / "datasets" / f"{dataset_env(task)}-{_digest(settings)}"


def is_built(folder: Path) -> bool:
    return (folder / DONE).is_file()


#: What a build records about itself rather than what a run loads: BK-Code's round-by-round
#: log names the dataset episodes it showed the labeler by their random ids, so it differs on
#: every build even when the code it chose does not.
BUILD_LOGS = frozenset({DONE, "history.json"})
#: JSON keys that are the moment of a build, not its content.
BUILD_TIME_KEYS = frozenset({"created_at", "finished_at"})


def artifact_fingerprint(folder: Path) -> str:
    """A digest of what a build made, so that two builds (on two machines, or after a cache
    was lost) can be told apart or shown equal: every file's name and bytes in name order,
    leaving out the build's logs (:data:`BUILD_LOGS`), and from a JSON file its timings (keys
    ``seconds*``) and timestamps (:data:`BUILD_TIME_KEYS`), which differ on every build. For a
    dataset, use :func:`dataset_fingerprint`."""
    digest = hashlib.sha256()
    for path in sorted(
        p for p in Path(folder).rglob("*") if p.is_file() and p.name not in BUILD_LOGS
    ):
        data = path.read_bytes()
        if path.suffix == ".json":
            facts = json.loads(data)
            if isinstance(facts, dict):
                facts = {
                    k: v
                    for k, v in facts.items()
                    if not k.startswith("seconds") and k not in BUILD_TIME_KEYS
                }
            data = json.dumps(facts, sort_keys=True).encode()
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + data + b"\0")
    return digest.hexdigest()[:16]


def dataset_fingerprint(folder: Path) -> str:
    """A digest of a dataset's episodes in reading order: observations, captions, actions,
    rewards, ends and missions. Episode ids and part-file names (random) are left out, so
    the same trajectories give the same fingerprint whoever collected them."""
    # kept light: rl-bk --help imports this module; the dataset loads pyarrow and gymnasium
    from rl_bk.knowledge.dataset import read_episodes

    digest = hashlib.sha256()
    for ep in read_episodes(folder):
        for array in (ep.observations, ep.actions, ep.rewards):
            digest.update(array.tobytes())
        text = [*ep.captions, ep.mission or "", str(ep.terminated), str(ep.truncated)]
        digest.update("\n".join(text).encode() + b"\0")
    return digest.hexdigest()[:16]


def task_mission(task: TaskConfig) -> str | None:
    """The task env's mission text (after one reset), if it has one and the task says to use it."""
    if not task.knowledge.include_mission:
        return None
    # kept light: rl-bk --help imports this module; env_registry loads gymnasium
    import env_registry

    env = env_registry.make_env(task.env, task.env_config)
    try:
        _, info = env.reset(seed=0)
    finally:
        env.close()
    mission = info.get("mission")
    return str(mission) if mission else None


@dataclass(frozen=True)
class Knowledge:
    """A kind of knowledge a method's trials need built before the sweep.

    ``build`` makes the artifact (a :data:`Builder`). ``settings(task)``: what of the task
    shaped it, hashed into its folder's name beside the dataset (and, for a ``labelled`` kind,
    the labeler and the mission it was told). ``labelled``: built from a labeler's answers;
    False: from the dataset alone, one artifact whatever the backend. ``hand_written(task)``:
    the text of knowledge the task gives by hand in place of a labeler's, if any (BK-Code's
    ``code.path``), hashed too; its folder is ``hand-<hash>``. ``compare(task, backends,
    reference, episodes)``: markdown lines on what each backend's built artifact holds beside
    the ``reference`` backend's, over the dataset's ``episodes`` (``rl-bk knowledge compare``;
    None: the kind has no comparison)."""

    kind: str
    build: Builder
    settings: Callable[[TaskConfig], dict[str, Any]]
    labelled: bool = True
    hand_written: Callable[[TaskConfig], str | None] | None = None
    compare: Callable[[TaskConfig, list[str], str, list], list[str]] | None = None

    def folder(
        self, task: TaskConfig, backend: str | None = None, root: Path | None = None
    ) -> Path:
        """Where the artifact is built, on this machine."""
        home = (root or knowledge_root(task)) / dataset_env(task) / self.kind
        if not self.labelled:  # no labeler: one artifact whatever the backend
            settings = {**self.settings(task), "dataset": dataset_dir(task, root).name}
            return home / f"unlabelled-{_digest(settings)}"
        who = task.knowledge.labeler
        backend = backend or who.backend
        settings = {
            "backend": backend,
            "mission": task_mission(task),
            "family": family_of(task.env),
            "dataset": dataset_dir(task, root).name,
            **self.settings(task),
        }
        if backend not in ("oracle", "fake"):  # which model, and how it was asked
            settings.update(
                packaged=who.packaged,
                model_path=who.model_path,
                base_url=who.base_url,
                model=who.model,
                answer_mode=who.answer_mode,
                preference_orders=who.preference_orders,
                helpful_threshold=who.helpful_threshold,
            )
        text = self.hand_written(task) if self.hand_written else None
        if text is not None:
            settings["code"] = hashlib.sha256(text.encode()).hexdigest()
            return home / f"hand-{_digest(settings)}"
        return home / f"{backend}-{_digest(settings)}"

    def published(
        self, task: TaskConfig, backend: str | None = None, root: Path | None = None
    ) -> str:
        """Where trials read the artifact: the local folder, or with the task's ``storage``
        its copy under ``<storage>/knowledge/`` (a shared mount or a URI)."""
        folder = self.folder(task, backend, root)
        if task.storage is None:
            return str(folder)
        relative = folder.relative_to(root or knowledge_root(task)).as_posix()
        return join(task.storage, "knowledge", relative)

    def built(self, task: TaskConfig, backend: str | None = None, root: Path | None = None) -> str:
        """Where the built artifact is (a folder, or a URI under the task's storage: loaders
        fetch it with :func:`rl_bk.storage.fetch`), or a clear error on how to build it."""
        location = self.published(task, backend, root)
        if not exists(location, DONE):
            b = backend or task.knowledge.labeler.backend
            raise KnowledgeMissingError(
                f"{self.kind} has no knowledge built for task {task.name} with backend {b} "
                f"(looked in {location}); build it with `rl-bk knowledge build --task "
                f"{task.name} --kinds {self.kind} --backend {b}`, or let tune_run.py build it"
                + (" (with --storage, tune_run.py publishes it there)" if task.storage else "")
            )
        return location
