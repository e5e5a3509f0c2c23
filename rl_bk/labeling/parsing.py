"""Parsers: raw model text -> the task's label model. Not every backend takes grammars, and
instruct models wrap answers in prose, Markdown or code fences, so each parser looks for the
answer where models put it and ignores the rest; when nothing usable is found it raises
:class:`ParseError` with the raw text, so the backend can retry. Each task's rule:
docs/labeler.md#tasks-prompts-grammars-and-parsers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from pydantic import BaseModel

from rl_bk.labeling.backends.base import BackendError
from rl_bk.labeling.grammars import normalize_goal, normalize_signature
from rl_bk.labeling.tasks import (
    GoalsLabel,
    GoalsRequest,
    HelpfulLabel,
    PreferenceLabel,
    RewardCodeLabel,
    RewardCodeRequest,
    get_task,
)

RAW_CHARS = 200  # how much of a bad answer an error message shows


class ParseError(BackendError):
    """The model's answer holds no usable label."""

    def __init__(self, task: str, raw: str, why: str = "no answer found"):
        self.task, self.raw, self.why = task, raw, why
        super().__init__(f"could not parse a {task} label ({why}) from: {truncate(raw)!r}")


def truncate(text: str, limit: int = RAW_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def coerce_requests(task: str, requests: Sequence[BaseModel | dict]) -> list[BaseModel]:
    """The requests as the task's request model (dicts are validated; other models refused)."""
    spec = get_task(task)
    out = []
    for r in requests:
        if isinstance(r, spec.request):
            out.append(r)
        elif isinstance(r, dict):
            out.append(spec.request.model_validate(r))
        else:
            raise TypeError(f"{task} needs {spec.request.__name__}, not {type(r).__name__}")
    return out


# ---------------------------------------------------------------------------- preference
_COMPARISON = re.compile(r"\b([AB])\s*(>|<|=|>=|<=)\s*([AB])\b")
_CHOICE = re.compile(r"\b(A|B)\b|\b(tie|equal(?:ly good)?)\b", re.IGNORECASE)


def parse_preference(text: str) -> PreferenceLabel:
    m = _COMPARISON.search(text)
    if m and m.group(1) != m.group(3):
        left, op, right = m.groups()
        if op == "=":
            return PreferenceLabel(choice="tie")
        return PreferenceLabel(choice=left if ">" in op else right)
    for m in _CHOICE.finditer(text):
        letter = m.group(1)
        if letter is None:
            return PreferenceLabel(choice="tie")
        if letter.isupper():  # a lowercase "a" is an article, not an answer
            return PreferenceLabel(choice=letter)  # type: ignore[arg-type]
    raise ParseError("preference", text, "no A, B or tie")


# ------------------------------------------------------------------------------- helpful
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_helpful(text: str) -> HelpfulLabel:
    m = _YES_NO.search(text)
    if m is None:
        raise ParseError("helpful", text, "no yes or no")
    return HelpfulLabel(helpful=m.group(1).lower() == "yes")


# --------------------------------------------------------------------------------- goals
_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\(\d+\))\s+(.+?)\s*$", re.MULTILINE)


def _json_list(text: str) -> list[str] | None:
    """The first ``[...]`` in ``text`` that is a JSON list of strings."""
    for start in (m.start() for m in re.finditer(r"\[", text)):
        depth = 0
        for end in range(start, len(text)):
            depth += {"[": 1, "]": -1}.get(text[end], 0)
            if depth == 0:
                try:
                    value = json.loads(text[start : end + 1])
                except ValueError:
                    break
                if isinstance(value, list) and all(isinstance(v, str) for v in value):
                    return value
                break
    return None


def parse_goals(text: str, request: GoalsRequest) -> GoalsLabel:
    items = _json_list(text)
    if items is None:
        items = _LIST_LINE.findall(text)
        if not items:
            raise ParseError("goals", text, "no JSON list and no numbered or bulleted list")
    goals: list[str] = []
    for item in items:
        goal = normalize_goal(request.env, item)
        if goal is not None and goal not in goals:
            goals.append(goal)
    if items and not goals:
        raise ParseError("goals", text, f"no goal in the {request.env or 'free'} vocabulary")
    return GoalsLabel(goals=goals[: request.max_goals])


# --------------------------------------------------------------------------- reward_code
_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


def _compiles(code: str) -> bool:
    try:
        compile(code, "<reward_code>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def parse_reward_code(text: str, request: RewardCodeRequest) -> RewardCodeLabel:
    sig = normalize_signature(request.signature)
    name = re.match(r"def\s+(\w+)", sig)
    fn = name.group(1) if name else ""
    m = _FENCE.search(text)
    code = m.group(1) if m else text
    start = re.search(rf"^def\s+{re.escape(fn)}\s*\(", code, re.MULTILINE)
    if start is None:
        raise ParseError("reward_code", text, f"no function {fn!r}")
    # Keep the imports and comments right above the function; drop prose.
    head: list[str] = []
    for line in reversed(code[: start.start()].splitlines()):
        if line.strip() and not line.lstrip().startswith(("import ", "from ", "#")):
            break
        head.insert(0, line)
    code = "\n".join([*head, code[start.start() :]]).strip("\n")
    lines = code.rstrip().splitlines()
    # A cut-off answer (max_tokens) often ends mid-statement: drop trailing lines until it parses.
    while lines and not _compiles("\n".join(lines)):
        lines.pop()
    code = "\n".join(lines).rstrip()
    if not code or not re.search(rf"\bdef\s+{re.escape(fn)}\s*\(", code):
        raise ParseError("reward_code", text, "the code does not compile")
    return RewardCodeLabel(code=code + "\n")


# -------------------------------------------------------------------------------- entry
def parse(task: str, request: BaseModel, text: str) -> BaseModel:
    """The label of ``task`` in ``text``; raises ParseError (a BackendError) if there is none."""
    if task == "preference":
        return parse_preference(text)
    if task == "helpful":
        return parse_helpful(text)
    if task == "goals":
        return parse_goals(text, request)  # type: ignore[arg-type]
    if task == "reward_code":
        return parse_reward_code(text, request)  # type: ignore[arg-type]
    get_task(task)  # unknown names raise UnknownTaskError
    raise ValueError(f"the {task} task is scored, not parsed")
