"""Checks, before any knowledge build or trial starts, that a sweep attached to a Ray cluster
of several nodes can work there: Tune's storage, and a label store that trials write
themselves, must each be one folder every node sees. Without it a trial on another node dies
at its first checkpoint ("Unable to set up cluster storage"), or reads knowledge or labels
that are not there. "Sees" is tested, not assumed: a marker file written here must exist from
a zero-CPU task pinned to each alive node. Details: docs/cluster.md.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from rl_bk.storage import is_uri

CLUSTER_DOC = "docs/cluster.md"


class ClusterSetupError(ValueError):
    """A setting that cannot work across the cluster's nodes (one sentence says which)."""


def alive_nodes() -> list[dict]:
    return [n for n in ray.nodes() if n.get("Alive")]


def nodes_not_seeing(folder: str | os.PathLike, nodes: list[dict]) -> list[str]:
    """The addresses of the nodes on which ``folder`` (as this process sees it) is not the
    same folder: a marker written here is missing there."""
    marker = Path(folder) / f".rlbk-preflight-{uuid.uuid4().hex}"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("rl-bk checks that every node sees this folder\n")

    @ray.remote(num_cpus=0)
    def exists(path: str) -> bool:
        return os.path.exists(path)

    try:
        # Keyed by node id: several nodes may share an address (one machine, several raylets).
        seen = {
            f"{n['NodeManagerAddress']} (node {n['NodeID'][:8]})": exists.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
            ).remote(str(marker))
            for n in nodes
        }
        return [node for node, ref in seen.items() if not ray.get(ref, timeout=120)]
    finally:
        marker.unlink(missing_ok=True)


def check_cluster_paths(storage: str | None, label_store: str | None = None) -> None:
    """Raises :class:`ClusterSetupError` when Ray (already attached) has more than one alive
    node and Tune's ``storage``, or the ``label_store`` file trials write (None: none), is not
    a folder every node sees. Nothing to check on one node."""
    nodes = alive_nodes()
    if len(nodes) <= 1:
        return
    if storage is None:
        raise ClusterSetupError(
            f"this Ray cluster has {len(nodes)} nodes but the run has no storage they all see: "
            "give --storage (or set RLBK_STORAGE) a shared folder or an s3:// / gs:// URI "
            f"({CLUSTER_DOC})"
        )
    if not is_uri(storage) and (missing := nodes_not_seeing(storage, nodes)):
        raise ClusterSetupError(
            f"--storage {storage} is not the same folder on node(s) {', '.join(missing)}: "
            "give --storage (or RLBK_STORAGE) a folder every node mounts, or an s3:// / gs:// "
            f"URI ({CLUSTER_DOC})"
        )
    if label_store is not None and (missing := nodes_not_seeing(Path(label_store).parent, nodes)):
        raise ClusterSetupError(
            f"trials would write labels to {label_store}, which node(s) {', '.join(missing)} "
            "do not see: label through the sweep's Serve labeler (--labeler serve) or set "
            f"RLBK_LABEL_STORE to a file on storage every node mounts ({CLUSTER_DOC})"
        )
