"""The labeler on Ray Serve (fake backend): the official OpenAI client, typed labels over
HTTP and through a handle, the store across restarts, and a replica killed under traffic."""

import socket
import time

import pytest

from rl_bk.labeling.client import HandleTransport, HTTPTransport, LabelerClient
from rl_bk.labeling.tasks import HelpfulRequest
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


def test_handle_and_http_give_the_same_labels_and_repeats_come_from_the_store(labeler):
    by_handle = LabelerClient(HandleTransport(app_name=labeler.app_name))
    by_http = LabelerClient(HTTPTransport(url(labeler)))
    requests = [req(f"You see a red ball {i} steps forward.") for i in range(5)]
    assert by_handle.label("helpful", requests) == by_http.label("helpful", requests)
    assert by_http.metrics["from_store"] == 5  # the handle's call stored them


def test_store_survives_a_restart_of_the_app(labeler):
    from ray import serve

    from serve_deployments.labeler import start_labeler

    client = LabelerClient(HTTPTransport(url(labeler)))
    client.label("helpful", [req("You see a grey key.")])
    serve.delete(labeler.app_name)
    start_labeler(labeler)
    fresh = LabelerClient(HTTPTransport(url(labeler)))
    fresh.label("helpful", [req("You see a grey key.")])
    assert fresh.metrics["from_store"] == 1 and fresh.metrics["fallbacks"] == 0


def test_killing_the_replica_gives_counted_fallbacks_then_recovery(labeler):
    import ray

    client = LabelerClient(HandleTransport(app_name=labeler.app_name), timeout_s=2.0,
                           retries=0, retry_after_s=0.5)  # fmt: skip
    stored = [req(f"You see a box {i} steps left.") for i in range(3)]
    before = client.label("helpful", stored)
    (replica,) = [a for a in ray.util.list_named_actors(all_namespaces=True)
                  if "LabelerServer" in a["name"] and "REPLICA" in a["name"].upper()]  # fmt: skip
    ray.kill(ray.get_actor(replica["name"], namespace=replica["namespace"]))

    deadline, i, recovered = time.monotonic() + 60, 0, False
    while time.monotonic() < deadline:
        i += 1
        labels = client.label("helpful", [req(f"You see a ball {i} steps right.")])
        if client.metrics["fallbacks"] and client.metrics["labels_received"] > 3 + 0:
            recovered = True
            break
        time.sleep(0.2)
    assert client.metrics["fallbacks"] >= 1, "the kill was not noticed"
    assert recovered, f"no recovery within 60 s: {client.metrics}"
    assert labels[0].helpful in (True, False)
    after = LabelerClient(HTTPTransport(url(labeler)))
    assert after.label("helpful", stored) == before and after.metrics["from_store"] == 3


def test_every_typed_task_answers_through_the_client(labeler):
    from rl_bk.labeling.tasks import TASKS
    from tests.integration.test_cli_serve import REQUESTS

    client = LabelerClient(HandleTransport(app_name=labeler.app_name))
    for task, request in REQUESTS.items():
        (label,) = client.label(task, [request])
        assert isinstance(label, TASKS[task].label)
    assert client.metrics["fallbacks"] == 0 and client.metrics["calls"] == len(REQUESTS)
