"""Prompt templates: one versioned template per labelling task, rendered as chat messages
(instruct models) and as one plain completion prompt ending where the answer starts (base
models without a chat template), in the same words. A template's ``version`` must equal
``TaskSpec.template_version`` (``tasks.py``): the label store keys on it, so a change of
wording here goes with a version bump there. Why the prompts are short and how closed
questions end: docs/labeler.md#tasks-prompts-grammars-and-parsers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from env_registry.babyai import description as babyai
from env_registry.crafter import description as crafter
from env_registry.minedojo import description as minedojo
from env_registry.nethack import description as nethack
from rl_bk.labeling.grammars import ENV_VOCABULARY, normalize_signature
from rl_bk.labeling.tasks import (
    TASKS,
    ActionScoresRequest,
    GoalsRequest,
    HelpfulRequest,
    PreferenceRequest,
    RewardCodeRequest,
)

CAPTION_CHARS = 300  # per caption line
SEGMENT_STEPS = 5  # BK's segment length: longer segments keep their last steps
HISTORY_STEPS = 2
DESCRIPTION_CHARS = 4000  # the whole description: its caption format is what the code parses
FEEDBACK_CHARS = 1500
EXAMPLE_CHARS = 1500

#: One line about each env family, so a model knows which game it is judging.
ENV_DESCRIPTIONS: dict[str, str] = {
    "babyai": babyai.LABELER_DESCRIPTION,
    "crafter": crafter.LABELER_DESCRIPTION,
    "nethack": nethack.LABELER_DESCRIPTION,
    "minedojo": minedojo.LABELER_DESCRIPTION,
}

#: Two example goals per env family, shown in the goals prompt.
GOAL_EXAMPLES: dict[str, tuple[str, str]] = {
    "babyai": babyai.LABELER_GOAL_EXAMPLES,
    "crafter": crafter.LABELER_GOAL_EXAMPLES,
    "nethack": nethack.LABELER_GOAL_EXAMPLES,
}


@dataclass(frozen=True)
class Prompt:
    """One request, rendered."""

    messages: list[dict[str, str]]  # for TextGenerator.chat
    text: str  # for TextGenerator.complete: ends where the answer begins
    max_tokens: int
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class PromptTemplate:
    task: str
    version: str
    system: str
    #: request -> (user message, answer lead of the completion prompt)
    body: Callable[[BaseModel], tuple[str, str]]
    max_tokens: Callable[[BaseModel], int]
    stop: tuple[str, ...] = ()

    def render(self, request: BaseModel) -> Prompt:
        user, lead = self.body(request)
        return Prompt(
            messages=[
                {"role": "system", "content": self.system},
                {"role": "user", "content": user},
            ],
            text=f"{self.system}\n\n{user}\n{lead}",
            max_tokens=self.max_tokens(request),
            stop=self.stop,
        )


# ------------------------------------------------------------------------------- helpers
def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters (``...`` marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def clip_end(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text`` (error messages end with what matters)."""
    return text if len(text) <= limit else "..." + text[-(limit - 3) :]


def _game_line(env: str | None) -> str:
    return f"Game: {ENV_DESCRIPTIONS[env]}\n" if env in ENV_DESCRIPTIONS else ""


def _steps(captions: Sequence[str]) -> str:
    shown = list(captions)[-SEGMENT_STEPS:]
    first = len(captions) - len(shown) + 1
    return "\n".join(f"{first + i}. {clip(c, CAPTION_CHARS)}" for i, c in enumerate(shown))


# ------------------------------------------------------------------------------ templates
def _goals(req: GoalsRequest) -> tuple[str, str]:
    lines = [_game_line(req.env).rstrip()] if req.env in ENV_DESCRIPTIONS else []
    if req.mission:
        lines.append(f"Mission: {req.mission}")
    for i, h in enumerate(req.history[-HISTORY_STEPS:]):
        lines.append(f"Before ({len(req.history[-HISTORY_STEPS:]) - i}): {clip(h, CAPTION_CHARS)}")
    lines.append(f"Now: {clip(req.caption, CAPTION_CHARS)}")
    ask = f"Suggest up to {req.max_goals} short goals the player should do next."
    vocab = ENV_VOCABULARY.get(req.env or "")
    if vocab is not None:
        a, b = GOAL_EXAMPLES[vocab.family]
        ask += f' Use only these verbs: {", ".join(vocab.verbs)}. Example: ["{a}", "{b}"].'
    lines.append(ask + " Answer with a JSON list of strings.")
    return "\n".join(lines), "Goals:"


