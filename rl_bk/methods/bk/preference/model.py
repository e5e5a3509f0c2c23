"""The BK-Pref potential: a Preference Transformer whose per-step reward is Phi (BK's
``models/preference_transformer.py``, mansicer/background-knowledge-rl), on the project's flat
observation vectors: one token per state, the current state's included, an MLP or BK's conv
encoder, one causal layer. How and why it departs from BK's:
docs/methods.md#bk-prefs-model. :class:`FlatPotential` wraps it for TorchScript, so the
reward-model app can serve it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from rl_bk.knowledge.trajectory import Chunk, Window, window_index

#: Weight of BK's smoothing term: mean(-log_softmax) over both segments of every pair.
SMOOTHING_WEIGHT = 0.3

#: Families whose flat observation starts with a symbolic grid, as (width, height, channels)
#: in the order the env flattens it (``env_registry/babyai/env.py``: minigrid's image).
GRID_LAYOUTS: dict[str, tuple[int, int, int]] = {"babyai": (7, 7, 3)}


@dataclass(frozen=True)
class ModelConfig:
    """Everything needed to rebuild the network from its state dict (saved in model.pt)."""

    obs_dim: int
    n_actions: int
    horizon: int = 5  # states per window (tokens), the current one included
    n_embed: int = 128
    n_layers: int = 1
    n_heads: int = 1
    ff_dim: int = 512
    grid: tuple[int, int, int] | None = None  # None: an MLP reads the whole vector

    def __post_init__(self) -> None:
        if self.grid is not None:  # JSON and torch.load give lists
            object.__setattr__(self, "grid", tuple(int(v) for v in self.grid))
            if math.prod(self.grid) > self.obs_dim:
                raise ValueError(f"a {self.grid} grid does not fit in {self.obs_dim} values")

    def as_dict(self) -> dict:
        """Plain JSON values (the grid as a list), as report.json and model.pt hold them."""
        out = asdict(self)
        out["grid"] = list(self.grid) if self.grid is not None else None
        return out

    @property
    def input_dim(self) -> int:
        """Width of one flat row: per slot, the observation, the action id and a valid flag."""
        return self.horizon * (self.obs_dim + 2)


def _attention_mask(valid: torch.Tensor) -> torch.Tensor:
    """(B, T, T) bool, True where query i may NOT attend to key j: the future, and padding.

    A padded slot still attends to itself, so no softmax row is empty (an empty row gives NaN,
    and NaN times a zero weight is still NaN in the next product)."""
    t = valid.shape[1]
    future = torch.triu(torch.ones(t, t, dtype=torch.bool, device=valid.device), diagonal=1)
    padded_key = ~valid.unsqueeze(1)  # (B, 1, T)
    eye = torch.eye(t, dtype=torch.bool, device=valid.device)
    return (future.unsqueeze(0) | padded_key) & ~eye.unsqueeze(0)


class GridEncoder(nn.Module):
    """BK's StateProcessor (three 3x3 convs, 32-64-64 channels, then two linear layers) on
    the observation's leading grid; the values after the grid (BabyAI: the mission code) join
    before the linear layers."""

    def __init__(self, grid: tuple[int, int, int], obs_dim: int, n_embed: int, hidden: int = 256):
        super().__init__()
        self.width, self.height, self.channels = grid
        self.grid_values = self.width * self.height * self.channels
        self.conv = nn.Sequential(
            nn.Conv2d(self.channels, 32, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1),
            nn.ReLU(),
        )
        features = 64 * self.width * self.height + obs_dim - self.grid_values
        self.out = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, n_embed))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, T, obs_dim) -> (B, T, n_embed)."""
        b, t = obs.shape[0], obs.shape[1]
        x = obs.reshape(b * t, obs.shape[2])
        g = x[:, : self.grid_values].reshape(b * t, self.width, self.height, self.channels)
        h = self.conv(g.permute(0, 3, 1, 2)).flatten(1)
        return self.out(torch.cat([h, x[:, self.grid_values :]], dim=1)).reshape(b, t, -1)


