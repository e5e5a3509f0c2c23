"""What a labelling backend is, in two layers so that the rules of prompting live in one place:
a :class:`TextGenerator` is an LLM engine (completes a prompt, optionally under a GBNF grammar,
answers a chat, scores continuations: llama.cpp, OpenAI-compatible servers, vLLM), and a
:class:`Backend` answers typed labelling requests in batches (``LLMBackend`` with any
TextGenerator; the oracle and the fake without an LLM). A backend's ``name`` and ``model``,
with the task's template version and the request, key the label store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel


class BackendError(RuntimeError):
    """The backend could not answer: unreachable, timed out, or its output did not parse.

    The message says what happened and what to do; callers fall back and count it.
    """


class PartialLabelError(BackendError):
    """Some requests of a batch got no usable answer (malformed twice); the others did.

    ``labels`` holds one entry per request, None where it failed, so that the good labels
    are stored and never computed again.
    """

    def __init__(self, message: str, labels: list[Any]):
        super().__init__(message)
        self.labels = labels


class UnsupportedError(BackendError):
    """The backend cannot do this at all (e.g. free text from the oracle, scores from a chat
    API without log-probs). Maps to HTTP 400, not 503: retrying will not help."""


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"  # "stop" or "length"


class TextGenerator(ABC):
    """An LLM engine. Methods are synchronous and may block: call them off the event loop."""

    model: str  # identity of the weights, e.g. "SmolLM2-135M-Instruct.Q4_1.gguf"
    supports_grammar: bool = False

    @abstractmethod
    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 128,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> Completion: ...

    @abstractmethod
    def chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int = 128,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> Completion: ...

    def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """Sum of token log-probabilities of each continuation after ``prompt``."""
        raise UnsupportedError(f"{type(self).__name__} cannot score continuations")

    def answer_logprobs(
        self, messages: Sequence[dict[str, str]], answers: Sequence[str]
    ) -> dict[str, float]:
        """The log-probability of each closed answer as the first token of the reply to
        ``messages`` (its one-token spellings summed: ``closed_answers.surface_forms``);
        nothing is sampled."""
        raise UnsupportedError(
            f"{type(self).__name__} gives no token log-probabilities: set answer_mode: text"
        )


class Backend(ABC):
    """Answers typed labelling requests, a batch at a time."""

    name: str  # "llamacpp", "vllm", "openai", "oracle" or "fake"
    model: str
    is_oracle: bool = False  # oracle labels are never presented as an LLM's

    def asked_as(self, task: str) -> str:
        """How this backend asks ``task`` (e.g. "scores-2": token scores, both orders), ""
        for the task's one way. Part of the label store's key: labels asked differently
        never mix."""
        return ""

    @abstractmethod
    def label(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        """One label per request, in order; raises BackendError if it cannot answer."""

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        raise UnsupportedError(f"the {self.name} backend does not generate free text")

    def chat(self, messages: Sequence[dict[str, str]], **kwargs: Any) -> Completion:
        raise UnsupportedError(f"the {self.name} backend does not generate free text")
