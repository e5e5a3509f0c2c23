"""OpenAICompatGenerator against a tiny canned OpenAI server on 127.0.0.1 (no network)."""

from __future__ import annotations

import json
import logging
import math
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rl_bk.labeling.backends.base import BackendError, UnsupportedError
from rl_bk.labeling.backends.openai_compat import OpenAICompatGenerator

KEY = "sk-test-SECRET-0123456789"
KEY_ENV = "RLBK_TEST_OPENAI_KEY"


class _Server:
    """Canned answers by path; records every request; ``fail_next`` 503s to test retries."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.fail_next = 0
        self.echo_supported = True
        self.top_logprobs: list[tuple[str, float]] | None = None  # for logprobs requests
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(
                    {"path": self.path, "body": body, "headers": dict(self.headers)}
                )
                path = self.path.split("?")[0]
                if outer.fail_next:
                    outer.fail_next -= 1
                    return self._send(503, {"error": {"message": "overloaded"}})
                if path.endswith("/v1/chat/completions"):
                    answer = _chat_answer()
                    if body.get("logprobs") and outer.top_logprobs is not None:
                        answer["choices"][0]["logprobs"] = {
                            "content": [
                                {
                                    "token": "Yes",
                                    "logprob": -0.5,
                                    "top_logprobs": [
                                        {"token": t, "logprob": lp} for t, lp in outer.top_logprobs
                                    ],
                                }
                            ]
                        }
                    return self._send(200, answer)
                if path.endswith("/v1/completions"):
                    if body.get("echo"):
                        if not outer.echo_supported:
                            return self._send(404, {"error": {"message": "no echo here"}})
                        return self._send(200, _echo_answer(body["prompt"]))
                    return self._send(200, _completion_answer())
                return self._send(404, {"error": {"message": f"no route {self.path}"}})

            def _send(self, status, payload):
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _completion_answer() -> dict:
    return {
        "id": "cmpl-1",
        "object": "text_completion",
        "choices": [{"index": 0, "text": " B", "finish_reason": "length", "logprobs": None}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8},
    }


def _chat_answer() -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "collect wood"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }


def _echo_answer(prompts: list[str]) -> dict:
    """Whitespace 'tokens', each with log-prob -1 per character; first token has None."""
    choices = []
    for i, text in enumerate(prompts):
        tokens, offsets, pos = [], [], 0
        for word in text.split(" "):
            tok = word if pos == 0 else " " + word
            tokens.append(tok)
            offsets.append(pos)
            pos += len(tok)
        lps = [None] + [-float(len(t)) for t in tokens[1:]]
        choices.append(
            {
                "index": i,
                "text": text,
                "finish_reason": "length",
                "logprobs": {"tokens": tokens, "token_logprobs": lps, "text_offset": offsets},
            }
        )
    choices.reverse()  # order must come from "index", not position
    return {"choices": choices, "usage": {"prompt_tokens": 1, "completion_tokens": 0}}


@pytest.fixture
def server():
    srv = _Server()
    yield srv
    srv.close()


@pytest.fixture
def gen(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    return OpenAICompatGenerator(
        server.url, "test-model", api_key_env=KEY_ENV, timeout_s=5, max_retries=2, backoff_s=0.01
    )


def test_complete(gen, server):
    out = gen.complete("Pick A or B:", max_tokens=1, stop=["\n"], grammar='root ::= "A" | "B"')
    assert out.text == " B"
    assert (out.prompt_tokens, out.completion_tokens, out.finish_reason) == (7, 1, "length")
    req = server.requests[-1]
    assert req["path"] == "/v1/completions"  # /v1 appended to a bare host URL
    assert req["body"]["prompt"] == "Pick A or B:"
    assert req["body"]["stop"] == ["\n"]
    assert req["body"]["model"] == "test-model"
    assert "guided_grammar" not in req["body"]
    assert req["headers"]["Authorization"] == f"Bearer {KEY}"
    assert gen.supports_grammar is False


def test_chat(gen, server):
    out = gen.chat([{"role": "user", "content": "what next?"}], temperature=0.7)
    assert out.text == "collect wood"
    assert (out.prompt_tokens, out.completion_tokens, out.finish_reason) == (12, 3, "stop")
    req = server.requests[-1]
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["messages"] == [{"role": "user", "content": "what next?"}]
    assert req["body"]["temperature"] == 0.7


def test_grammar_field_and_azure_style(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    gen = OpenAICompatGenerator(
        server.url + "/v1/",
        "m",
        api_key_env=KEY_ENV,
        api_version="2024-06-01",
        grammar_field="guided_grammar",
    )
    assert gen.supports_grammar
    gen.complete("x", grammar='root ::= "A"')
    req = server.requests[-1]
    assert req["path"] == "/v1/completions?api-version=2024-06-01"
    assert req["body"]["guided_grammar"] == 'root ::= "A"'
    assert req["headers"]["api-key"] == KEY
    assert "Authorization" not in req["headers"]


def test_no_key_no_auth_header(server, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    gen = OpenAICompatGenerator(server.url, "m", api_key_env=KEY_ENV)
    gen.complete("x")
    assert "Authorization" not in server.requests[-1]["headers"]


def test_retries_then_succeeds(gen, server):
    server.fail_next = 2
    assert gen.complete("x").text == " B"
    assert len(server.requests) == 3


def test_gives_up_after_retries(gen, server):
    server.fail_next = 10
    with pytest.raises(BackendError, match="failed after 3 attempt") as info:
        gen.complete("x")
    assert server.url in str(info.value)
    assert "HTTP 503" in str(info.value)


def test_score_slices_continuation(gen, server):
    scores = gen.score("the best action is", [" move left", " do"])
    # Tokens " move" (-5) + " left" (-5); " do" (-3).
    assert scores == [-10.0, -3.0]
    body = server.requests[-1]["body"]
    assert body["echo"] is True and body["logprobs"] == 1 and body["max_tokens"] == 0
    assert gen.score("p", []) == []


def test_score_unsupported(gen, server):
    server.echo_supported = False
    with pytest.raises(UnsupportedError, match="cannot score continuations"):
        gen.score("p", [" a"])


def test_closed_answers_from_top_logprobs(gen, server):
    server.top_logprobs = [("Yes", -0.5), (" yes", -2.0), ("No", -1.5), ("Sure", -3.0)]
    got = gen.answer_logprobs([{"role": "user", "content": "Helpful? yes or no"}], ["yes", "no"])
    assert got["yes"] == pytest.approx(math.log(math.exp(-0.5) + math.exp(-2.0)))
    assert got["no"] == pytest.approx(-1.5)
    body = server.requests[-1]["body"]
    assert (body["logprobs"], body["top_logprobs"], body["max_tokens"]) == (True, 20, 1)
    server.top_logprobs = None  # a server that ignores logprobs: say so, do not guess
    with pytest.raises(UnsupportedError, match="answer_mode: text"):
        gen.answer_logprobs([{"role": "user", "content": "?"}], ["yes", "no"])


def test_connection_refused_names_url_not_key(monkeypatch, caplog):
    monkeypatch.setenv(KEY_ENV, KEY)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    gen = OpenAICompatGenerator(url, "m", api_key_env=KEY_ENV, max_retries=1, backoff_s=0.01)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(BackendError) as info:
        gen.chat([{"role": "user", "content": "hi"}])
    msg = str(info.value)
    assert f"{url}/chat/completions" in msg
    assert "check that the server is running" in msg
    assert KEY not in msg
    # Not chained: a requests exception carries the request, headers (and key) included.
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert KEY not in caplog.text


def test_key_never_in_repr_or_attributes(gen):
    assert KEY not in repr(gen)
    assert KEY not in str(gen)
    assert all(KEY not in repr(v) for v in vars(gen).values())
    assert KEY_ENV in repr(gen)


def test_error_body_echoing_key_is_scrubbed(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)

    class Leaky(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            raw = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}"}})
            self.send_response(401)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw.encode())

    server.httpd.RequestHandlerClass = Leaky
    gen = OpenAICompatGenerator(server.url, "m", api_key_env=KEY_ENV)
    with pytest.raises(BackendError) as info:
        gen.complete("x")
    assert "HTTP 401" in str(info.value) and KEY not in str(info.value)
    with pytest.raises(BackendError) as info:
        gen.score("x", [" y"])
    assert not isinstance(info.value, UnsupportedError)
    assert KEY not in str(info.value)


def test_bad_base_url():
    with pytest.raises(ValueError, match="http"):
        OpenAICompatGenerator("localhost:8000", "m")
