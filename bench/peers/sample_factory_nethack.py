"""sample-factory's APPO on rl-bk's NetHack-Text Score env, for bench/peer_throughput.py.

Runs in the peers' own environment (sample-factory 2.1.1 pins gymnasium<1.0 and numpy<2,
which rl-bk's Ray cannot share): ``python -m bench.peers.sample_factory_nethack OUT_JSON
[sample-factory flags]``. It imports only ``env_registry.nethack`` from this repository, so
both trainers step the same env code (the caption wrapper included). Writes the env steps and
the wall times of sample-factory's own throughput reports, and each process's CPU seconds by
role, to OUT_JSON.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from pathlib import Path

import psutil
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.train import run_rl

from env_registry.nethack import env as nethack

ENV_NAME = "NetHack-Text-Score-v0"
ROLES_DIR = Path(os.environ.get("PEER_ROLES_DIR", "/tmp/peer-roles"))


def make_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    # Called in the process that steps the env: record it, so its CPU time counts as "env".
    ROLES_DIR.mkdir(parents=True, exist_ok=True)
    (ROLES_DIR / f"{os.getpid()}.env").touch()
    (spec,) = [s for s in nethack.SPECS if s.name == ENV_NAME]
    return spec.build(None)


class CpuWatch(threading.Thread):
    """Every second, the CPU seconds of this process and each descendant (kept after exit)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.cpu: dict[int, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        me = psutil.Process()
        while not self.stop.wait(1.0):
            for p in [me, *me.children(recursive=True)]:
                try:
                    t = p.cpu_times()
                    self.cpu[p.pid] = t.user + t.system
                except psutil.Error:
                    pass


def main() -> int:
    out, argv = Path(sys.argv[1]), sys.argv[2:]
    register_env("nethack_text_score", make_env)
    parser, _ = parse_sf_args(argv=argv, evaluation=False)
    cfg = parse_full_cfg(parser, argv)
    watch = CpuWatch()
    watch.start()
    started = time.time()
    status = run_rl(cfg)
    wall = time.time() - started
    watch.stop.set()
    log = Path(cfg.train_dir) / cfg.experiment / "sf_log.txt"
    reports = []
    for line in log.read_text().splitlines():
        m = re.search(r"^\[(\S+ \S+)\]\[(\d+)\] Fps is .*Total num frames: (\d+)", line)
        if m:
            stamp = time.mktime(time.strptime(m.group(1).split(",")[0], "%Y-%m-%d %H:%M:%S"))
            stamp += int(m.group(1).split(",")[1]) / 1000
            reports.append((stamp, int(m.group(3))))
    # Log lines name their process with a zero-padded pid: keys are plain pids.
    roles: dict[str, str] = {str(os.getpid()): "main"}
    for line in log.read_text().splitlines():
        m = re.search(r"^\[\S+ \S+\]\[(\d+)\] (.*)$", line)
        if not m:
            continue
        pid, text = str(int(m.group(1))), m.group(2)
        if "Inference worker" in text or "InferenceWorker" in text:
            roles.setdefault(pid, "inference")
        elif "Learner" in text or "learner" in text:
            roles.setdefault(pid, "learner")
    for f in ROLES_DIR.glob("*.env"):
        roles[f.stem] = "env"
    out.write_text(
        json.dumps(
            {
                "status": int(status),
                "wall_s": wall,
                "reports": reports,
                "cpu_s": {str(pid): s for pid, s in watch.cpu.items()},
                "roles": roles,
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
