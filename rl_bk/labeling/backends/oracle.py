"""OracleBackend: environment rules that answer as a strong LLM would (ELLM's SimpleOracle is
the precedent), never an LLM result: ``is_oracle`` is True and the name is "oracle", so its
labels are stored and reported apart. The rules are each family's, next to its captioner
(``env_registry.<family>.oracle``: pure functions over the captions an LLM would read, not the
env's state); this module turns requests into calls to them and their answers into labels.
Details: docs/labeler.md#backends.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from pydantic import BaseModel

from env_registry.babyai import oracle as babyai
from env_registry.crafter import oracle as crafter
from env_registry.nethack import oracle as nethack
from rl_bk.labeling.backends.base import Backend, BackendError, UnsupportedError
from rl_bk.labeling.grammars import ENV_VOCABULARY, normalize_goal, normalize_signature
from rl_bk.labeling.parsing import coerce_requests
from rl_bk.labeling.tasks import (
    GoalsLabel,
    GoalsRequest,
    HelpfulLabel,
    HelpfulRequest,
    PreferenceLabel,
    PreferenceRequest,
    RewardCodeLabel,
    RewardCodeRequest,
)


def infer_env(*texts: str) -> str | None:
    """The env family a caption (or mission) is written for, or None if it is not clear."""
    text = "\n".join(texts)
    if nethack.STATUS_MARK.search(text):
        return "nethack"
    if babyai.CAPTION_SENTENCE.search(text):
        return "babyai"
    if crafter.CAPTION_MARK.search(text):
        return "crafter"
    if babyai.MISSION_PHRASE.search(text):
        return "babyai"
    return None


# ------------------------------------------------------------------------------ reward code
_ORACLE_HEADER = (
    "    # Written by the rule-based oracle (rules-v2), not by an LLM: an upper-bound baseline.\n"
)
_CAPTION_HELPER = """\
    def _latest_caption(value):
        # The newest caption in the argument: a string, a list of steps, or a step dict.
        if isinstance(value, str):
            return value
        if isinstance(value, dict):
            for key in ("caption", "text", "observation", "obs", "description"):
                if isinstance(value.get(key), str):
                    return value[key]
            return ""
        if isinstance(value, (list, tuple)) and value:
            return _latest_caption(value[-1])
        return ""

    caption = ""
    for value in ({args}):
        caption = _latest_caption(value)
        if caption:
            break
"""
_GENERIC_BODY = """\
    # Generic potential: progress words minus trouble words in the latest caption, / 10.
    text = caption.lower()
    good = ("you carry", "you have", "gold", "you kill", "descend", "welcome", "wood",
            "stone", "iron", "diamond", "pickaxe", "sword", "table", "furnace")
    bad = ("you die", "died", "it's a wall", "you can't", "hurt", "hungry", "thirsty", "sleepy")
    value = (sum(w in text for w in good) - sum(w in text for w in bad)) / 10.0
