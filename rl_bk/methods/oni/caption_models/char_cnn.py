"""ONI's character-level message encoder (facebookresearch/oni, ``rlaif/reward_model.py``: the
char CNN of the NLE TorchBeast baseline), and the MLP head its reward models put on top:
characters rather than words, because NetHack's messages are full of names no word vocabulary
covers, and bytes need no tokenizer at RL time. Layers: :class:`CharCNNEncoder`; details:
docs/methods.md#onis-reward-models.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from rl_bk.methods.oni.caption_models.message_bytes import MESSAGE_LENGTH

#: Byte values: the embedding's vocabulary. Byte 0 is padding.
N_BYTES = 256


def conv_output_length(length: int) -> int:
    """Positions left after the conv stack for rows of ``length`` bytes (256 -> 5).

    Unpadded convolutions shorten a row by ``kernel - 1``; a pool of 3 (stride 3) keeps
    ``floor(n / 3)``."""
    n = (length - 6) // 3  # conv k7, pool 3
    n = (n - 6) // 3  # conv k7, pool 3
    return (n - 4 * 2) // 3  # four convs k3, pool 3


class CharCNNEncoder(nn.Module):
    """``(B, length)`` bytes (any integer dtype) -> ``(B, out_dim)`` features, ReLU'd.

    A byte embedding (32), six 1-D convolutions of 64 channels (kernels 7, 7, 3, 3, 3, 3, no
    padding) with max-pools of 3 after the first, the second and the last, then one linear
    layer to 128 features. The flattened width (ONI hard-codes ``5 * 64 = 320`` for 256 bytes)
    is computed from the row length (:func:`conv_output_length`), so shorter captions (other
    envs) can use shorter, cheaper rows.
    """

    def __init__(
        self,
        length: int = MESSAGE_LENGTH,
        embed_dim: int = 32,
        channels: int = 64,
        out_dim: int = 128,
    ):
        super().__init__()
        positions = conv_output_length(length)
        if positions < 1:
            raise ValueError(
                f"rows of {length} bytes are too short for the conv stack (at least 123 are needed)"
            )
        self.length = length
        self.out_dim = out_dim
        # padding_idx keeps the padding byte's vector at zero, as in ONI.
        self.embedding = nn.Embedding(N_BYTES, embed_dim, padding_idx=0)
        c = channels
        self.convs = nn.Sequential(
            nn.Conv1d(embed_dim, c, 7),
            nn.ReLU(),
            nn.MaxPool1d(3, 3),
            nn.Conv1d(c, c, 7),
            nn.ReLU(),
            nn.MaxPool1d(3, 3),
            nn.Conv1d(c, c, 3),
            nn.ReLU(),
            nn.Conv1d(c, c, 3),
            nn.ReLU(),
            nn.Conv1d(c, c, 3),
            nn.ReLU(),
            nn.Conv1d(c, c, 3),
            nn.ReLU(),
            nn.MaxPool1d(3, 3),
            nn.Flatten(),
        )
        self.flat_dim = channels * positions
        self.out = nn.Sequential(nn.Linear(self.flat_dim, out_dim), nn.ReLU())

    def forward(self, messages: torch.Tensor) -> torch.Tensor:
        if messages.shape[-1] != self.length:
            raise ValueError(
                f"the encoder reads rows of {self.length} bytes, got {messages.shape[-1]}"
            )
        h = self.embedding(messages.long()).transpose(1, 2)  # (B, embed_dim, length)
        return self.out(self.convs(h))


def mlp_head(
    in_dim: int, out_dim: int, hidden: Sequence[int], dropout: float = 0.0
) -> nn.Sequential:
    """ONI's ``mlp``: Linear + ReLU per hidden width, one dropout after the last hidden layer
    (not after each), then the output layer."""
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(in_dim, width), nn.ReLU()]
        in_dim = width
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(in_dim, out_dim))
    return nn.Sequential(*layers)
