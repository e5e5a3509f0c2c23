"""Labeler speed with the embedded model: cold labels/s against the backend's raw generation
rate on the same prompts, and cached round trips through a handle and over HTTP, in one run.

    python -m bench.labeler            # writes bench/results/labeler.{md,json}

1. raw: the llama.cpp generator, built as the service builds it, called directly (in this
   process) on the rendered prompts of 40 helpful requests with the same grammar, after one
   warm-up call: the backend's own rate;
2. cold: the same 40 requests through the Serve app (DeploymentHandle, one batch, store empty
   but for one warm-up label): labels/s including Serve, the store lookup and the write;
3. cached: one request at a time, already in the store, 200 round trips each through the
   handle and over HTTP (p50, p99); and through LabelerClient, whose in-process cache answers
   without a call.
Raw and cold run one after the other (each llama.cpp instance uses both cores).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.labeler_quality import make_items

ROOT = Path(__file__).resolve().parents[1]

N_CACHED = 200


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> int:
    import httpx
    import ray
    from ray import serve

    from bench.labeler_client import LabelerClient
    from rl_bk.labeling.backends.llamacpp import LlamaCppGenerator
    from rl_bk.labeling.grammars import grammar_for
    from rl_bk.labeling.labeler import LabelerSpec
    from rl_bk.labeling.prompts import render
    from serve_deployments.configs import LabelerAppConfig
    from serve_deployments.labeler import start_labeler

    _, helpful = make_items()
    requests = [r for r, _ in helpful]

    # Built as make_backend builds the service's generator (same defaults, prefix reuse on).
    generator = LlamaCppGenerator(packaged="smollm2")
    prompts = [(render("helpful", r), grammar_for("helpful", r)) for r in requests]
    warm_p, warm_g = prompts[0]
    generator.chat(warm_p.messages, max_tokens=warm_p.max_tokens, stop=warm_p.stop, grammar=warm_g)
    start = time.perf_counter()
    for p, grammar in prompts:
        generator.chat(p.messages, max_tokens=p.max_tokens, stop=p.stop, grammar=grammar)
    raw_rate = len(requests) / (time.perf_counter() - start)
    del generator

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = Path(tempfile.mkdtemp()) / "labels.sqlite3"
    ray.init(
        address="local", num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR"
    )
    cfg = LabelerAppConfig(backend="llamacpp", store_path=str(store), port=port)
    handle = start_labeler(cfg)
    payload = [r.model_dump() for r in requests]
    warm = [{**payload[0], "caption": "You see a wall 1 step left."}]  # not among the 40
    handle.label.remote("helpful", warm).result()
    start = time.perf_counter()
    reply = handle.label.remote("helpful", payload).result()
    cold_rate = len(requests) / (time.perf_counter() - start)
    assert not any(reply["from_store"])

    one = [payload[0]]
    handle_ms, http_ms = [], []
    http = httpx.Client()
    url = f"http://127.0.0.1:{port}/v1/labels/helpful"
    for _ in range(N_CACHED):
        t = time.perf_counter()
        assert handle.label.remote("helpful", one).result()["from_store"] == [True]
        handle_ms.append(1e3 * (time.perf_counter() - t))
        t = time.perf_counter()
        assert http.post(url, json={"requests": one}).json()["from_store"] == [True]
        http_ms.append(1e3 * (time.perf_counter() - t))
    client = LabelerClient(LabelerSpec(serve_app=cfg.app_name).build())
    client.label("helpful", [requests[0]])
    t = time.perf_counter()
    for _ in range(N_CACHED):
        client.label("helpful", [requests[0]])
    client_us = 1e6 * (time.perf_counter() - t) / N_CACHED
    serve.shutdown()
    ray.shutdown()

    results = {
        "raw_labels_per_s": raw_rate,
        "cold_labels_per_s": cold_rate,
        "cold_over_raw": cold_rate / raw_rate,
        "cached_handle_ms": {
            "p50": statistics.median(handle_ms),
            "p99": percentile(handle_ms, 0.99),
        },
        "cached_http_ms": {"p50": statistics.median(http_ms), "p99": percentile(http_ms, 0.99)},
        "client_cache_us": client_us,
    }
    print(json.dumps(results, indent=2))
    stamp = time.strftime("%Y-%m-%d %H:%M")
    h, w = results["cached_handle_ms"], results["cached_http_ms"]
    lines = [
        "# Labeler speed (embedded SmolLM2-135M, llama.cpp, 2 threads)",
        "",
        f"Command: `python -m bench.labeler` — {stamp}, {os.cpu_count()} CPUs, load average "
        f"at end {os.getloadavg()[0]:.1f}. 40 helpful requests (BabyAI captions).",
        "",
        "| measure | value |",
        "|---|---|",
        f"| raw generation, generator called directly | {raw_rate:.2f} labels/s |",
        f"| cold, through Serve (handle, one batch, empty store) | {cold_rate:.2f} labels/s "
        f"= **{cold_rate / raw_rate:.2f} x raw** |",
        f"| cached, handle round trip | p50 {h['p50']:.1f} ms, p99 {h['p99']:.1f} ms |",
        f"| cached, HTTP round trip | p50 {w['p50']:.1f} ms, p99 {w['p99']:.1f} ms |",
        f"| cached in the client (no call) | {client_us:.0f} µs |",
    ]
    out = ROOT / "bench" / "results"
    (out / "labeler.md").write_text("\n".join(lines) + "\n")
    (out / "labeler.json").write_text(json.dumps({"date": stamp, **results}, indent=2))
    print(f"wrote {out / 'labeler.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
