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
import time
from pathlib import Path
from typing import Any


def _gguf_chat_template(path: Path) -> str | None:
    """The ``tokenizer.chat_template`` field of a GGUF file, read with the gguf package."""
    from gguf import GGUFReader

    field = GGUFReader(str(path)).fields.get("tokenizer.chat_template")
    if field is None:
        return None
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def default_gguf() -> Path:
    """The packaged SmolLM2 GGUF, found as the llama.cpp backend finds it."""
    from rl_bk.labeling.backends.llamacpp import packaged_model_path

    return packaged_model_path("smollm2")


def convert(gguf: Path, out: Path, dtype: str = "bfloat16") -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    template = _gguf_chat_template(gguf)
    if template and not getattr(tok, "chat_template", None):
        tok.chat_template = template  # older transformers drop it on GGUF load
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=getattr(torch, dtype)
    )
    # save_pretrained raises "The model is quantized with gguf and is not serializable" although
    # the weights are already dequantised: forget the quantizer before saving.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return {
        "gguf": str(gguf),
        "out": str(out),
        "architecture": type(model).__name__,
        "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
        "chat_template": bool(getattr(tok, "chat_template", None)),
        "seconds": round(time.perf_counter() - t0, 1),
    }


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
        print(f"error: {err} (the conversion needs transformers, torch and gguf)",
              file=sys.stderr)  # fmt: skip
        return 1
    for key, value in info.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
