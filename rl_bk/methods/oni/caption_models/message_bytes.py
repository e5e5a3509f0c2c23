"""Captions as fixed-width byte rows, the input of ONI's character-level message models: NLE
hands the agent its message line as 256 latin-1 bytes, zero-padded, and ONI's reward models
read that array directly (``utils/decode.py`` in facebookresearch/oni); any other env's
caption becomes the same kind of row here, so one model reads NetHack messages and other
captions alike. Details: :func:`encode_messages`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Width of NLE's message observation, and of every row ONI's models read.
MESSAGE_LENGTH = 256


def encode_messages(texts: Sequence[str], length: int = MESSAGE_LENGTH) -> np.ndarray:
    """``(len(texts), length)`` int64 latin-1 bytes, truncated to ``length``, zero-padded.

    latin-1 maps each of its characters to one byte 1..255, so a NetHack message survives the
    round trip exactly; a character outside it (an emoji, CJK) becomes ``?`` rather than an
    error, since a caption must never stop training. 0 is the padding byte (the encoder's
    embedding keeps it at zero), so a NUL inside a caption reads as padding, as in NLE.
    """
    if isinstance(texts, str):
        raise TypeError("encode_messages() takes a sequence of strings, not one string")
    if length < 1:
        raise ValueError(f"length must be positive, got {length}")
    out = np.zeros((len(texts), length), np.int64)
    for i, text in enumerate(texts):
        raw = text.encode("latin-1", errors="replace")[:length]  # unencodable -> b"?"
        out[i, : len(raw)] = np.frombuffer(raw, np.uint8)
    return out