class PreferenceAttention(nn.Module):
    """BK's head: value = per-step reward; the segment logit is its causal attention sum.

    BK scales the scores by sqrt(value width) = 1, i.e. not at all; 1/sqrt(n_embed) keeps the
    softmax soft at initialisation, as in any attention layer."""

    def __init__(self, n_embed: int):
        super().__init__()
        self.query = nn.Linear(n_embed, n_embed)
        self.key = nn.Linear(n_embed, n_embed)
        self.value = nn.Linear(n_embed, 1)
        self.scale = 1.0 / math.sqrt(n_embed)

    def forward(
        self, x: torch.Tensor, blocked: torch.Tensor, valid: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(logit (B,), rewards (B, T)); padded slots add nothing to the logit."""
        rewards = self.value(x).squeeze(-1)
        scores = torch.bmm(self.query(x), self.key(x).transpose(1, 2)) * self.scale
        weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
        weighted = torch.bmm(weights, rewards.unsqueeze(-1)).squeeze(-1)
        logit = (weighted * valid.to(weighted.dtype)).sum(dim=1)
        return logit, rewards


class PreferenceTransformer(nn.Module):
    """Windows of ``horizon`` states -> per-state rewards and a segment logit."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        c = config
        self.horizon = c.horizon
        self.n_actions = c.n_actions
        self.n_heads = c.n_heads
        if c.grid is not None:
            self.state_encoder: nn.Module = GridEncoder(c.grid, c.obs_dim, c.n_embed)
        else:
            self.state_encoder = nn.Sequential(
                nn.Linear(c.obs_dim, c.n_embed), nn.ReLU(), nn.Linear(c.n_embed, c.n_embed)
            )
        self.action_embedding = nn.Embedding(c.n_actions + 1, c.n_embed)  # + "no action yet"
        self.slot_embedding = nn.Embedding(c.horizon, c.n_embed)
        self.layers = nn.ModuleList(
            [
                nn.TransformerEncoderLayer(
                    c.n_embed, c.n_heads, dim_feedforward=c.ff_dim, dropout=0.0, batch_first=True
                )
                for _ in range(c.n_layers)
            ]
        )
        self.head = PreferenceAttention(c.n_embed)

    def forward(
        self, obs: torch.Tensor, actions: torch.Tensor, valid: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """obs (B, T, obs_dim) float, actions (B, T) long, valid (B, T) bool, T <= horizon ->
        (segment logit (B,), per-state reward (B, T))."""
        return self.forward_encoded(self.state_encoder(obs), actions, valid)

    def forward_encoded(
        self, states: torch.Tensor, actions: torch.Tensor, valid: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward` from encoded states (B, T, n_embed)."""
        t = states.shape[1]
        slots = torch.arange(self.horizon - t, self.horizon, device=states.device)
        x = states + self.action_embedding(actions) + self.slot_embedding(slots)
        blocked = _attention_mask(valid)
        # nn.MultiheadAttention wants one (T, T) mask per batch row and head.
        mask = blocked.repeat_interleave(self.n_heads, dim=0)
        for layer in self.layers:
            x = layer(x, src_mask=mask)
        return self.head(x, blocked, valid)

    def potential(
        self, obs: torch.Tensor, actions: torch.Tensor, valid: torch.Tensor
    ) -> torch.Tensor:
        """Phi of each window: the reward of its last (current) state, (B,)."""
        return self.forward(obs, actions, valid)[1][:, -1]

    def last_state_potential(
        self, states: torch.Tensor, actions: torch.Tensor, valid: torch.Tensor
    ) -> torch.Tensor:
        """:meth:`potential` from encoded states (B, T, n_embed), computing only what the last
        slot's reward needs: the last layer attends from the last slot alone, its
        feed-forward runs on that slot alone, and the head's query and key (the segment
        logit's) are skipped. Same numbers as ``forward_encoded(...)[1][:, -1]``, a fraction
        of the work (at RL time only Phi(s_t), the last slot, is wanted)."""
        t = states.shape[1]
        slots = torch.arange(self.horizon - t, self.horizon, device=states.device)
        x = states + self.action_embedding(actions) + self.slot_embedding(slots)
        blocked = _attention_mask(valid)
        mask = blocked.repeat_interleave(self.n_heads, dim=0)
        *earlier, last = self.layers
        for layer in earlier:
            x = layer(x, src_mask=mask)
        if last.norm_first:  # built post-norm above; a pre-norm layer would need its own path
            raise NotImplementedError("last_state_potential supports post-norm layers only")
        query = x[:, -1:]
        attended = last.self_attn(query, x, x, attn_mask=mask[:, -1:], need_weights=False)[0]
        h = last.norm1(query + last.dropout1(attended))
        h = last.norm2(h + last._ff_block(h))
        return self.head.value(h[:, 0]).squeeze(-1)

    def potential_of_states(
        self, obs: torch.Tensor, index: torch.Tensor, actions: torch.Tensor, valid: torch.Tensor
    ) -> torch.Tensor:
        """:meth:`potential` of windows given as rows of ``index`` (N, T) into ``obs`` (S,
        obs_dim), -1 for padding: each state is encoded once, not once per window holding it
        (a 5-state horizon would encode every state 5 times; the conv encoder dominates)."""
        encoded = self.state_encoder(obs.unsqueeze(0))[0]
        encoded = torch.cat([encoded, encoded.new_zeros(1, encoded.shape[1])])  # padding row
        rows = torch.where(index >= 0, index, torch.full_like(index, obs.shape[0]))
        return self.last_state_potential(encoded[rows], actions, valid)


class FlatPotential(nn.Module):
    """The TorchScript face of the model: (B, horizon * (obs_dim + 2)) -> (B,) potentials.

    Each slot of a row is the observation, then the action id (``n_actions`` for "none"),
    then 1.0 if the slot holds a state (0.0: padding); see :func:`flat_inputs`."""

    def __init__(self, model: PreferenceTransformer, obs_dim: int):
        super().__init__()
        self.model = model
        self.obs_dim = obs_dim
        self.horizon = model.horizon

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(x.shape[0], self.horizon, self.obs_dim + 2)
        obs = rows[:, :, : self.obs_dim]
        actions = rows[:, :, self.obs_dim].round().long()
        valid = rows[:, :, self.obs_dim + 1] > 0.5
        return self.model.potential(obs, actions, valid)


def preference_loss(
    logits_a: torch.Tensor,
    logits_b: torch.Tensor,
    targets: torch.Tensor,
    ties: torch.Tensor | None = None,
) -> torch.Tensor:
    """BK's loss. ``targets``: P(B preferred): 0 = A, 1 = B, 0.5 = tie (BK's hard labels),
    or any probability in between (soft labels from token scores). ``ties``: which pairs are
    ties (default: targets == 0.5, as with hard labels).

    Cross-entropy over (A, B) against the target distribution (1 - t, t) on the pairs that
    are not ties, plus 0.3 * mean(-log_softmax) over both entries of every pair: for a tie
    that pulls the two logits together, for a decided pair it keeps the model from growing
    over-confident. With hard labels the cross-entropy is BK's."""
    logits = torch.stack([logits_a, logits_b], dim=-1)
    decided = targets != 0.5 if ties is None else ~ties
    if bool(decided.any()):
        t = targets[decided]
        log_p = torch.log_softmax(logits[decided], dim=-1)
        ce = -((1 - t) * log_p[:, 0] + t * log_p[:, 1]).mean()
    else:
        ce = logits.sum() * 0.0
    smooth = (-torch.log_softmax(logits, dim=-1)).mean()
    return ce + SMOOTHING_WEIGHT * smooth


# ------------------------------------------------------------------------ windows to tensors
def encode_windows(
    windows: Sequence[Window], horizon: int, obs_dim: int, n_actions: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right-aligned, left-padded arrays: obs (N, horizon, obs_dim) float32, actions
    (N, horizon) int64 (``n_actions`` on the current state and on padding), valid (N, horizon)
    bool. A window longer than ``horizon`` keeps its last ``horizon`` states."""
    n = len(windows)
    obs = np.zeros((n, horizon, obs_dim), np.float32)
    actions = np.full((n, horizon), n_actions, np.int64)
    valid = np.zeros((n, horizon), bool)
    for i, w in enumerate(windows):
        o = np.asarray(w.observations, np.float32)[-horizon:]
        if o.shape[1] != obs_dim:
            raise ValueError(
                f"the model reads {obs_dim} observation values per state, "
                f"the window has {o.shape[1]}"
            )
        k = len(o)
        obs[i, horizon - k :] = o
        valid[i, horizon - k :] = True
        acts = list(w.actions)[-(k - 1) :] if k > 1 else []
        actions[i, horizon - k : horizon - 1] = acts
    return obs, actions, valid


def chunk_windows(
    chunks: Sequence[Chunk], horizon: int, n_actions: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every window of every chunk (``len(chunk) + 1`` each, in order), without copying states:
    observations (S, obs_dim) of all chunks, stacked; index (N, horizon) into them, -1 on
    padding; actions and valid as :func:`encode_windows` gives them."""
    if not chunks:
        return (
            np.zeros((0, 0), np.float32),
            np.zeros((0, horizon), np.int64),
            np.zeros((0, horizon), np.int64),
            np.zeros((0, horizon), bool),
        )
    index, actions = window_index(chunks, horizon, n_actions)
    obs = np.concatenate([np.asarray(c.observations, np.float32) for c in chunks])
    return obs, index, actions, index >= 0


def flat_inputs(obs: np.ndarray, actions: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The :class:`FlatPotential` rows for encoded windows: (N, horizon * (obs_dim + 2))."""
    parts = [obs, actions[..., None].astype(np.float32), valid[..., None].astype(np.float32)]
    return np.concatenate(parts, axis=-1).reshape(len(obs), -1)


def script(model: PreferenceTransformer, obs_dim: int) -> torch.jit.ScriptModule:
    """The TorchScript module that :func:`save_reward_model` stores and the app serves."""
    return torch.jit.script(FlatPotential(model, obs_dim).eval())


def save_model(state_dict: dict, config: ModelConfig, out_dir: str | Path) -> None:
    """Writes out_dir/model.pt: the weights and the config that rebuilds the model."""
    torch.save({"state_dict": state_dict, "config": config.as_dict()}, Path(out_dir) / "model.pt")


def load_model(out_dir: str | Path) -> tuple[PreferenceTransformer, ModelConfig]:
    """The trained model of out_dir/model.pt, in eval mode."""
    saved = torch.load(Path(out_dir) / "model.pt", map_location="cpu", weights_only=True)
    config = ModelConfig(**saved["config"])
    model = PreferenceTransformer(config)
    model.load_state_dict(saved["state_dict"])
    return model.eval(), config
