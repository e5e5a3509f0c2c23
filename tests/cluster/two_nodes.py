"""A two-node Ray cluster on one machine, as a cluster's worker node sees the head: the
worker runs in a private mount namespace where the given folders (the head's knowledge cache,
its results folder) are empty tmpfs mounts, so anything a trial reads from the driver's disk
instead of shared storage fails there as it would on a real worker node. Token
authentication is on, and the worker joins with the head's token (as cluster.yaml gives it).

Needs root (``unshare --mount`` and ``mount -t tmpfs``). Nodes are stopped by killing their
``ray start --block`` process groups, never with ``ray stop``, which would stop every Ray
instance on the machine.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def can_run() -> str | None:
    """Why this machine cannot run it, or None."""
    if os.geteuid() != 0:
        return "needs root for a private mount namespace (unshare --mount)"
    if shutil.which("unshare") is None or shutil.which("ray") is None:
        return "needs util-linux's unshare and Ray's `ray` command"
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True
    )
    return None if probe.returncode == 0 else "unshare --mount is not permitted here"


class TwoNodeCluster:
    def __init__(
        self,
        hidden: list[Path],
        *,
        head_cpus: int = 0,
        worker_cpus: int = 4,
        head_resources: dict | None = None,
        log_dir: Path,
    ):
        self.hidden = [Path(p).expanduser().resolve() for p in hidden]
        self.head_cpus, self.worker_cpus = head_cpus, worker_cpus
        self.head_resources = head_resources or {"llm_node": 1}
        self.log_dir = Path(log_dir)
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)}
        self._head: subprocess.Popen | None = None
        self._worker: subprocess.Popen | None = None

    def _popen(self, command: str, log: str) -> subprocess.Popen:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        out = open(self.log_dir / log, "ab")
        return subprocess.Popen(
            ["sh", "-c", command],
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def start(self, timeout_s: float = 120.0) -> TwoNodeCluster:
        resources = shlex.quote(json.dumps(self.head_resources))
        self._head = self._popen(
            f"exec ray start --head --port={self.port} --num-cpus={self.head_cpus} "
            f"--resources={resources} --include-dashboard=false --disable-usage-stats --block",
            "head.log",
        )
        self._wait_for_nodes(1, timeout_s)
        self.start_worker(timeout_s)
        return self

    def start_worker(self, timeout_s: float = 120.0) -> None:
        mounts = " && ".join(
            f"mkdir -p {shlex.quote(str(p))} && mount -t tmpfs none {shlex.quote(str(p))}"
            for p in self.hidden
        )
        self._worker = self._popen(
            "exec unshare --mount --propagation private sh -c "
            + shlex.quote(
                f"{mounts} && exec ray start --address={self.address} "
                f"--num-cpus={self.worker_cpus} --disable-usage-stats --block"
            ),
            "worker.log",
        )
        self._wait_for_nodes(2, timeout_s)

    def alive_nodes(self) -> int:
        probe = subprocess.run(
            [
                "python",
                "-c",
                f"import ray; ray.init(address='{self.address}', "
                "logging_level='ERROR'); print(sum(n['Alive'] for n in ray.nodes()))",
            ],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        lines = probe.stdout.strip().splitlines()
        return int(lines[-1]) if probe.returncode == 0 and lines else 0

    def _wait_for_nodes(self, n: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.alive_nodes() >= n:
                return
            time.sleep(2)
        raise TimeoutError(
            f"the cluster did not reach {n} nodes in {timeout_s:.0f} s; see {self.log_dir}"
        )

    @staticmethod
    def _kill(process: subprocess.Popen | None) -> None:
        if process is None or process.poll() is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(timeout=20)
                return
            except subprocess.TimeoutExpired:
                continue

    def kill_worker(self) -> None:
        """The worker node goes away, as a lost cloud instance does."""
        self._kill(self._worker)
        self._worker = None

    def stop(self) -> None:
        self._kill(self._worker)
        self._kill(self._head)
        # `ray start --head` left its address for later ray.init() calls to connect to; a
        # dead head's address would make them fail instead of starting their own instance.
        current = Path("/tmp/ray/ray_current_cluster")
        if current.is_file() and current.read_text().strip().endswith(f":{self.port}"):
            current.unlink()
