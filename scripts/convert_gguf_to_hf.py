"""Converts a GGUF model (by default the packaged SmolLM2) to a Hugging Face folder for vLLM.

Why: vLLM loads Hugging Face folders (safetensors + config + tokenizer); the embedded models
ship as GGUF for llama.cpp. transformers reads GGUF (with the ``gguf`` package), dequantising
the weights, but refuses to save a model it considers "gguf-quantized": the workaround is to
drop the quantizer markers before ``save_pretrained`` (docs/vllm.md).

The chat template stored in the GGUF (SmolLM2: ChatML) is kept in the tokenizer, so vLLM's
``/v1/chat/completions`` works without a template in the engine arguments.

    python scripts/convert_gguf_to_hf.py --out /tmp/smollm2-hf            # packaged SmolLM2
    python scripts/convert_gguf_to_hf.py --gguf model.gguf --out /tmp/m   # any GGUF
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def default_gguf() -> Path:
    """The packaged SmolLM2 GGUF, found as the llama.cpp backend finds it."""
    from rl_bk.labeling.backends.packaged_models import packaged_model_path

    return packaged_model_path("smollm2")


def convert(gguf: Path, out: Path, dtype: str = "bfloat16") -> dict[str, Any]:
    """The conversion itself lives in rl_bk (GLAM's model loader caches SmolLM2 with it)."""
    import torch

    from rl_bk.methods.glam.language_model import convert_gguf_to_hf

    return convert_gguf_to_hf(gguf, out, dtype=getattr(torch, dtype))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, help="a GGUF file (default: the packaged SmolLM2)")
    parser.add_argument("--out", type=Path, required=True, help="the Hugging Face folder to write")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    args = parser.parse_args(argv)
    try:
        gguf = args.gguf or default_gguf()
        info = convert(gguf, args.out, args.dtype)
    except ImportError as err:  # MissingDependencyError is one
        print(f"error: {err} (the conversion needs transformers, torch and gguf)", file=sys.stderr)
        return 1
    for key, value in info.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
