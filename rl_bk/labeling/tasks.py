"""The typed labelling tasks: what a caller asks (a request) and what it gets back (a label),
as pydantic models: the contract shared by the HTTP endpoint, the in-process labeler, the label
store (a request's canonical JSON is part of its key) and every backend. Limits on sizes are
part of the contract: the service refuses (HTTP 422) what no prompt could hold. The tasks
(``goals``, ``preference``, ``helpful``, ``reward_code``, ``action_scores``) and who asks
them: docs/labeler.md#tasks-prompts-grammars-and-parsers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

MAX_TEXT = 4000  # characters: about 1000 tokens, the most a caption or description may use
MAX_ITEMS = 64

EnvFamily = Literal["babyai", "crafter", "nethack", "minedojo"]
Text = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT)]
ShortText = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


# ---------------------------------------------------------------------------------- requests
class GoalsRequest(_Model):
    caption: Text
    history: list[Text] = Field(default_factory=list, max_length=MAX_ITEMS)
    env: EnvFamily | None = None  # known env: goals are constrained to its verbs and objects
    mission: ShortText | None = None
    max_goals: int = Field(3, ge=1, le=32)  # 32: room for every goal a Crafter state allows


class PreferenceRequest(_Model):
    segment_a: list[Text] = Field(min_length=1, max_length=MAX_ITEMS)
    segment_b: list[Text] = Field(min_length=1, max_length=MAX_ITEMS)
    criteria: Text  # e.g. the mission, or "which segment makes more progress in the game"
    env: EnvFamily | None = None


class HelpfulRequest(_Model):
    caption: Text
    task: Text
    env: EnvFamily | None = None


class RewardCodeRequest(_Model):
    env_description: Text
    signature: ShortText  # e.g. "def compute_potential(window: list[dict]) -> float"
    feedback: Annotated[str, StringConstraints(max_length=MAX_TEXT)] = ""
    # a real argument, printed as the function receives it: small models misread a format
    # they are only told about
    example_input: Annotated[str, StringConstraints(max_length=MAX_TEXT)] = ""


class ActionScoresRequest(_Model):
    prompt: Text
    actions: list[ShortText] = Field(min_length=1, max_length=MAX_ITEMS)


# ------------------------------------------------------------------------------------ labels
class GoalsLabel(_Model):
    goals: list[ShortText] = Field(max_length=10)


Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class PreferenceLabel(_Model):
    choice: Literal["A", "B", "tie"]
    # From token scores (``closed_answers``); None for text answers and rules.
    p_a: Probability | None = None  # P(segment A is better | not a tie)
    p_tie: Probability | None = None


class HelpfulLabel(_Model):
    helpful: bool
    p_yes: Probability | None = None  # from token scores; None for text answers and rules


class RewardCodeLabel(_Model):
    code: str


class ActionScoresLabel(_Model):
    logprobs: list[float]  # one per action, in the request's order: sum of token log-probs


@dataclass(frozen=True)
class TaskSpec:
    name: str
    request: type[_Model]
    label: type[_Model]
    #: Bumped whenever the prompt or the parsing changes: stored labels of an older version
    #: are not reused for the new one.
    template_version: str


TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("goals", GoalsRequest, GoalsLabel, "goals-v1"),
        TaskSpec("preference", PreferenceRequest, PreferenceLabel, "preference-v2"),
        TaskSpec("helpful", HelpfulRequest, HelpfulLabel, "helpful-v2"),
        TaskSpec("reward_code", RewardCodeRequest, RewardCodeLabel, "reward_code-v2"),
        TaskSpec("action_scores", ActionScoresRequest, ActionScoresLabel, "action_scores-v1"),
    )
}


class UnknownTaskError(KeyError):
    def __str__(self) -> str:
        return f"unknown labelling task {self.args[0]!r}; tasks: {', '.join(TASKS)}"


def get_task(name: str) -> TaskSpec:
    try:
        return TASKS[name]
    except KeyError:
        raise UnknownTaskError(name) from None


def canonical_json(request: _Model) -> str:
    """The request as compact JSON, fields in model order: equal requests give equal strings."""
    return request.model_dump_json(exclude_none=False, round_trip=True)
