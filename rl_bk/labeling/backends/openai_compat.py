"""A TextGenerator for any OpenAI-compatible HTTP server (OpenAI, Azure OpenAI, vLLM,
FastChat): real experiments need a bigger model than the embedded ones, and the usual way to
get one is such a server. It talks to it with ``httpx`` (rl-bk's one HTTP client) rather than
the ``openai`` package, which rl-bk does not depend on: only two endpoints and three JSON
fields are needed. :class:`OpenAICompatGenerator` says how it sends keys, grammars and retries.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from rl_bk.labeling.backends.base import BackendError, Completion, TextGenerator, UnsupportedError
from rl_bk.labeling.closed_answers import answers_from_top_logprobs

TOP_LOGPROBS = 20  # the most OpenAI's API returns

log = logging.getLogger(__name__)

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


def _normalise_base_url(base_url: str) -> str:
    url = base_url.rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
    if parts.path in ("", "/"):
        url += "/v1"
    return url


class OpenAICompatGenerator(TextGenerator):
    """Completions, chat and (best-effort) scoring against an OpenAI-compatible server.

    ``api_version`` switches to Azure's conventions: ``?api-version=...`` on every request and
    the key in an ``api-key`` header instead of ``Authorization: Bearer``. With no key in the
    environment no auth header is sent (local vLLM/FastChat servers need none).

    - ``complete`` → ``POST {base_url}/completions``, ``chat`` → ``POST
      {base_url}/chat/completions``. ``base_url`` follows the openai package's convention
      (``https://api.openai.com/v1``); a URL with no path gets ``/v1`` appended, so
      ``http://localhost:8000`` works for vLLM.
    - The API key is read from the environment variable named by ``api_key_env`` at each
      request. It is never stored on the object and never appears in repr, logs or exception
      messages (messages are scrubbed of it, and transport exceptions are not chained, because
      their request objects carry the headers).
    - Grammars: the OpenAI API has none. Servers that take a GBNF grammar in an extra body
      field (vLLM: ``grammar_field="guided_grammar"``) get it there; otherwise the grammar is
      dropped with a warning, ``supports_grammar`` is False, and callers must parse free output.
    - ``score`` is best-effort: it needs the legacy ``echo=True, logprobs=1`` on
      ``/completions`` (vLLM and FastChat have it; OpenAI's chat models do not). The
      continuation tokens are picked out by character offset, so a token that straddles the
      prompt/continuation boundary is counted with the continuation, and tokenisation may
      differ from scoring the continuation alone. Servers without it raise
      :class:`UnsupportedError`.
    - ``answer_logprobs`` (closed answers from token scores) asks ``/chat/completions`` for one
      token with ``logprobs: true, top_logprobs: 20`` (OpenAI, vLLM and llama.cpp's server
      return them) and reads the answers' spellings from that list; a server that returns
      none raises :class:`UnsupportedError` (set ``answer_mode: text`` for it).
    - Network errors, timeouts, 429 and 5xx are retried ``max_retries`` times with
      exponential backoff, then raise :class:`BackendError` naming the URL and what to check.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        max_retries: int = 2,
        api_version: str | None = None,
        grammar_field: str | None = None,
        backoff_s: float = 0.5,
    ) -> None:
        self.base_url = _normalise_base_url(base_url)
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.api_version = api_version
        self.grammar_field = grammar_field
        self.supports_grammar = grammar_field is not None
        self.backoff_s = backoff_s
        self._local = threading.local()  # one httpx.Client per thread
        self._warned_grammar = False

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r})"
        )

    # --- TextGenerator -------------------------------------------------------------------

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 128,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> Completion:
        body = self._body(max_tokens, temperature, stop, grammar)
        body["prompt"] = prompt
        data = self._post("/completions", body)
        choice = self._first_choice(data, "/completions")
        return self._completion(data, choice, str(choice.get("text") or ""))

    def chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int = 128,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> Completion:
        body = self._body(max_tokens, temperature, stop, grammar)
        body["messages"] = [dict(m) for m in messages]
        data = self._post("/chat/completions", body)
        choice = self._first_choice(data, "/chat/completions")
        message = choice.get("message") or {}
        return self._completion(data, choice, str(message.get("content") or ""))

    def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """Sum of log-probs of each continuation via ``echo``; best-effort (class docstring)."""
        if not continuations:
            return []
        texts = [prompt + c for c in continuations]
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": texts,
            "echo": True,
            "logprobs": 1,
            "max_tokens": 0,
            "temperature": 0.0,
        }
        try:
            data = self._post("/completions", body)
        except _ClientError as e:
            if e.status in (401, 403):  # a key problem, not a missing feature
                raise
            # Some servers refuse max_tokens=0; one generated token is sliced off below anyway.
            if e.status not in (400, 422):
                raise UnsupportedError(self._unsupported_msg(e.detail)) from None
            body["max_tokens"] = 1
            try:
                data = self._post("/completions", body)
            except _ClientError as e2:
                raise UnsupportedError(self._unsupported_msg(e2.detail)) from None
        choices = sorted(data.get("choices") or [], key=lambda c: c.get("index", 0))
        if len(choices) != len(texts):
            raise UnsupportedError(
                self._unsupported_msg(f"{len(choices)} choices for {len(texts)} prompts")
            )
        return [
            self._slice_logprob(choice, len(prompt), len(text))
            for choice, text in zip(choices, texts)
        ]

    def answer_logprobs(
        self, messages: Sequence[dict[str, str]], answers: Sequence[str]
    ) -> dict[str, float]:
        """The answers' log-probs from the first reply token's ``top_logprobs``."""
        body = self._body(1, 0.0, (), None)
        body.update(messages=[dict(m) for m in messages], logprobs=True, top_logprobs=TOP_LOGPROBS)
        try:
            data = self._post("/chat/completions", body)
        except _ClientError as e:
            if e.status in (401, 403):
                raise
            raise UnsupportedError(self._no_logprobs(e.detail)) from None
        choice = self._first_choice(data, "/chat/completions")
        content = (choice.get("logprobs") or {}).get("content") or []
        top = content[0].get("top_logprobs") if content and isinstance(content[0], dict) else None
        if not top:
            raise UnsupportedError(self._no_logprobs("the answer has no top_logprobs"))
        table: dict[str, float] = {}
        for entry in top:
            token, lp = entry.get("token"), entry.get("logprob")
            if isinstance(token, str) and isinstance(lp, (int, float)):
                table[token] = max(float(lp), table.get(token, float("-inf")))
        return answers_from_top_logprobs(table, answers)

    def _no_logprobs(self, detail: str) -> str:
        return (
            f"{self.base_url}/chat/completions gave no token log-probabilities for closed "
            f"answers ({self._scrub(detail)}): use a server that returns logprobs/top_logprobs, "
            "or set answer_mode: text"
        )

    # --- internals -----------------------------------------------------------------------

    def _body(
        self, max_tokens: int, temperature: float, stop: Sequence[str], grammar: str | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if stop:
            body["stop"] = list(stop)
        if grammar is not None:
            if self.grammar_field is not None:
                body[self.grammar_field] = grammar
            elif not self._warned_grammar:
                self._warned_grammar = True
                log.warning(
                    "%s cannot constrain output with a grammar; the grammar is ignored and the "
                    "caller must parse free text (set grammar_field for servers that take one)",
                    self.base_url,
                )
        return body

    def _completion(self, data: dict[str, Any], choice: dict[str, Any], text: str) -> Completion:
        usage = data.get("usage") or {}
        finish = "length" if choice.get("finish_reason") == "length" else "stop"
        return Completion(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=finish,
        )

    def _first_choice(self, data: dict[str, Any], path: str) -> dict[str, Any]:
        choices = data.get("choices")
        if not choices or not isinstance(choices[0], dict):
            raise BackendError(
                f"{self.base_url}{path} answered without choices: is it an OpenAI-compatible "
                f"server and is model {self.model!r} served there?"
            )
        return choices[0]

    def _slice_logprob(self, choice: dict[str, Any], start: int, end: int) -> float:
        lp = choice.get("logprobs") or {}
        tokens = lp.get("tokens")
        token_lps = lp.get("token_logprobs")
        offsets = lp.get("text_offset")
        if not tokens or token_lps is None or offsets is None:
            raise UnsupportedError(
                self._unsupported_msg("the answer has no echoed tokens with text offsets")
            )
        total = 0.0
        for tok, tok_lp, off in zip(tokens, token_lps, offsets):
            # Tokens overlapping [start, end): the continuation (and a straddling token).
            if off < end and off + max(len(tok), 1) > start:
                if tok_lp is None:  # the very first token has no log-prob
                    continue
                total += float(tok_lp)
        return total

    def _unsupported_msg(self, detail: str) -> str:
        return (
            f"{self.base_url}/completions cannot score continuations (needs echo=True with "
            f"logprobs, as vLLM and FastChat offer): {self._scrub(detail)}"
        )

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            if self.api_version is not None:
                headers["api-key"] = key
            else:
                headers["Authorization"] = f"Bearer {key}"
        return headers

    def _scrub(self, text: str) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            text = text.replace(key, "***")
        return text

    def _session(self) -> httpx.Client:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = httpx.Client()
        return session

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        url = self.base_url + path
        params = {"api-version": self.api_version} if self.api_version else None
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(min(self.backoff_s * 2 ** (attempt - 1), 8.0))
            try:
                resp = self._session().post(
                    url, json=body, headers=self._headers(), params=params, timeout=self.timeout_s
                )
            except httpx.TimeoutException:
                last = f"timed out after {self.timeout_s:g} s"
            except httpx.HTTPError as e:
                last = f"{type(e).__name__}: {self._scrub(str(e))}"
            else:
                if resp.status_code < 400:
                    try:
                        return resp.json()
                    except ValueError:
                        raise BackendError(
                            f"{url} answered {resp.status_code} with a body that is not JSON: "
                            "is base_url the server's OpenAI-compatible API root (…/v1)?"
                        ) from None
                detail = f"HTTP {resp.status_code}: {self._scrub(resp.text[:300])}"
                if resp.status_code not in _RETRY_STATUS:
                    raise _ClientError(
                        resp.status_code,
                        detail,
                        f"{url} refused the request ({detail}); check base_url, model "
                        f"{self.model!r} and the key in ${self.api_key_env}",
                    )
                last = detail
            log.debug("POST %s failed (attempt %d): %s", url, attempt + 1, last)
        raise BackendError(
            f"POST {url} failed after {self.max_retries + 1} attempt(s): {last}; check that the "
            "server is running and reachable, and that base_url is right"
        )


class _ClientError(BackendError):
    """A 4xx the server will not change its mind about (no retry)."""

    def __init__(self, status: int, detail: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail
