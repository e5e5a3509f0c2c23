"""The labeler's HTTP API: typed label endpoints and OpenAI-compatible completions.

    POST /v1/labels/{task}      {"requests": [...]}  -> {"labels": [...], "from_store": [...], ...}
    POST /v1/chat/completions   OpenAI chat format (no streaming, n=1)
    POST /v1/completions        OpenAI completion format (no streaming, n=1)
    GET  /v1/models             the served model
    GET  /metrics               store hits/misses/latency, backend calls and errors
    GET  /healthz

Every request body is validated by a pydantic model; anything wrong (malformed JSON, invalid
UTF-8, a wrong type, a missing or unknown field, an empty or oversized input, a body over
1 MiB) is answered with a 4xx whose ``error.message`` says what is wrong, never a 500. A
backend that fails answers 503 (try again later), one that cannot do the thing at all 400.

The app is plain FastAPI and reads its :class:`~rl_bk.labeling.service.LabelService` from
``app.state.service``: the Serve deployment sets it, and tests can without Ray.
"""

from __future__ import annotations

import time
import uuid
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from rl_bk.labeling.backends.base import BackendError, UnsupportedError
from rl_bk.labeling.tasks import TASKS, UnknownTaskError, get_task

MAX_BODY_BYTES = 1 << 20
MAX_BATCH = 256
MAX_PROMPT_CHARS = 32_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LabelBatch(_Strict):
    # Items are validated against the task's own request model in the handler, so that the
    # error names the task's fields.
    requests: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_BATCH)


class ChatMessage(_Strict):
    role: Literal["system", "user", "assistant"]
    content: Annotated[str, StringConstraints(max_length=MAX_PROMPT_CHARS)]


class _Sampling(BaseModel):
    # OpenAI clients send fields we do not use (user, seed, ...): accept and ignore those.
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    max_tokens: int = Field(128, ge=1, le=2048)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    stop: str | list[str] | None = None
    n: Literal[1] = 1
    stream: Literal[False] = False

    def stop_list(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else list(self.stop or [])


class ChatCompletionRequest(_Sampling):
    messages: list[ChatMessage] = Field(min_length=1, max_length=64)


class CompletionRequest(_Sampling):
    prompt: Annotated[str, StringConstraints(min_length=1, max_length=MAX_PROMPT_CHARS)]


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": {"message": message, "type": kind}})


def _describe(errors: list[dict[str, Any]], prefix: tuple = ()) -> str:
    parts = []
    for e in errors[:10]:
        loc = ".".join(str(p) for p in (*prefix, *e.get("loc", ())) if p != "body")
        if e.get("type") == "json_invalid":
            reason = e.get("ctx", {}).get("error", "parse error")
            parts.append(f"the body is not valid JSON ({reason})")
        else:
            parts.append(f"{loc or 'body'}: {e.get('msg', 'invalid')}")
    return "; ".join(parts)


def create_app() -> FastAPI:
    app = FastAPI(title="rl-bk labeler", version="1")

    @app.middleware("http")
    async def limit_body(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
            return _error(413, f"the body is larger than {MAX_BODY_BYTES} bytes", "too_large")
        if request.method == "POST":
            body = await request.body()  # starlette caches it for the handler
            if len(body) > MAX_BODY_BYTES:
                return _error(413, f"the body is larger than {MAX_BODY_BYTES} bytes", "too_large")
            try:
                body.decode("utf-8")
            except UnicodeDecodeError as err:
                return _error(
                    400,
                    f"the body is not valid UTF-8 ({err.reason} at byte {err.start})",
                    "invalid_request_error",
                )
        return await call_next(request)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, _describe(list(exc.errors())), "invalid_request_error")

    def service(request: Request):
        return request.app.state.service

    @app.post("/v1/labels/{task}")
    def label(task: str, batch: LabelBatch, request: Request) -> Any:
        try:
            spec = get_task(task)
        except UnknownTaskError as err:
            return _error(404, str(err), "not_found")
        parsed = []
        for i, item in enumerate(batch.requests):
            try:
                parsed.append(spec.request.model_validate(item))
            except ValidationError as err:
                return _error(
                    422, _describe(err.errors(), ("requests", i)), "invalid_request_error"
                )
        try:
            result = service(request).label(task, parsed)
        except UnsupportedError as err:
            return _error(400, str(err), "unsupported")
        except BackendError as err:
            return _error(503, str(err), "backend_unavailable")
        return {
            "task": task,
            "backend": result.backend,
            "model": result.model,
            "oracle": result.is_oracle,
            "labels": [lab.model_dump() for lab in result.labels],
            "from_store": result.from_store,
        }

    def _completion_call(fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs), None
        except UnsupportedError as err:
            return None, _error(400, str(err), "unsupported")
        except BackendError as err:
            return None, _error(503, str(err), "backend_unavailable")

    @app.post("/v1/chat/completions")
    def chat(body: ChatCompletionRequest, request: Request) -> Any:
        backend = service(request).backend
        out, err = _completion_call(
            backend.chat,
            [m.model_dump() for m in body.messages],
            max_tokens=body.max_tokens,
            temperature=body.temperature,
            stop=body.stop_list(),
        )
        if err is not None:
            return err
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": backend.model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": out.finish_reason,
                    "message": {"role": "assistant", "content": out.text},
                }
            ],
            "usage": _usage(out),
        }

    @app.post("/v1/completions")
    def complete(body: CompletionRequest, request: Request) -> Any:
        backend = service(request).backend
        out, err = _completion_call(
            backend.complete,
            body.prompt,
            max_tokens=body.max_tokens,
            temperature=body.temperature,
            stop=body.stop_list(),
        )
        if err is not None:
            return err
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": backend.model,
            "choices": [
                {"index": 0, "text": out.text, "finish_reason": out.finish_reason, "logprobs": None}
            ],
            "usage": _usage(out),
        }

    @app.get("/v1/models")
    def models(request: Request) -> Any:
        backend = service(request).backend
        return {
            "object": "list",
            "data": [{"id": backend.model, "object": "model", "owned_by": f"rl-bk/{backend.name}"}],
        }

    @app.get("/v1/tasks")
    def tasks() -> Any:
        return {
            name: {
                "template_version": spec.template_version,
                "request": spec.request.model_json_schema(),
            }
            for name, spec in TASKS.items()
        }

    @app.get("/metrics")
    def metrics(request: Request) -> Any:
        return service(request).stats()

    @app.get("/healthz")
    def healthz() -> Any:
        return {"ok": True}

    return app


def _usage(out) -> dict[str, int]:
    return {
        "prompt_tokens": out.prompt_tokens,
        "completion_tokens": out.completion_tokens,
        "total_tokens": out.prompt_tokens + out.completion_tokens,
    }
