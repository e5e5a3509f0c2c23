"""Throughput ratios measured side by side: every configuration trains one iteration per round,
in turn, so load from other processes on this shared machine hits them alike; a ratio is
taken within a round, then the median over rounds is reported."""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from collections.abc import Mapping
from typing import Any


def train_in_rounds(
    algos: Mapping[str, Any], rounds: int, warmup: int, extra: Any = None, before: Any = None
) -> dict[str, list[float]]:
    """Env steps/s of each algorithm's iterations (sampled steps / the iteration's wall time,
    sampling and learning), after ``warmup`` rounds. ``extra(name, result)`` sees each result;
    ``before(name)`` runs, untimed, before each iteration."""
    rates: dict[str, list[float]] = {n: [] for n in algos}
    for r in range(warmup + rounds):
        for name, algo in algos.items():
            if before is not None:
                before(name)
            started = time.perf_counter()
            result = algo.train()
            seconds = time.perf_counter() - started
            if r >= warmup:
                rates[name].append(result["env_runners"]["num_env_steps_sampled"] / seconds)
                if extra is not None:
                    extra(name, result)
        shown = ", ".join(f"{n} {v[-1]:.0f}/s" for n, v in rates.items() if v)
        print(f"round {r}: {shown or 'warm-up'}", flush=True)
    return rates


def ratio_rows(rates: Mapping[str, list[float]], baseline: str) -> list[dict[str, Any]]:
    rows = []
    for name, values in rates.items():
        ratios = [v / b for v, b in zip(values, rates[baseline])]
        rows.append(
            {
                "name": name,
                "median env steps/s": statistics.median(values),
                "median ratio": statistics.median(ratios),
                "mean ratio": statistics.fmean(ratios),
                "min ratio": min(ratios),
                "max ratio": max(ratios),
            }
        )
    return rows


def ratio_table(rows: list[dict[str, Any]], first_column: str, baseline: str) -> str:
    lines = [
        f"| {first_column} | median env steps/s | ratio to {baseline} (median, same round) "
        "| mean | min | max |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['name']} | {row['median env steps/s']:.0f} | "
            f"{row['median ratio']:.2f} | {row['mean ratio']:.2f} | "
            f"{row['min ratio']:.2f} | {row['max ratio']:.2f} |"
        )
    return "\n".join(lines)


def run_facts(script: str) -> dict[str, Any]:
    """The command (as typed), machine and date, for the results file."""
    return {
        "command": " ".join(["python", script, *sys.argv[1:]]),
        "machine": f"{platform.node()} {os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
