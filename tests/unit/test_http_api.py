"""The labeler's HTTP API without Ray: typed endpoints, OpenAI format, and every kind of bad
input answered with a 4xx that says what is wrong (never a 500)."""

import json

import pytest
from fastapi.testclient import TestClient

from rl_bk.labeling.backends.base import Backend, BackendError
from rl_bk.labeling.backends.fake import FakeBackend
from rl_bk.labeling.service import LabelService
from rl_bk.labeling.store import LabelStore
from serve_deployments.http_api import MAX_BODY_BYTES, create_app

HELPFUL = {"caption": "You see a red ball 2 steps forward.", "task": "go to the red ball"}


@pytest.fixture
def service(tmp_path):
    return LabelService(FakeBackend(), LabelStore(tmp_path / "labels.sqlite3"))


@pytest.fixture
def http(service):
    app = create_app()
    app.state.service = service
    return TestClient(app, raise_server_exceptions=False)


def test_typed_label_then_the_same_request_from_the_store(http, service):
    first = http.post("/v1/labels/helpful", json={"requests": [HELPFUL]})
    assert first.status_code == 200
    body = first.json()
    assert body["backend"] == "fake" and body["from_store"] == [False]
    assert set(body["labels"][0]) == {"helpful", "p_yes"}
    again = http.post("/v1/labels/helpful", json={"requests": [HELPFUL, HELPFUL]}).json()
    assert again["from_store"] == [True, True] and again["labels"][0] == body["labels"][0]
    metrics = http.get("/metrics").json()
    assert metrics["service"]["backend_calls"] == 1 and metrics["service"]["store_hits"] == 1


@pytest.mark.parametrize(
    "task, request_body",
    [
        ("goals", {"caption": "You see a tree.", "env": "crafter"}),
        ("preference", {"segment_a": ["a"], "segment_b": ["b"], "criteria": "c"}),
        ("reward_code", {"env_description": "grid", "signature": "def f(w):"}),
        ("action_scores", {"prompt": "Goal: go.", "actions": ["turn left", "go forward"]}),
    ],
)
def test_every_task_answers(http, task, request_body):
    response = http.post(f"/v1/labels/{task}", json={"requests": [request_body]})
    assert response.status_code == 200, response.text


def test_openai_chat_and_completion_formats(http):
    chat = http.post(
        "/v1/chat/completions",
        json={"model": "x", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8},
    )
    assert chat.status_code == 200
    body = chat.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert isinstance(body["choices"][0]["message"]["content"], str)
    completion = http.post("/v1/completions", json={"prompt": "hi", "max_tokens": 4})
    assert completion.status_code == 200 and completion.json()["object"] == "text_completion"
    assert http.get("/v1/models").json()["data"][0]["id"] == "fake-v1"


BAD = [
    ("malformed JSON", "/v1/labels/helpful", b'{"requests": [', 422, "not valid JSON"),
    ("invalid UTF-8", "/v1/labels/helpful", b'{"requests": ["\xff\xfe"]}', 400, "UTF-8"),
    (
        "wrong type",
        "/v1/labels/helpful",
        {"requests": [{"caption": 5, "task": "t"}]},
        422,
        "requests.0.caption",
    ),
    (
        "missing field",
        "/v1/labels/helpful",
        {"requests": [{"caption": "c"}]},
        422,
        "requests.0.task: Field required",
    ),
    (
        "unknown field",
        "/v1/labels/helpful",
        {"requests": [{**HELPFUL, "x": 1}]},
        422,
        "requests.0.x",
    ),
    (
        "empty caption",
        "/v1/labels/helpful",
        {"requests": [{**HELPFUL, "caption": ""}]},
        422,
        "at least 1 character",
    ),
    ("empty batch", "/v1/labels/helpful", {"requests": []}, 422, "requests"),
    (
        "huge caption",
        "/v1/labels/helpful",
        {"requests": [{**HELPFUL, "caption": "x" * 5000}]},
        422,
        "at most 4000",
    ),
    ("batch too big", "/v1/labels/helpful", {"requests": [HELPFUL] * 300}, 422, "at most 256"),
    (
        "body over 1 MiB",
        "/v1/labels/helpful",
        {"requests": [{"caption": "x" * MAX_BODY_BYTES, "task": "t"}]},
        413,
        "larger than",
    ),
    ("unknown task", "/v1/labels/nope", {"requests": [HELPFUL]}, 404, "tasks: goals"),
    ("not an object", "/v1/labels/helpful", [1, 2], 422, "body"),
    ("chat without messages", "/v1/chat/completions", {"messages": []}, 422, "messages"),
    (
        "chat bad role",
        "/v1/chat/completions",
        {"messages": [{"role": "x", "content": "c"}]},
        422,
        "messages.0.role",
    ),
    (
        "streaming",
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "c"}], "stream": True},
        422,
        "stream",
    ),
    (
        "max_tokens too big",
        "/v1/completions",
        {"prompt": "p", "max_tokens": 10**6},
        422,
        "max_tokens",
    ),
]


@pytest.mark.parametrize("name, path, body, status, says", BAD, ids=[b[0] for b in BAD])
def test_bad_input_gets_a_4xx_that_says_what_is_wrong(http, name, path, body, status, says):
    if isinstance(body, bytes):
        response = http.post(path, content=body, headers={"content-type": "application/json"})
    else:
        response = http.post(
            path, content=json.dumps(body), headers={"content-type": "application/json"}
        )
    assert response.status_code == status, response.text
    assert says in response.json()["error"]["message"]


class Broken(Backend):
    name, model = "broken", "none"

    def label(self, task, requests):
        raise BackendError("the model server at http://x is unreachable")


def test_backend_failure_is_503_with_its_message_and_oracle_free_text_is_400(tmp_path):
    app = create_app()
    app.state.service = LabelService(Broken(), LabelStore(tmp_path / "s.sqlite3"))
    http = TestClient(app, raise_server_exceptions=False)
    response = http.post("/v1/labels/helpful", json={"requests": [HELPFUL]})
    assert response.status_code == 503 and "unreachable" in response.json()["error"]["message"]
    chat = http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "c"}]})
    assert chat.status_code == 400 and "does not generate free text" in chat.text