def _preference(req: PreferenceRequest) -> tuple[str, str]:
    user = (
        f"{_game_line(req.env)}Criteria: {clip(req.criteria, CAPTION_CHARS)}\n"
        f"Segment A:\n{_steps(req.segment_a)}\n"
        f"Segment B:\n{_steps(req.segment_b)}\n"
        "Which segment meets the criteria better? Answer with one letter, A or B, or with "
        "the word tie if they are equal."
    )
    return user, "Answer:"


def _helpful(req: HelpfulRequest) -> tuple[str, str]:
    user = (
        f"{_game_line(req.env)}Task: {clip(req.task, CAPTION_CHARS)}\n"
        f"Observation: {clip(req.caption, CAPTION_CHARS)}\n"
        "Does this observation show progress toward the task? Answer with one word, yes or "
        "no."
    )
    return user, "Answer:"


def _reward_code(req: RewardCodeRequest) -> tuple[str, str]:
    lines = [
        f"Environment: {clip_end(req.env_description, DESCRIPTION_CHARS)}",
    ]
    if req.example_input:
        lines.append(
            "One real argument from the agent's data, exactly as the function "
            f"receives it:\n{clip_end(req.example_input, EXAMPLE_CHARS)}"
        )
    lines += [
        "Write a Python function with exactly this signature:",
        normalize_signature(req.signature),
        "It returns a potential: a number that grows as the agent gets closer to success. "
        "Use only the standard library. Reply with the code only.",
    ]
    if req.feedback:
        lines.append(
            f"Feedback on your previous function: {clip_end(req.feedback, FEEDBACK_CHARS)}"
        )
    return "\n".join(lines), "Code:\n"


def _action_scores(req: ActionScoresRequest) -> tuple[str, str]:
    return req.prompt.strip(), "Action:"


TEMPLATES: dict[str, PromptTemplate] = {
    t.task: t
    for t in (
        PromptTemplate(
            "goals",
            "goals-v1",
            "You help a player in a game. Suggest useful next goals in the game's own words.",
            _goals,  # type: ignore[arg-type]
            lambda r: 8 + 20 * r.max_goals,  # type: ignore[attr-defined]
            ("\n\n",),
        ),
        PromptTemplate(
            "preference",
            "preference-v2",
            "You compare two parts of a game played by an agent.",
            _preference,  # type: ignore[arg-type]
            lambda r: 4,
            ("\n",),
        ),
        PromptTemplate(
            "helpful",
            "helpful-v2",
            "You judge observations from a game played by an agent.",
            _helpful,  # type: ignore[arg-type]
            lambda r: 4,
            ("\n",),
        ),
        PromptTemplate(
            "reward_code",
            "reward_code-v2",
            "You write short, correct Python reward functions for game-playing agents.",
            _reward_code,  # type: ignore[arg-type]
            lambda r: 384,
            ("\n```", "\n\n\n"),
        ),
        PromptTemplate(
            "action_scores",
            "action_scores-v1",
            "You choose the next action of a game-playing agent.",
            _action_scores,  # type: ignore[arg-type]
            lambda r: 0,
        ),
    )
}

for _name, _spec in TASKS.items():  # a template change must come with a version bump
    if TEMPLATES[_name].version != _spec.template_version:
        raise RuntimeError(
            f"prompt template {TEMPLATES[_name].version!r} != task version "
            f"{_spec.template_version!r} for {_name!r}: bump both together"
        )


def render(task: str, request: BaseModel) -> Prompt:
    """Renders one request of ``task`` (a name in ``tasks.TASKS``)."""
    return TEMPLATES[task].render(request)


def render_scoring(request: ActionScoresRequest) -> tuple[str, list[str]]:
    """GLAM-style scoring: the shared prompt and one continuation per action.

    The prompt ends with ``Action:`` and each continuation starts with a space, so that
    tokenisers see the action as they would in running text.
    """
    user, lead = _action_scores(request)
    return f"{user}\n{lead}", [" " + a for a in request.actions]
