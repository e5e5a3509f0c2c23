"""The methods a task can be run with, by name: each turns a task into an RLlib AlgorithmConfig.

``tune_run.py --methods ppo,...`` looks names up here. Each family's module declares its
methods (``METHODS``, a list of :class:`Method`): the build function, the knowledge kind its
trials need built before the sweep (:class:`~rl_bk.experiments.artifacts.Knowledge`, with its
builder), whether a labeler is part of it, its settings section and its results columns.
:data:`FAMILIES` is the one list of those modules; everything else that names methods or
knowledge kinds (the sweep, the knowledge pipeline, the results tables, the command line)
reads the declarations collected here.

Every build function starts from :func:`~rl_bk.experiments.ppo_config.base_ppo_config`, so
every method of a task shares its env, model, PPO hyper-parameters and runner layout, and
comparisons are fair. The modules import RLlib only inside the build functions, so that the
declarations load fast (the command line's help reads them).
"""

from __future__ import annotations

from rl_bk.experiments.methods import baselines, bc, bk, ellm, glam, oni, ptgm
from rl_bk.experiments.methods.base import (
    KNOWLEDGE_PARAMS,
    Method,
    UnknownMethodError,
    knowledge_task,
)
from rl_bk.experiments.methods.bk import REWARD_MODEL_APP

__all__ = [
    "FAMILIES",
    "KNOWLEDGE_KINDS",
    "KNOWLEDGE_METHODS",
    "KNOWLEDGE_PARAMS",
    "LABELLING_METHODS",
    "METHODS",
    "REWARD_MODEL_APP",
    "Method",
    "UnknownMethodError",
    "get_method",
    "knowledge_task",
]

#: The method families, in the order ``tune_run.py --list`` shows their methods.
FAMILIES = (baselines, bk, ellm, oni, ptgm, bc, glam)

METHODS: dict[str, Method] = {m.name: m for family in FAMILIES for m in family.METHODS}

# Views of the declarations, for the sweep's preparation.
#: Methods whose trials need knowledge built before the sweep starts, and its kind.
KNOWLEDGE_KINDS = {m.name: m.knowledge.kind for m in METHODS.values() if m.knowledge}
#: Methods whose knowledge came from a labeler (their ``backend`` picks it).
KNOWLEDGE_METHODS = tuple(m.name for m in METHODS.values() if m.labels == "offline")
#: Methods whose trials ask a labeler while they train (their ``backend`` picks it).
LABELLING_METHODS = tuple(m.name for m in METHODS.values() if m.labels == "online")


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        valid = ", ".join(sorted(METHODS))
        raise UnknownMethodError(f"unknown method {name!r}; valid methods: {valid}") from None
