"""Each packaged model's agreement with the oracle on the probe sets made from the envs
(`rl_bk/experiments/labeler_probes.py` holds the probe sets, answer modes and measures;
`rl-bk probe` runs them for any one labeller).

    python -m bench.labeler_quality                                  # every model, every kind
    python -m bench.labeler_quality --models qwen2.5-coder-1.5b --kinds preference,helpful

Writes bench/results/labeler_quality.json (results merged by model and kind, so a run may
cover a part) and renders bench/results/labeler_quality.md from it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rl_bk.experiments.labeler_probes import KINDS, make_probes, probe_labeller, render_markdown
from rl_bk.labeling.backends.registry import make_backend
from rl_bk.labeling.config import LabelerConfig

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "labeler_quality"
MODELS = ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2", "gemma3-270m")
INTRO = """# Labeller quality: agreement with the oracle on probe sets made from the envs

Command: `python -m bench.labeler_quality` (parts of it per model, merged). Machine: 2 cores;
llama.cpp, 2 threads. Probe sets, answer modes and measures: docs/labeler.md, "The probe
sets" (`rl_bk/experiments/labeler_probes.py`). The oracle's rules are the reference (they are
not an LLM); chance on the closed kinds is 0.50 (balanced answers).

"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="oracle," + ",".join(MODELS))
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--action-states", type=int, default=100, help="states for action-scores")
    p.add_argument("--items", type=int, default=200, help="items per closed kind")
    p.add_argument("--goal-states", type=int, default=50, help="states per open kind")
    p.add_argument(
        "--text-items",
        type=int,
        default=200,
        help="items of each closed kind also asked as text (0: none)",
    )
    args = p.parse_args(argv)
    path = RESULTS.with_suffix(".json")
    data = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault("results", {})
    probes = make_probes(args.kinds.split(","), args.items, args.goal_states, args.action_states)
    for model in args.models.split(","):
        if model == "oracle":
            backend = make_backend(LabelerConfig(backend="oracle"))
        else:
            backend = make_backend(LabelerConfig(backend="llamacpp", packaged=model))  # type: ignore[arg-type]
        entry = data["results"].setdefault(model, {})
        entry["model"] = "oracle (rules; the reference)" if model == "oracle" else backend.model
        for kind, items in probes.items():  # one kind at a time, saved as it comes
            entry.update(probe_labeller(backend, {kind: items}, text_items=args.text_items))
            path.write_text(json.dumps(data, indent=1))
            RESULTS.with_suffix(".md").write_text(INTRO + render_markdown(data))
        del backend
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
