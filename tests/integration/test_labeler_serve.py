"""The labeler on Ray Serve (fake backend): the official OpenAI client, typed labels over
HTTP and through a handle (the library's served labeler, ``LabelerSpec(serve_app=...)`` and
``LabelerSpec(url=...)``), the store across restarts, and a replica killed under traffic."""

import socket
import time

import pytest

from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.labeling.tasks import HelpfulRequest
from rl_bk.labeling.transport import HTTPTransport
from serve_deployments.configs import LabelerAppConfig

pytestmark = pytest.mark.ray


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def labeler(ray_session, tmp_path_factory):
    from ray import serve

    from serve_deployments.labeler import start_labeler

    store = tmp_path_factory.mktemp("store") / "labels.sqlite3"
    cfg = LabelerAppConfig(backend="fake", store_path=str(store), port=free_port())
    # Serve's HTTP port is fixed when Serve starts: one an earlier module left running
    # would listen elsewhere than ``cfg.port``
    serve.shutdown()
    start_labeler(cfg)
    yield cfg
    serve.shutdown()


def url(cfg) -> str:
    return f"http://127.0.0.1:{cfg.port}"


def req(caption: str) -> HelpfulRequest:
    return HelpfulRequest(caption=caption, task="go to the red ball")


def test_official_openai_client_gets_a_chat_completion(labeler):
    import openai

    client = openai.OpenAI(base_url=f"{url(labeler)}/v1", api_key="not-needed")
    reply = client.chat.completions.create(
        model="fake-v1", messages=[{"role": "user", "content": "Say hello."}], max_tokens=8
    )
    assert reply.choices[0].message.role == "assistant"
    assert isinstance(reply.choices[0].message.content, str) and reply.model == "fake-v1"


def from_store(cfg, requests) -> list[bool]:
    """Whether the app answered each request from its store (asked over HTTP)."""
    reply = HTTPTransport(url(cfg)).label("helpful", [r.model_dump() for r in requests], 10)
    return reply["from_store"]


def test_handle_and_http_give_the_same_labels_and_repeats_come_from_the_store(labeler):
    by_handle = LabelerSpec(serve_app=labeler.app_name, timeout_s=30).build()
    by_http = LabelerSpec(url=url(labeler), timeout_s=30).build()
    requests = [req(f"You see a red ball {i} steps forward.") for i in range(5)]
    assert by_handle("helpful", requests) == by_http("helpful", requests)
    assert from_store(labeler, requests) == [True] * 5  # the handle's call stored them
    # Who labels is the app's to say, the same by either way.
    assert by_handle.identity == by_http.identity == "fake/fake-v1"
    assert by_handle.is_oracle is False


def test_store_survives_a_restart_of_the_app(labeler):
    from ray import serve

    from serve_deployments.labeler import start_labeler

    LabelerSpec(url=url(labeler)).build()("helpful", [req("You see a grey key.")])
    serve.delete(labeler.app_name)
    start_labeler(labeler)
    assert from_store(labeler, [req("You see a grey key.")]) == [True]


def test_killing_the_replica_fails_calls_loudly_then_recovers(labeler):
    import ray

    labeler_by_handle = LabelerSpec(serve_app=labeler.app_name, timeout_s=2.0).build()
    stored = [req(f"You see a box {i} steps left.") for i in range(3)]
    before = labeler_by_handle("helpful", stored)
    (replica,) = [
        a
        for a in ray.util.list_named_actors(all_namespaces=True)
        if "LabelerServer" in a["name"] and "REPLICA" in a["name"].upper()
    ]
    ray.kill(ray.get_actor(replica["name"], namespace=replica["namespace"]))

    deadline, i, failures, labels = time.monotonic() + 60, 0, 0, None
    while time.monotonic() < deadline:
        i += 1
        try:
            labels = labeler_by_handle("helpful", [req(f"You see a ball {i} steps right.")])
        except Exception:  # the replica is gone: the call says so (no silent fallback)
            failures += 1
            time.sleep(0.2)
            continue
        if failures:
            break
    assert failures >= 1, "the kill was not noticed"
    assert labels is not None and labels[0].helpful in (True, False), "no recovery within 60 s"
    assert labeler_by_handle("helpful", stored) == before
    assert from_store(labeler, stored) == [True] * 3


def test_every_typed_task_answers_through_the_served_labeler(labeler):
    from rl_bk.labeling.tasks import TASKS
    from tests.integration.test_cli_serve import REQUESTS

    served = LabelerSpec(serve_app=labeler.app_name, timeout_s=30).build()
    for task, request in REQUESTS.items():
        (label,) = served(task, [TASKS[task].request.model_validate(request)])
        assert isinstance(label, TASKS[task].label)
