"""The vllm backend end to end: Ray's LLM serving (vLLM on CPU) as one Serve app, the labeler
as another, talking to it over the OpenAI API (grammars as vLLM's structured_outputs, which a
135M model needs to answer "A", "B" or "tie"). Opt-in and slow (minutes to start the engine):

    RLBK_VLLM_MODEL_DIR=/tmp/smollm2-hf <venv>/bin/python -m pytest \
        tests/integration/test_vllm_backend.py -m vllm -q

It runs in the vLLM venv of docs/vllm.md; the folder comes from scripts/convert_gguf_to_hf.py.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from serve_deployments.vllm_app import VLLMConfig, vllm_available

MODEL_DIR = os.environ.get("RLBK_VLLM_MODEL_DIR", "")
MODEL_ID = "smollm2"

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not vllm_available(),
        reason="needs vllm and ray.serve.llm importable (run it in the venv of docs/vllm.md)",
    ),
    pytest.mark.skipif(
        not (MODEL_DIR and (Path(MODEL_DIR) / "config.json").is_file()),
        reason="set RLBK_VLLM_MODEL_DIR to a Hugging Face folder "
        "(python scripts/convert_gguf_to_hf.py --out /tmp/smollm2-hf)",
    ),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _shm_files() -> set[str]:
    shm = Path("/dev/shm")
    return {p.name for pattern in ("psm_*", "sem.mp-*") for p in shm.glob(pattern)}


def _remove_orphans(names: set[str]) -> None:
    """Serve kills the replica before vLLM unlinks its shared-memory queues (~400 MB a run)."""
    maps = ""
    for m in Path("/proc").glob("[0-9]*/maps"):
        try:
            maps += m.read_text()
        except OSError:
            pass
    for name in names:
        if name not in maps:
            Path("/dev/shm", name).unlink(missing_ok=True)


@pytest.fixture(scope="module")
def apps(tmp_path_factory):
    import ray
    from ray import serve

    from serve_deployments.vllm_app import start_vllm

    shm_before = _shm_files()
    # Logical CPUs: the vLLM replica's placement group takes 2, the labeler 0.25, the ingress 0.
    ray.init(
        address="local",
        num_cpus=3,
        include_dashboard=False,
        logging_level="ERROR",
        configure_logging=False,
    )
    port = free_port()
    t0 = time.perf_counter()
    base_url = start_vllm(VLLMConfig(model_id=MODEL_ID, model_source=MODEL_DIR), port=port)
    startup_s = time.perf_counter() - t0
    print(f"\nvLLM app ready in {startup_s:.1f} s at {base_url}")
    yield {"base_url": base_url, "store_dir": tmp_path_factory.mktemp("store")}
    serve.shutdown()
    ray.shutdown()
    _remove_orphans(_shm_files() - shm_before)


def test_official_openai_client_gets_a_chat_completion(apps):
    import openai

    client = openai.OpenAI(base_url=apps["base_url"], api_key="not-needed")
    assert [m.id for m in client.models.list()] == [MODEL_ID]
    t0 = time.perf_counter()
    reply = client.chat.completions.create(
        model=MODEL_ID,
        messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=16,
        temperature=0.0,
    )
    print(
        f"\nchat completion in {time.perf_counter() - t0:.2f} s: "
        f"{reply.choices[0].message.content!r}"
    )
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content  # the GGUF's ChatML template made it through
    assert reply.usage is not None and reply.usage.completion_tokens > 0


def _preference_request():
    from rl_bk.labeling.tasks import PreferenceRequest

    return PreferenceRequest(
        segment_a=["You see a wall.", "You turn left.", "You see a wall."],
        segment_b=["You see a red ball.", "You move forward.", "You pick up the red ball."],
        criteria="pick up the red ball",
    )


def test_llm_backend_gets_a_grammar_constrained_preference_from_vllm(apps):
    from rl_bk.labeling.backends.llm import LLMBackend
    from rl_bk.labeling.backends.vllm import VLLMGenerator
    from rl_bk.labeling.tasks import PreferenceLabel

    backend = LLMBackend(VLLMGenerator(apps["base_url"], MODEL_ID, timeout_s=120), name="vllm")
    t0 = time.perf_counter()
    [label] = backend.label("preference", [_preference_request()])
    print(f"\npreference (direct) in {time.perf_counter() - t0:.2f} s: {label}")
    assert isinstance(label, PreferenceLabel) and label.choice in ("A", "B", "tie")


def test_labeler_app_returns_a_typed_preference_label_from_vllm(apps):
    from ray import serve

    from rl_bk.labeling.backends.registry import make_backend
    from rl_bk.labeling.tasks import PreferenceLabel
    from serve_deployments.configs import LabelerAppConfig
    from serve_deployments.labeler import build_labeler_app

    labeler = LabelerAppConfig(
        backend="vllm",
        base_url=apps["base_url"],
        model=MODEL_ID,
        request_timeout_s=120,
        store_path=str(apps["store_dir"] / "labels.sqlite3"),
    )
    make_backend(labeler)  # the settings are valid before a replica tries them
    serve.run(build_labeler_app(labeler.model_dump()), name="labeler", route_prefix="/labeler")
    handle = serve.get_deployment_handle("LabelerServer", app_name="labeler")
    t0 = time.perf_counter()
    out = handle.label.remote("preference", [_preference_request().model_dump()])
    out = out.result(timeout_s=300)
    print(f"\npreference (labeler app) in {time.perf_counter() - t0:.2f} s: {out['labels']}")
    assert out["backend"] == "vllm" and out["model"] == MODEL_ID and out["from_store"] == [False]
    assert PreferenceLabel.model_validate(out["labels"][0]).choice in ("A", "B", "tie")
