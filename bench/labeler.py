"""Labeler speed with an embedded model (the packaged default, or ``--model``): cold labels/s
against the backend's raw generation rate on the same prompts, and cached round trips
through a handle and over HTTP, in one run.

    python -m bench.labeler                    # writes bench/results/labeler.{md,json}
    python -m bench.labeler --model smollm2    # a packaged model by name

1. raw: the llama.cpp generator, built as the service builds it, called directly (in this
   process) on the rendered prompts of 40 of ONI's helpful requests (NetHack captions) with
   the same grammar, after one warm-up call: the backend's own rate;
2. cold: the same 40 requests through the Serve app (DeploymentHandle, one batch, store empty
   but for one warm-up label): labels/s including Serve, the store lookup and the write;
3. cached: one request at a time, already in the store, 200 round trips each through the
   handle and over HTTP (p50, p99).
Raw and cold run one after the other (each llama.cpp instance uses both cores).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rl_bk.experiments.labeler_probes import helpful_probe

ROOT = Path(__file__).resolve().parents[1]

N_CACHED = 200


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main(argv: list[str] | None = None) -> int:
    from rl_bk.labeling.config import DEFAULT_PACKAGED, PACKAGED_MODELS

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=DEFAULT_PACKAGED, choices=sorted(PACKAGED_MODELS))
    model = p.parse_args(argv).model
    import httpx
    import ray
    from ray import serve

    from rl_bk.labeling.backends.llamacpp import LlamaCppGenerator
    from rl_bk.labeling.grammars import grammar_for
    from rl_bk.labeling.prompts import render
    from serve_deployments.configs import LabelerAppConfig
    from serve_deployments.labeler import start_labeler

    requests = [r for r, _ in helpful_probe(40)]

    # Built as make_backend builds the service's generator (same defaults, prefix reuse on).
    generator = LlamaCppGenerator(packaged=model)
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
    cfg = LabelerAppConfig(backend="llamacpp", packaged=model, store_path=str(store), port=port)
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
    }
    print(json.dumps(results, indent=2))
    stamp = time.strftime("%Y-%m-%d %H:%M")
    h, w = results["cached_handle_ms"], results["cached_http_ms"]
    lines = [
        f"# Labeler speed (embedded {model}, llama.cpp)",
        "",
        f"Command: `python -m bench.labeler --model {model}` — {stamp}, {os.cpu_count()} CPUs, "
        f"load average at end {os.getloadavg()[0]:.1f}. {len(requests)} helpful requests "
        "(NetHack captions).",
        "",
        "| measure | value |",
        "|---|---|",
        f"| raw generation, generator called directly | {raw_rate:.2f} labels/s |",
        f"| cold, through Serve (handle, one batch, empty store) | {cold_rate:.2f} labels/s "
        f"= **{cold_rate / raw_rate:.2f} x raw** |",
        f"| cached, handle round trip | p50 {h['p50']:.1f} ms, p99 {h['p99']:.1f} ms |",
        f"| cached, HTTP round trip | p50 {w['p50']:.1f} ms, p99 {w['p99']:.1f} ms |",
    ]
    out = ROOT / "bench" / "results"
    (out / "labeler.md").write_text("\n".join(lines) + "\n")
    (out / "labeler.json").write_text(
        json.dumps({"date": stamp, "model": model, **results}, indent=2)
    )
    print(f"wrote {out / 'labeler.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
