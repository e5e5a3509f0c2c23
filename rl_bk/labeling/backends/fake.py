"""Deterministic stand-ins for an LLM, for tests that must not need one: :class:`FakeBackend`
answers typed requests from a hash of the request (:func:`fake_label`), slowly or failing on
request; :class:`FakeGenerator` is a TextGenerator without a model, for testing
:class:`LLMBackend`.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from rl_bk.labeling.backends.base import Backend, BackendError, Completion, TextGenerator
from rl_bk.labeling.gbnf import compile_gbnf
from rl_bk.labeling.grammars import ENV_VOCABULARY, normalize_signature
from rl_bk.labeling.parsing import coerce_requests
from rl_bk.labeling.tasks import (
    ActionScoresLabel,
    GoalsLabel,
    HelpfulLabel,
    PreferenceLabel,
    RewardCodeLabel,
    canonical_json,
)


def digest(*parts: str) -> int:
    """A stable 64-bit hash (Python's ``hash`` of a str changes between processes)."""
    h = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(h[:8], "big")


def fake_label(task: str, request: BaseModel) -> BaseModel:
    """The label FakeBackend gives ``request``: a pure function of the task and request."""
    h = digest(task, canonical_json(request))
    if task == "preference":
        return PreferenceLabel(choice=("A", "B", "tie")[h % 3])
    if task == "helpful":
        return HelpfulLabel(helpful=h % 2 == 0)
    if task == "goals":
        vocab = ENV_VOCABULARY.get(request.env or "")  # type: ignore[attr-defined]
        n = 1 + h % request.max_goals  # type: ignore[attr-defined]
        if vocab is None:
            return GoalsLabel(goals=[f"goal {(h >> (8 * i)) % 1000}" for i in range(n)])
        pool = sorted(vocab.goals)
        goals = list(dict.fromkeys(pool[(h >> (8 * i)) % len(pool)] for i in range(n)))
        return GoalsLabel(goals=goals)
    if task == "reward_code":
        sig = normalize_signature(request.signature)  # type: ignore[attr-defined]
        return RewardCodeLabel(code=f"{sig}\n    # fake-v1 {h:016x}\n    return 0.0\n")
    if task == "action_scores":
        return ActionScoresLabel(
            logprobs=[-1.0 - digest(str(h), a) % 1000 / 100 for a in request.actions]  # type: ignore[attr-defined]
        )
    raise ValueError(f"unknown task {task!r}")


def fake_text(prompt: str, max_tokens: int = 128) -> str:
    """Deterministic free text for a prompt, at most ``max_tokens`` words."""
    words = f"fake completion {digest(prompt) % 10**8:08d} for a prompt of {len(prompt)} chars"
    return " ".join(words.split()[: max(max_tokens, 0)])


class FakeBackend(Backend):
    """Deterministic labels, from a hash of the request's canonical JSON, so a test can
    predict every label (:func:`fake_label`) and two equal requests always get the same one.
    ``delay_s`` makes it slow and ``fail`` makes it fail, for the service's timeout and
    fallback paths; it counts its batches and requests. ``complete``/``chat`` return
    deterministic text, so the OpenAI-compatible endpoints can be tested too.

    Args:
        delay_s: seconds to sleep per batch (``label`` call).
        fail: raise BackendError on every call instead of answering.
        model: the model name it reports (the label store keys on it).
    """

    name = "fake"

    def __init__(self, *, delay_s: float = 0.0, fail: bool = False, model: str = "fake-v1"):
        self.model = model
        self.delay_s = delay_s
        self.fail = fail
        self._lock = threading.Lock()
        self.batches = 0  # label() calls
        self.requests = 0  # requests in them
        self.by_task: Counter[str] = Counter()  # requests per task
        self.text_calls = 0  # complete() and chat() calls

    def label(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        typed = coerce_requests(task, requests)
        with self._lock:
            self.batches += 1
            self.requests += len(typed)
            self.by_task[task] += len(typed)
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail:
            raise BackendError("the fake backend is configured to fail (fail=True)")
        return [fake_label(task, r) for r in typed]

    def _text(self, prompt: str, max_tokens: int) -> Completion:
        with self._lock:
            self.text_calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail:
            raise BackendError("the fake backend is configured to fail (fail=True)")
        text = fake_text(prompt, max_tokens)
        return Completion(text, len(prompt.split()), len(text.split()), "stop")

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        return self._text(prompt, int(kwargs.get("max_tokens") or 128))

    def chat(self, messages: Sequence[dict[str, str]], **kwargs: Any) -> Completion:
        flat = "\n".join(f"{m.get('role', '')}: {m.get('content', '')}" for m in messages)
        return self._text(flat, int(kwargs.get("max_tokens") or 128))


class FakeGenerator(TextGenerator):
    """A TextGenerator without a model, for testing :class:`LLMBackend` without an LLM:
    scripted answers first (to feed it malformed output), then deterministic text.

    Args:
        responses: answers returned in order, one per complete/chat call, whatever the
            grammar (to test malformed output); once used up, answers are generated.
        model: the model name it reports.
        supports_grammar: whether LLMBackend should pass grammars.
        answer_scores: ``(messages, answers) -> {answer: log-prob}`` for closed answers (to
            give it a known position bias, say); by default a deterministic function of
            the messages.

    Generated answers: under a grammar, a deterministic string of the grammar (seeded by the
    prompt); without one, :func:`fake_text`. ``score`` gives ``-len(continuation)``.
    ``calls`` records each call as a dict (method, prompt or messages, and the keywords).
    """

    def __init__(
        self,
        responses: Sequence[str] = (),
        *,
        model: str = "fake-generator-v1",
        supports_grammar: bool = True,
        answer_scores: Callable[[Sequence[dict[str, str]], Sequence[str]], dict[str, float]]
        | None = None,
    ):
        self.answer_scores = answer_scores
        self.model = model
        self.supports_grammar = supports_grammar
        self.responses = list(responses)
        self.calls: list[dict[str, Any]] = []

    def _answer(self, key: str, max_tokens: int, grammar: str | None) -> Completion:
        if self.responses:
            text = self.responses.pop(0)
        elif grammar is not None:
            g = compile_gbnf(grammar)
            text = g.sample(digest(key))
            if text.startswith("def "):  # a code grammar: a body that compiles, still in it
                code = text.split("\n", 1)[0] + "\n    return 0.0\n"
                text = code if g.matches(code) else text
        else:
            text = fake_text(key, max_tokens)
        return Completion(text, len(key.split()), len(text.split()), "stop")

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 128,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> Completion:
        self.calls.append(
            {
                "method": "complete",
                "prompt": prompt,
                "max_tokens": max_tokens,
                "temperature": temperature,
                "stop": tuple(stop),
                "grammar": grammar,
            }
        )
        return self._answer(prompt, max_tokens, grammar)

    def chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int = 128,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> Completion:
        self.calls.append(
            {
                "method": "chat",
                "messages": [dict(m) for m in messages],
                "max_tokens": max_tokens,
                "temperature": temperature,
                "stop": tuple(stop),
                "grammar": grammar,
            }
        )
        key = "\n".join(m.get("content", "") for m in messages)
        return self._answer(key, max_tokens, grammar)

    def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        self.calls.append(
            {"method": "score", "prompt": prompt, "continuations": list(continuations)}
        )
        return [-float(len(c)) for c in continuations]

    def answer_logprobs(
        self, messages: Sequence[dict[str, str]], answers: Sequence[str]
    ) -> dict[str, float]:
        self.calls.append(
            {
                "method": "answer_logprobs",
                "messages": [dict(m) for m in messages],
                "answers": list(answers),
            }
        )
        if self.answer_scores is not None:
            return dict(self.answer_scores(messages, answers))
        key = "\n".join(m.get("content", "") for m in messages)
        return {a: -1.0 - digest(key, a) % 400 / 100 for a in answers}