"""


def _signature_args(sig: str) -> tuple[list[str], bool]:
    """Parameter names of a ``def`` line and whether it returns a tuple (BK's (float, dict))."""
    try:
        fn = ast.parse(sig + "\n    pass\n").body[0]
    except SyntaxError as e:
        raise BackendError(f"the signature {sig!r} is not a Python def line: {e}") from None
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        raise BackendError(f"the signature {sig!r} is not a function definition")
    a = fn.args
    names = [
        p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg not in ("self", "cls")
    ]
    returns = ast.unparse(fn.returns) if fn.returns is not None else ""
    return names, returns.lower().startswith(("tuple", "typing.tuple"))


def oracle_reward_code(req: RewardCodeRequest) -> str:
    sig = normalize_signature(req.signature)
    names, returns_tuple = _signature_args(sig)
    text = f"{req.env_description}\n{req.feedback}"
    env = infer_env(text)
    goto_body = babyai.goto_potential_body(text) if env in (None, "babyai") else None
    body = _ORACLE_HEADER
    body += _CAPTION_HELPER.format(args=", ".join(names) + ("," if len(names) == 1 else ""))
    if not names:
        body = _ORACLE_HEADER + '    caption = ""\n'
    if goto_body is not None:
        body += goto_body
    elif env == "babyai":  # no mission (BK's setting): background knowledge only
        return f"{sig}\n{babyai.task_agnostic_code(names, returns_tuple)}"
    else:
        body += _GENERIC_BODY
    body += "    return (value, {})\n" if returns_tuple else "    return value\n"
    return f"{sig}\n{body}"


# ---------------------------------------------------------------------------------- backend
class OracleBackend(Backend):
    """Rule-based labels. Takes no configuration.

    The family's rules: ``env_registry.babyai.oracle`` (with a mission: its sub-goals and the
    targets' distance; without, BK's setting: only what BK's prompts tell an LLM),
    ``env_registry.crafter.oracle`` (the tech tree) and ``env_registry.nethack.oracle``
    (keyword scores of the message line, as ONI's prompt judges messages). The family is the
    request's ``env``, or, when None, inferred from the caption format (:func:`infer_env`);
    every goal is put in the family's goal language. It also writes the reward code: a
    documented potential function, marked as oracle-written: for BabyAI "go to" missions the
    target's distance in the latest caption, for BabyAI without a mission the task-agnostic
    potential, otherwise a generic keyword score. An unknown env (None and not inferable, or
    minedojo) gets neutral answers: ``tie``, ``no``, ``[]``. ``action_scores`` and free text
    need an LLM: UnsupportedError.
    """

    name = "oracle"
    # v2: BabyAI without a mission answers from background knowledge (the task-agnostic rules);
    # a new version keeps the label store from serving v1's ties and generic code.
    model = "rules-v2"
    is_oracle = True

    def label(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        typed = coerce_requests(task, requests)
        if task == "action_scores":
            raise UnsupportedError(
                "the oracle backend has no log-likelihoods: action_scores needs an LLM backend"
            )
        handler = {
            "goals": self._goals,
            "preference": self._preference,
            "helpful": self._helpful,
            "reward_code": self._reward_code,
        }[task]
        return [handler(r) for r in typed]  # type: ignore[operator]

    @staticmethod
    def _goals(req: GoalsRequest) -> GoalsLabel:
        env = req.env or infer_env(req.caption, req.mission or "")
        if env == "babyai":
            goals = babyai.suggest_goals(req.caption, req.mission)
        elif env == "crafter":
            goals = crafter.suggest_goals(req.caption)
        elif env == "nethack":
            goals = nethack.suggest_goals(req.caption)
        else:
            goals = []
        # Every goal must read as the grammar-constrained LLM's would.
        vocab = ENV_VOCABULARY.get(env or "")
        goals = [g for g in dict.fromkeys(goals) if vocab is None or g in vocab.goals]
        return GoalsLabel(goals=goals[: req.max_goals])

    @staticmethod
    def _preference(req: PreferenceRequest) -> PreferenceLabel:
        env = req.env or infer_env(*req.segment_a, *req.segment_b, req.criteria)
        if env == "babyai":
            choice = babyai.prefer(req.segment_a, req.segment_b, req.criteria)
        elif env == "crafter":
            choice = crafter.prefer(req.segment_a, req.segment_b)
        elif env == "nethack":
            choice = nethack.prefer(req.segment_a, req.segment_b)
        else:
            choice = "tie"
        return PreferenceLabel(choice=choice)  # type: ignore[arg-type]

    @staticmethod
    def _helpful(req: HelpfulRequest) -> HelpfulLabel:
        env = req.env or infer_env(req.caption, req.task)
        if env == "babyai":
            helpful = babyai.is_helpful(req.caption, req.task)
        elif env == "crafter":
            # The task's text as a goal of Crafter's vocabulary; None: the full game.
            helpful = crafter.is_helpful(req.caption, normalize_goal("crafter", req.task))
        elif env == "nethack":
            helpful = nethack.is_helpful(req.caption)
        else:
            helpful = False
        return HelpfulLabel(helpful=helpful)

    @staticmethod
    def _reward_code(req: RewardCodeRequest) -> RewardCodeLabel:
        return RewardCodeLabel(code=oracle_reward_code(req))
