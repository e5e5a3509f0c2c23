"""BK-Pref at RL time (BK's ``PreferenceModel.compute_reward``): Phi(s_t) = the trained model's
reward of the current state of the window of the last ``horizon`` states, for every window of
a train batch in one batched forward pass, in process or through the reward-model app
(:class:`PreferencePotential`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rl_bk.knowledge.trajectory import Chunk
from rl_bk.labeling.transport import transport_to
from rl_bk.methods.bk.preference.model import ModelConfig, chunk_windows, flat_inputs, load_model
from rl_bk.methods.bk.sources import WindowMemo, split_by_chunk
from rl_bk.reward_models.scoring import RewardModels

#: The reward-model app takes at most this many inputs per request (its MAX_ITEMS).
SERVED_BATCH = 4096
LOCAL_BATCH = 8192  # windows per forward pass
SERVED_TIMEOUT_S = 120.0  # one call of the reward-model app, before it counts as failed
#: States and windows remembered across batches (the state encodings: 512 B each).
MEMO_CAPACITY = 200_000


class PreferencePotential:
    """PotentialSource "bk-pref". ``horizon``: states per window, at most the trained one
    (a shorter window is left-padded, as the first states of a chunk are).

    One call scores every window of every chunk of a train batch in one batched forward pass
    (CPU, ``torch.no_grad``; it does not touch torch's thread count, so a learner that set one
    thread keeps it). With ``served=(name, version)`` the same rows go to the reward-model app
    instead (one call per 4096 windows): in process through
    :class:`rl_bk.reward_models.scoring.RewardModels`, through a Serve deployment handle, or
    over HTTP. The model and any client are built on first use and dropped when pickled, so
    the source travels to learners as a path and a few settings."""

    name = "bk-pref"

    def __init__(
        self,
        model_dir: str | Path,
        horizon: int | None = None,
        *,
        served: tuple[str, str] | None = None,
        endpoint: Any = None,
        reward_models_root: str | Path | None = None,
    ):
        """``served``: score through the registered TorchScript model ``(name, version)``
        rather than the local one. ``endpoint``: None (in-process ``RewardModels`` on
        ``reward_models_root``), an ``http://`` base URL of the app, ``"handle:<app name>"``
        (the app's deployment handle, looked up on first use), or a deployment handle."""
        self.model_dir = Path(model_dir)
        self._horizon = horizon
        self.served = tuple(served) if served else None
        self.endpoint = endpoint
        self.reward_models_root = reward_models_root
        self._model: Any = None
        self._config: Any = None
        self._scorer: Any = None
        self._memo = WindowMemo(MEMO_CAPACITY)
        self._encoded: tuple[np.ndarray, np.ndarray] | None = None  # state id -> encoding
        self._encoded_clears = 0
        self._calls = 0
        self._states = 0
        self._seconds = 0.0

    @classmethod
    def from_dir(cls, out_dir: str | Path, horizon: int | None = None, **options: Any):
        return cls(out_dir, horizon, **options)

    # ------------------------------------------------------------------------ lazy state
    def _load(self) -> None:
        if self._config is not None:
            return

        if self.served:
            saved = json.loads((self.model_dir / "report.json").read_text())["config"]
            self._config = ModelConfig(**saved)
        else:
            self._model, self._config = load_model(self.model_dir)
        trained = self._config.horizon
        if self._horizon is None:
            self._horizon = trained
        if not 1 <= self._horizon <= trained:
            raise ValueError(
                f"bk-pref was trained on windows of {trained} states; "
                f"horizon {self._horizon} is out of 1..{trained}"
            )

    @property
    def horizon(self) -> int:
        """States per window (the trained one unless given; loads the model's config)."""
        self._load()
        return int(self._horizon)  # type: ignore[arg-type]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_model"] = state["_config"] = state["_scorer"] = None
        state["_memo"], state["_encoded"], state["_encoded_clears"] = (
            WindowMemo(MEMO_CAPACITY),
            None,
            0,
        )
        return state

    # --------------------------------------------------------------------------- scoring
    def __call__(self, chunks: Sequence[Chunk]) -> list[np.ndarray]:

        if not chunks:
            return []
        self._load()
        c = self._config
        started = time.perf_counter()
        obs, index, actions, valid = chunk_windows(chunks, c.horizon, c.n_actions)
        if len(obs) and obs.shape[1] != c.obs_dim:
            raise ValueError(
                f"bk-pref reads {c.obs_dim} observation values per state; "
                f"the chunks have {obs.shape[1]}"
            )
        # The model has ``c.horizon`` slots; a shorter horizon pads more of them.
        cut = c.horizon - self.horizon  # type: ignore[operator]
        index[:, :cut], actions[:, :cut], valid[:, :cut] = -1, c.n_actions, False
        # Windows scored in an earlier batch are looked up; each new distinct window is
        # scored once, each distinct state in them encoded once.
        memo = self._memo
        memo.start_batch()
        ids = memo.state_ids(row.tobytes() for row in obs)
        slots = memo.window_slots(ids, index)
        values, missing = memo.lookup(memo.window_keys(slots, actions))
        if missing:
            first = np.fromiter((rows[0] for rows in missing.values()), np.int64)
            if self.served:
                distinct_ids, first_state = np.unique(ids, return_index=True)
                rows = np.where(index[first] >= 0, np.searchsorted(distinct_ids, slots[first]), -1)
                new = self._served(obs[first_state], rows, actions[first], valid[first])
            else:
                new = self._local_by_id(obs, ids, slots[first], actions[first], valid[first])
            for window_rows, value in zip(missing.values(), new):
                values[window_rows] = value
            memo.store(missing, new)
        self._calls += 1
        self._states += len(index)
        self._seconds += time.perf_counter() - started
        return split_by_chunk(values, chunks)

    def _local_by_id(self, obs, ids, slots, actions, valid) -> np.ndarray:
        """Phi of windows given as state ids (``slots``, -1: padding): states encoded in an
        earlier batch are not encoded again (the conv encoder was ~40% of the model's cost)."""

        if self._encoded_clears != self._memo.clears:  # the ids were reset
            self._encoded, self._encoded_clears = None, self._memo.clears
        need = np.unique(slots[slots >= 0])
        size = int(ids.max()) + 1 if len(ids) else 0
        if self._encoded is None or len(self._encoded[0]) < size:  # grow by doubling
            old = self._encoded
            rows = max(size, 2 * len(old[0]) if old is not None else 0)
            self._encoded = (
                np.zeros((rows, self._config.n_embed), np.float32),
                np.zeros(rows, bool),
            )
            if old is not None:
                self._encoded[0][: len(old[0])], self._encoded[1][: len(old[1])] = old
        table, filled = self._encoded
        todo = need[~filled[need]]
        with torch.no_grad():
            if len(todo):
                distinct_ids, first_state = np.unique(ids, return_index=True)
                rows_of_todo = first_state[np.searchsorted(distinct_ids, todo)]
                states = torch.from_numpy(obs[rows_of_todo]).unsqueeze(0)
                table[todo] = self._model.state_encoder(states)[0].numpy()
                filled[todo] = True
            out = []
            for s in range(0, len(slots), LOCAL_BATCH):
                part = slots[s : s + LOCAL_BATCH]
                used = np.unique(part[part >= 0])
                encoded = torch.from_numpy(
                    np.concatenate([table[used], np.zeros((1, table.shape[1]), np.float32)])
                )  # padding row
                rows = np.where(part >= 0, np.searchsorted(used, part), len(used))
                phi = self._model.last_state_potential(
                    encoded[torch.from_numpy(rows)],
                    torch.from_numpy(actions[s : s + LOCAL_BATCH]),
                    torch.from_numpy(valid[s : s + LOCAL_BATCH]),
                )
                out.append(phi.numpy())
        return np.concatenate(out).astype(np.float64) if out else np.zeros(0)

    def _served(self, obs, index, actions, valid) -> np.ndarray:

        windows_obs = np.where(valid[..., None], obs[np.clip(index, 0, None)], 0.0)
        rows = flat_inputs(windows_obs.astype(np.float32), actions, valid)
        out: list[float] = []
        for start in range(0, len(rows), SERVED_BATCH):
            out += self._score(rows[start : start + SERVED_BATCH].tolist())
        return np.asarray(out, np.float64)

    def _score(self, inputs: list[list[float]]) -> list[float]:
        name, version = self.served  # type: ignore[misc]
        if self._scorer is None:
            if self.endpoint is not None:  # the reward-model app: handle or HTTP
                self._scorer = transport_to(self.endpoint)
            else:
                root = self.reward_models_root
                self._scorer = RewardModels(str(root) if root else None)
        if self.endpoint is not None:
            return self._scorer.score(name, version, inputs, timeout_s=SERVED_TIMEOUT_S)
        return self._scorer.score(name, version, inputs)

    def metrics(self) -> dict[str, float]:
        per_call = self._seconds / self._calls if self._calls else 0.0
        return {
            "calls": float(self._calls),
            "states": float(self._states),
            "seconds_per_call": per_call,
            "window_memo_hit_rate": self._memo.hit_rate(),
        }

    def __repr__(self) -> str:
        how = f", served={self.served}" if self.served else ""
        return f"PreferencePotential({str(self.model_dir)!r}, horizon={self._horizon}{how})"
