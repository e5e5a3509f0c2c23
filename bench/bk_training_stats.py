"""The reference check's runs seen from the training side: what each implementation's agent did
while it trained, not only what its greedy policy scored.

``bench/bk_reference_check.py`` compares the greedy evaluations of BK's ``train_rs.py`` and
rl-bk on RedBall-S20. This reads the same runs' training logs (every part it recorded,
pooled seeds included): BK's TensorBoard scalars (``train/episodic_return``, its mean over the
episodes that ended since the last log, every 20k env steps; the policy's entropy; the value
loss) and rl-bk's per-iteration results (the env runners' return over the last 100 episodes,
the learner's entropy and value loss), each averaged over env-step windows, per seed; then per
potential, rl-bk minus BK with Welch's 95% t interval (unpaired: the two seed their RNGs
their own way).

    python -m bench.bk_training_stats                # bench/results/bk-training-stats.{md,json}
    python -m bench.bk_training_stats --report-only  # the .md again from the .json

Nothing here runs a trial: it needs the reference check's run folders on this machine.
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "bench" / "results" / "bk-reference-check.json"
OUT = ROOT / "bench" / "results" / "bk-training-stats"

#: Env-step windows the measures are averaged over (the last one takes the final log).
WINDOWS = [(0, 100_000), (100_000, 200_000), (200_000, 310_000)]
#: measure -> (BK's TensorBoard tag, rl-bk's result keys)
MEASURES = {
    "training return": ("train/episodic_return", ("env_runners", "episode_return_mean")),
    "training episode length": ("train/episodic_length", ("env_runners", "episode_len_mean")),
    "policy entropy": ("learner/entropy_loss", ("learners", "default_policy", "entropy")),
    "value loss": ("learner/value_loss", ("learners", "default_policy", "vf_loss")),
}


def tensorboard_scalars(path: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of a TensorBoard event file: tag -> [(step, value)], in file order. The
    file is TFRecord (length, its CRC, the event, its CRC); the events are tensorboardX's
    protobuf."""
    from tensorboardX.proto import event_pb2

    out: dict[str, list[tuple[int, float]]] = {}
    data = path.read_bytes()
    at = 0
    while at + 12 <= len(data):
        (n,) = struct.unpack("<Q", data[at : at + 8])
        event = event_pb2.Event()
        event.ParseFromString(data[at + 12 : at + 12 + n])
        at += 12 + n + 4
        for v in event.summary.value:
            if v.HasField("simple_value"):
                out.setdefault(v.tag, []).append((int(event.step), float(v.simple_value)))
            elif v.tensor.float_val:
                out.setdefault(v.tag, []).append((int(event.step), float(v.tensor.float_val[0])))
    return out


def rl_bk_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """The measures of a one-trial rl-bk run: measure -> [(env steps, value)] per iteration."""
    results = sorted(run_dir.glob("tune/*/result.json"))
    if len(results) != 1:
        raise SystemExit(f"{run_dir} holds {len(results)} trials, not one")
    out: dict[str, list[tuple[int, float]]] = {m: [] for m in MEASURES}
    for line in results[0].read_text().splitlines():
        row = json.loads(line)
        for measure, (_, path) in MEASURES.items():
            value = row
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, (int, float)) and math.isfinite(value):
                out[measure].append((int(row["num_env_steps_sampled_lifetime"]), float(value)))
    return out


def bk_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    files = sorted(run_dir.glob("tensorboard/events.out.tfevents.*"))
    if len(files) != 1:
        raise SystemExit(f"{run_dir}: {len(files)} TensorBoard event files, not one")
    tags = tensorboard_scalars(files[0])
    return {m: tags.get(tag, []) for m, (tag, _) in MEASURES.items()}


def window_means(points: list[tuple[int, float]]) -> list[float]:
    """The mean of the points in each of :data:`WINDOWS` (NaN where none)."""
    out = []
    for low, high in WINDOWS:
        inside = [v for s, v in points if low < s <= high]
        out.append(float(np.mean(inside)) if inside else math.nan)
    return out


def part_runs(check: dict) -> dict[str, dict]:
    """Every recorded part of the reference check (its plan's seeds and the pooled ones)."""
    return {**check.get("finished", {}), **check.get("pooled_parts", {})}


