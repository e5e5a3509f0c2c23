"""The one registry of methods and of knowledge kinds: every name a task file, a sweep or the
command line gives is looked up here, in the declarations each family's ``method.py``
makes (``METHODS``, a list of :class:`Method`) for the families :data:`~rl_bk.methods.FAMILIES`
lists. Every build function starts from the task's shared PPO setup, so every method of a task
shares its env, model, PPO hyper-parameters and runner layout. Details:
docs/architecture.md#where-to-add-a-new-method.
"""

from __future__ import annotations

import importlib

from rl_bk.experiments.artifacts import Knowledge
from rl_bk.methods import FAMILIES
from rl_bk.methods.base import KNOWLEDGE_PARAMS, Method, UnknownMethodError, knowledge_task
from rl_bk.methods.bk import method as bk

__all__ = [
    "BK_KINDS",
    "FAMILIES",
    "KNOWLEDGE",
    "KNOWLEDGE_METHODS",
    "KNOWLEDGE_PARAMS",
    "LABELLING_METHODS",
    "METHODS",
    "Method",
    "UnknownMethodError",
    "get_method",
    "knowledge_of",
    "knowledge_task",
]

METHODS: dict[str, Method] = {
    m.name: m
    for family in FAMILIES
    for m in importlib.import_module(f"rl_bk.methods.{family}.method").METHODS
}

#: Every knowledge kind, by name, in the order the methods are declared (methods may share
#: one: ``ptgm`` and ``ptgm-no-kl``).
KNOWLEDGE: dict[str, Knowledge] = {
    m.knowledge.kind: m.knowledge for m in METHODS.values() if m.knowledge
}
#: BK's kinds: what ``rl-bk knowledge`` builds for a task whose methods need none.
BK_KINDS = tuple(m.knowledge.kind for m in bk.METHODS)
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


def knowledge_of(kind: str) -> Knowledge:
    try:
        return KNOWLEDGE[kind]
    except KeyError:
        valid = ", ".join(KNOWLEDGE)
        raise ValueError(f"unknown knowledge kind {kind!r}; valid: {valid}") from None
