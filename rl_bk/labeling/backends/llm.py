"""LLMBackend: typed labelling requests answered by any TextGenerator. The rules of prompting
live here once, whatever engine runs the model: render the task's template, constrain the
answer with the task's grammar when the engine takes grammars, parse it, and retry a malformed
answer once; closed questions are read from token scores by default
(:mod:`rl_bk.labeling.closed_answers`). Details:
docs/labeler.md#tasks-prompts-grammars-and-parsers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from rl_bk.labeling.backends.base import (
    Backend,
    BackendError,
    Completion,
    PartialLabelError,
    TextGenerator,
)
from rl_bk.labeling.closed_answers import CLOSED_ANSWERS, helpful_label, preference_label
from rl_bk.labeling.grammars import grammar_for
from rl_bk.labeling.parsing import ParseError, coerce_requests, parse, truncate
from rl_bk.labeling.prompts import render, render_scoring
from rl_bk.labeling.tasks import (
    ActionScoresLabel,
    ActionScoresRequest,
    HelpfulRequest,
    PreferenceRequest,
)

AnswerMode = Literal["token-scores", "text"]


class LLMBackend(Backend):
    """Answers labelling requests with ``generator``.

    Args:
        generator: the engine.
        name: the backend's name in the label store key ("llamacpp", "openai", "vllm").
        use_chat: send chat messages (the default: instruct models with a chat template);
            False sends the plain completion prompt (base models without one).
        retries: extra attempts after a malformed answer.
        retry_temperature: temperature of those attempts.
        answer_mode: closed questions from "token-scores" (the default) or "text".
        preference_orders: 2 asks each pair in both orders (position bias cancels), 1 as given.
        helpful_threshold: P(yes) at or above which a caption is labelled helpful.
    """

    def __init__(
        self,
        generator: TextGenerator,
        name: str,
        *,
        use_chat: bool = True,
        retries: int = 1,
        retry_temperature: float = 0.7,
        answer_mode: AnswerMode = "token-scores",
        preference_orders: int = 2,
        helpful_threshold: float = 0.5,
    ):
        if answer_mode not in ("token-scores", "text"):
            raise ValueError(f"answer_mode must be 'token-scores' or 'text', not {answer_mode!r}")
        if preference_orders not in (1, 2):
            raise ValueError(f"preference_orders must be 1 or 2, not {preference_orders!r}")
        self.answer_mode = answer_mode
        self.preference_orders = preference_orders
        self.helpful_threshold = helpful_threshold
        self.generator = generator
        self.name = name
        self.model = generator.model
        self.use_chat = use_chat
        self.retries = retries
        self.retry_temperature = retry_temperature

    def asked_as(self, task: str) -> str:
        if task not in CLOSED_ANSWERS or self.answer_mode == "text":
            return ""
        if task == "preference":
            return f"scores-{self.preference_orders}"
        return "scores" if self.helpful_threshold == 0.5 else f"scores-t{self.helpful_threshold:g}"

    def label(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        typed = coerce_requests(task, requests)
        if task == "action_scores":
            return [self._scores(r) for r in typed]  # type: ignore[arg-type]
        if task in CLOSED_ANSWERS and self.answer_mode == "token-scores":
            return [self._closed(task, r) for r in typed]
        # A malformed answer costs only its own request; an engine failure (server down)
        # ends the batch at once rather than once per request.
        labels: list[BaseModel | None] = []
        malformed: list[str] = []
        for r in typed:
            try:
                labels.append(self._label_one(task, r))
            except _Malformed as err:
                labels.append(None)
                malformed.append(str(err))
        if malformed:
            raise PartialLabelError(
                f"{len(malformed)} of {len(typed)} {task} requests got no usable answer; "
                f"first: {malformed[0]}",
                labels,
            )
        return labels  # type: ignore[return-value]

    def _label_one(self, task: str, request: BaseModel) -> BaseModel:
        prompt = render(task, request)
        grammar = grammar_for(task, request) if self.generator.supports_grammar else None
        raw = ""
        for attempt in range(1 + self.retries):
            temperature = 0.0 if attempt == 0 else self.retry_temperature
            kwargs: dict[str, Any] = {
                "max_tokens": prompt.max_tokens,
                "temperature": temperature,
                "stop": prompt.stop,
                "grammar": grammar,
            }
            try:
                if self.use_chat:
                    out = self.generator.chat(prompt.messages, **kwargs)
                else:
                    out = self.generator.complete(prompt.text, **kwargs)
            except BackendError:
                raise
            except Exception as e:  # an engine bug or a dropped connection: say which
                raise BackendError(
                    f"{self.name} ({self.model}) failed on a {task} request: "
                    f"{type(e).__name__}: {e}"
                ) from e
            raw = out.text
            try:
                return parse(task, request, raw)
            except ParseError:
                continue
        raise _Malformed(
            f"{self.name} ({self.model}) gave a malformed {task} answer "
            f"{1 + self.retries} times; last raw output: {truncate(raw)!r}"
        )

    def _closed(self, task: str, request: BaseModel) -> BaseModel:
        """A closed question from the answers' token log-probs
        (:mod:`rl_bk.labeling.closed_answers`; both orders for a preference)."""
        answers = CLOSED_ANSWERS[task]
        if task == "preference":
            assert isinstance(request, PreferenceRequest)
            asked = [request]
            if self.preference_orders == 2:
                swap = {"segment_a": request.segment_b, "segment_b": request.segment_a}
                asked.append(request.model_copy(update=swap))
            return preference_label([self._answer_logprobs(task, r, answers) for r in asked])
        assert isinstance(request, HelpfulRequest)
        scores = self._answer_logprobs(task, request, answers)
        return helpful_label(scores, self.helpful_threshold)

    def _answer_logprobs(
        self, task: str, request: BaseModel, answers: Sequence[str]
    ) -> dict[str, float]:
        prompt = render(task, request)
        try:
            return self.generator.answer_logprobs(prompt.messages, answers)
        except BackendError:
            raise
        except Exception as e:
            raise BackendError(
                f"{self.name} ({self.model}) failed to score the answers of a {task} request: "
                f"{type(e).__name__}: {e}"
            ) from e

    def _scores(self, request: ActionScoresRequest) -> ActionScoresLabel:
        prompt, continuations = render_scoring(request)
        logprobs = self.generator.score(prompt, continuations)
        if len(logprobs) != len(continuations):
            raise BackendError(
                f"{self.name} scored {len(logprobs)} continuations of {len(continuations)}"
            )
        return ActionScoresLabel(logprobs=[float(v) for v in logprobs])

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        return self.generator.complete(prompt, **kwargs)

    def chat(self, messages: Sequence[dict[str, str]], **kwargs: Any) -> Completion:
        return self.generator.chat(messages, **kwargs)


class _Malformed(BackendError):
    """One request's answer did not parse, after the retries."""