def collect(check: dict) -> dict[str, dict]:
    """part -> its implementation, potential, seed and per-measure window means."""
    out = {}
    for part, record in part_runs(check).items():
        run_dir = ROOT / record["run_dir"]
        if not run_dir.is_dir():
            raise SystemExit(
                f"{part}: its run folder {record['run_dir']} is not on this machine;"
                " run the reference check here first"
            )
        bk = record["implementation"] == "bk"
        scalars = bk_scalars(run_dir) if bk else rl_bk_scalars(run_dir)
        out[part] = {
            "implementation": record["implementation"],
            "potential": record["potential"],
            "seed": int(record["seed"]),
            "windows": {m: window_means(p) for m, p in scalars.items()},
        }
    return out


def report(parts: dict[str, dict]) -> list[str]:
    from bench.learning_measures import interval_text, signed, unpaired_difference

    heads = [f"{lo // 1000}–{hi // 1000 if hi < 310_000 else 300}k" for lo, hi in WINDOWS]
    lines = [
        "# The reference check's runs, training side",
        "",
        "`python -m bench.bk_training_stats`: BK's `train_rs.py` and rl-bk on RedBall-S20, "
        "every part `bench/results/bk-reference-check.json` records (pooled seeds "
        "included), read from their training logs. Each cell: the mean over seeds of each "
        "run's mean in the env-step window (BK logs every 20k env steps; rl-bk every "
        "iteration, its return and length over the last 100 episodes), ± the std over "
        "seeds; then rl-bk minus BK with Welch's 95% t interval (unpaired).",
        "",
    ]
    for potential in sorted({p["potential"] for p in parts.values()}):
        lines += [
            f"## {potential} potential",
            "",
            "| measure | implementation | seeds | " + " | ".join(heads) + " |",
            "|---|---|---|" + "---|" * len(heads),
        ]
        diffs = []
        for measure in MEASURES:
            groups = {}
            for impl in ("bk", "rl-bk"):
                runs = sorted(
                    (
                        p
                        for p in parts.values()
                        if p["potential"] == potential and p["implementation"] == impl
                    ),
                    key=lambda p: p["seed"],
                )
                groups[impl] = np.array([p["windows"][measure] for p in runs], dtype=float)
                cells = [
                    f"{np.nanmean(col):.3f} ± {np.nanstd(col, ddof=1):.3f}"
                    if len(col) > 1
                    else f"{np.nanmean(col):.3f}"
                    for col in groups[impl].T
                ]
                lines.append(f"| {measure} | {impl} | {len(runs)} | " + " | ".join(cells) + " |")
            if min(len(g) for g in groups.values()) < 2:
                continue  # a side with under two seeds (its runs still to come) has no interval
            for w, head in enumerate(heads):
                d = unpaired_difference(groups["rl-bk"][:, w], groups["bk"][:, w])
                diffs.append(f"| {measure} | {head} | {signed(d.mean)} | {interval_text(d)} |")
        if diffs:
            lines += [
                "",
                "rl-bk minus BK:",
                "",
                "| measure | window | difference | Welch's 95% t interval |",
                "|---|---|---|---|",
                *diffs,
                "",
            ]
        else:
            lines += ["", "rl-bk minus BK: not yet (a side has under two seeds).", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--report-only",
        action="store_true",
        help="rewrite the report from the parts its JSON keeps (no training logs)",
    )
    args = p.parse_args(argv)
    if args.report_only:
        parts = json.loads(OUT.with_suffix(".json").read_text())["parts"]
    else:
        if not CHECK.is_file():
            raise SystemExit(f"{CHECK} is missing: run python -m bench.bk_reference_check first")
        parts = collect(json.loads(CHECK.read_text()))
        OUT.with_suffix(".json").write_text(
            json.dumps(
                {
                    "command": "python -m bench.bk_training_stats",
                    "windows": WINDOWS,
                    "parts": parts,
                },
                indent=1,
            )
        )
    from bench.study import write_keeping_reading

    text = "\n".join(report(parts)) + "\n"
    write_keeping_reading(OUT.with_suffix(".md"), text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
