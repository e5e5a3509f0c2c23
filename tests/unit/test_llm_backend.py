"""LLMBackend with the FakeGenerator, and the FakeBackend itself (no LLM, no Ray)."""

from __future__ import annotations

import time

import pytest

from rl_bk.labeling.backends.base import BackendError
from rl_bk.labeling.backends.fake import FakeBackend, FakeGenerator, fake_label
from rl_bk.labeling.backends.llm import LLMBackend
from rl_bk.labeling.gbnf import Gbnf
from rl_bk.labeling.grammars import PREFERENCE_GRAMMAR, goals_grammar
from rl_bk.labeling.tasks import (
    ActionScoresRequest,
    GoalsRequest,
    HelpfulRequest,
    PreferenceLabel,
    PreferenceRequest,
    RewardCodeRequest,
)

PREF = PreferenceRequest(segment_a=["a"], segment_b=["b"], criteria="go to the red ball")
SIG = "def compute_potential(window: list[dict]) -> float"


def test_identity_comes_from_construction_and_generator():
    backend = LLMBackend(FakeGenerator(model="m.gguf"), "llamacpp")
    assert (backend.name, backend.model, backend.is_oracle) == ("llamacpp", "m.gguf", False)


def test_uses_grammar_when_supported_and_chat_by_default():
    gen = FakeGenerator()
    label = LLMBackend(gen, "llamacpp", answer_mode="text").label("preference", [PREF])[0]
    assert label.choice in ("A", "B", "tie")
    (call,) = gen.calls
    assert call["method"] == "chat" and call["grammar"] == PREFERENCE_GRAMMAR
    assert call["temperature"] == 0.0 and "Segment A" in call["messages"][-1]["content"]


def test_no_grammar_without_support_and_complete_when_not_chat():
    gen = FakeGenerator(["The answer is B."], supports_grammar=False)
    backend = LLMBackend(gen, "openai", use_chat=False, answer_mode="text")
    label = backend.label("preference", [PREF])[0]
    assert label == PreferenceLabel(choice="B")
    (call,) = gen.calls
    assert call["method"] == "complete" and call["grammar"] is None
    assert call["prompt"].endswith("Answer:")


def test_goals_grammar_is_the_envs_and_the_answer_parses():
    gen = FakeGenerator()
    req = GoalsRequest(caption="you see tree.", env="crafter", max_goals=2)
    label = LLMBackend(gen, "llamacpp").label("goals", [req])[0]
    assert gen.calls[0]["grammar"] == goals_grammar("crafter", 2)
    assert 1 <= len(label.goals) <= 2
    assert all(Gbnf(goals_grammar("crafter", 1)).matches(f'["{g}"]') for g in label.goals)


def test_retries_once_on_malformed_output_then_succeeds():
    gen = FakeGenerator(["I cannot decide.", "yes"])
    backend = LLMBackend(gen, "llamacpp", answer_mode="text")
    label = backend.label("helpful", [HelpfulRequest(caption="c", task="t")])
    assert label[0].helpful is True
    assert [c["temperature"] for c in gen.calls] == [0.0, 0.7]  # the retry is not greedy


def test_raises_backend_error_after_one_retry():
    gen = FakeGenerator(["garbage one", "garbage two", "yes"])
    with pytest.raises(BackendError) as info:
        backend = LLMBackend(gen, "llamacpp", answer_mode="text")
        backend.label("helpful", [HelpfulRequest(caption="c", task="t")])
    assert "helpful" in str(info.value) and "garbage two" in str(info.value)
    assert len(gen.calls) == 2


def test_generator_exceptions_become_backend_errors():
    class Broken(FakeGenerator):
        def chat(self, messages, **kwargs):
            raise ConnectionError("refused")

    with pytest.raises(BackendError, match="refused"):
        LLMBackend(Broken(), "openai", answer_mode="text").label("preference", [PREF])


def test_reward_code_through_the_grammar():
    gen = FakeGenerator()
    req = RewardCodeRequest(env_description="BabyAI", signature=SIG)
    code = LLMBackend(gen, "llamacpp").label("reward_code", [req])[0].code
    assert code.startswith(SIG + ":")
    compile(code, "x", "exec")


def test_action_scores_use_generator_score():
    gen = FakeGenerator()
    req = ActionScoresRequest(prompt="A tree is left.", actions=["go left", "sleep"])
    label = LLMBackend(gen, "llamacpp").label("action_scores", [req])[0]
    assert label.logprobs == [-len(" go left"), -len(" sleep")]
    assert gen.calls[0]["method"] == "score"
    assert gen.calls[0]["prompt"].endswith("Action:")


def test_free_text_passes_through():
    backend = LLMBackend(FakeGenerator(["hello there"]), "vllm")
    assert backend.complete("hi").text == "hello there"
    assert backend.chat([{"role": "user", "content": "hi"}]).text  # generated


# ------------------------------------------------------------------------------ FakeBackend
def test_fake_backend_is_deterministic_and_predictable():
    reqs = [
        PREF,
        PreferenceRequest(segment_a=["x"], segment_b=["y"], criteria="c"),
        PreferenceRequest(segment_a=["p"], segment_b=["q"], criteria="c"),
    ]
    a = FakeBackend().label("preference", reqs)
    assert a == FakeBackend().label("preference", reqs)
    assert a == [fake_label("preference", r) for r in reqs]
    goals = FakeBackend().label("goals", [GoalsRequest(caption="c", env="babyai", max_goals=3)])
    assert 1 <= len(goals[0].goals) <= 3
    code_req = RewardCodeRequest(env_description="d", signature=SIG)
    code = FakeBackend().label("reward_code", [code_req])[0].code
    compile(code, "x", "exec")


def test_fake_backend_counts_fails_and_sleeps():
    fake = FakeBackend()
    fake.label("preference", [PREF, PREF])
    fake.label("helpful", [HelpfulRequest(caption="c", task="t")])
    assert (fake.batches, fake.requests, fake.by_task["preference"]) == (2, 3, 2)
    with pytest.raises(BackendError):
        FakeBackend(fail=True).label("preference", [PREF])
    t0 = time.perf_counter()
    FakeBackend(delay_s=0.2).label("preference", [PREF, PREF, PREF])
    assert 0.2 <= time.perf_counter() - t0 < 0.5  # per batch, not per request


def test_fake_backend_text_is_deterministic():
    fake = FakeBackend()
    assert fake.complete("hi").text == FakeBackend().complete("hi").text
    assert fake.complete("hi").text != fake.complete("bye").text
    assert fake.chat([{"role": "user", "content": "hi"}], max_tokens=2).completion_tokens == 2
    assert fake.text_calls == 4
