"""The trajectory dataset offline knowledge is learned from: whole episodes on disk, as Parquet,
one row per state (:data:`COLUMNS`), in a folder of ``part-*.parquet`` files so that
collectors on several workers write side by side, beside a ``metadata.json`` that says which
env and policy made it. BK's builders, Motif, PTGM's pre-training and BC-PPO read it;
RND-PPO's precollection and the knowledge pipeline's collect stage write it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rl_bk.knowledge.trajectory import Chunk

#: One row per state. An episode of ``n`` steps has ``n + 1`` rows; row ``t`` holds state
#: ``t``, the action taken in it and the reward that action earned. The last row holds the
#: final state, with ``action = -1`` and ``reward = 0``, and the episode's terminated/truncated
#: flags (False on every other row).
COLUMNS = (
    "episode_id",
    "t",
    "observation",
    "caption",
    "action",
    "reward",
    "terminated",
    "truncated",
    "mission",
)


class DatasetError(ValueError):
    pass


def write_episodes(
    folder: str | Path,
    episodes: Sequence[Chunk],
    metadata: dict | None = None,
    part: str | None = None,
) -> Path:
    """Appends whole episodes to the dataset in ``folder`` as one new part file."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list] = {c: [] for c in COLUMNS}
    for ep in episodes:
        eid = ep.episode_id or uuid.uuid4().hex
        n = len(ep)
        for t in range(n + 1):
            last = t == n
            rows["episode_id"].append(eid)
            rows["t"].append(t)
            rows["observation"].append(np.asarray(ep.observations[t], np.float32))
            rows["caption"].append(ep.captions[t])
            rows["action"].append(-1 if last else int(ep.actions[t]))
            rows["reward"].append(0.0 if last else float(ep.rewards[t]))
            rows["terminated"].append(bool(last and ep.terminated))
            rows["truncated"].append(bool(last and ep.truncated))
            rows["mission"].append(ep.mission)
    table = pa.table(
        {
            **{k: rows[k] for k in COLUMNS if k != "observation"},
            "observation": pa.array(
                [o.tolist() for o in rows["observation"]], type=pa.list_(pa.float32())
            ),
        }
    )
    # Names sort in writing order (read_episodes reads parts sorted by name).
    path = folder / f"part-{part or f'{time.time_ns()}-{uuid.uuid4().hex[:6]}'}.parquet"
    pq.write_table(table.select(list(COLUMNS)), path)
    if metadata is not None:
        (folder / "metadata.json").write_text(json.dumps(metadata, indent=2, sort_keys=True))
    return path


def read_metadata(folder: str | Path) -> dict:
    path = Path(folder) / "metadata.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def read_episodes(folder: str | Path, limit: int | None = None) -> list[Chunk]:
    """Every whole episode of the dataset (the first ``limit``), as chunks, in file order."""
    parts = sorted(Path(folder).glob("part-*.parquet"))
    if not parts:
        raise DatasetError(
            f"no dataset at {folder} (no part-*.parquet files): collect one "
            "first, e.g. `rl-bk knowledge collect --task <task>`"
        )
    episodes: list[Chunk] = []
    for part in parts:
        df = pq.read_table(part).to_pandas()
        for eid, g in df.groupby("episode_id", sort=False):
            g = g.sort_values("t")
            episodes.append(
                Chunk(
                    observations=np.stack(g["observation"].to_numpy()),
                    captions=g["caption"].tolist(),
                    actions=g["action"].to_numpy()[:-1],
                    rewards=g["reward"].to_numpy()[:-1],
                    terminated=bool(g["terminated"].iloc[-1]),
                    truncated=bool(g["truncated"].iloc[-1]),
                    mission=m if isinstance(m := g["mission"].iloc[0], str) else None,
                    episode_id=str(eid),
                )
            )
            if limit is not None and len(episodes) >= limit:
                return episodes
    return episodes


def sample_segments(
    episodes: Sequence[Chunk], length: int, count: int, rng: np.random.Generator
) -> list[Chunk]:
    """``count`` random segments of ``length`` steps (``length + 1`` states) from episodes long
    enough to hold one, each from a uniformly drawn episode, at a uniform start."""
    usable = [ep for ep in episodes if len(ep) >= length]
    if not usable:
        raise DatasetError(f"no episode in the dataset has {length} steps")
    out = []
    for _ in range(count):
        ep = usable[int(rng.integers(len(usable)))]
        s = int(rng.integers(len(ep) - length + 1))
        out.append(
            Chunk(
                ep.observations[s : s + length + 1],
                ep.captions[s : s + length + 1],
                ep.actions[s : s + length],
                ep.rewards[s : s + length],
                terminated=ep.terminated and s + length == len(ep),
                truncated=ep.truncated and s + length == len(ep),
                mission=ep.mission,
                episode_id=ep.episode_id,
            )
        )
    return out
