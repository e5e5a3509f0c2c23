"""Storage every node sees: a shared folder or a URI (file:// stands in for s3:// here)."""

import pytest

from rl_bk import storage


def built(folder):
    folder.mkdir(parents=True)
    (folder / "model.pt").write_bytes(b"weights")
    (folder / "sub").mkdir()
    (folder / "sub" / "meta.json").write_text("{}")
    (folder / storage.MARKER).write_text("{}")
    return folder


def test_a_uri_is_published_once_and_fetched_once_per_node(tmp_path, monkeypatch):
    monkeypatch.setenv("RLBK_FETCH_DIR", str(tmp_path / "node-cache"))
    src = built(tmp_path / "artifact")
    uri = f"file://{tmp_path}/bucket/knowledge/bk-pref/oracle-x"
    assert not storage.exists(uri)
    assert storage.publish(src, uri) == uri
    assert storage.exists(uri)
    local = storage.fetch(uri)
    assert (local / "model.pt").read_bytes() == b"weights"
    assert (local / "sub" / "meta.json").exists() and local.is_relative_to(tmp_path / "node-cache")
    (src / "model.pt").write_bytes(b"changed")  # the node keeps the copy it fetched
    assert (storage.fetch(uri) / "model.pt").read_bytes() == b"weights"


def test_an_unfinished_upload_is_never_used(tmp_path, monkeypatch):
    monkeypatch.setenv("RLBK_FETCH_DIR", str(tmp_path / "node-cache"))
    half = tmp_path / "bucket" / "half"
    half.mkdir(parents=True)
    (half / "model.pt").write_bytes(b"w")  # no marker: the publisher died mid-copy
    with pytest.raises(FileNotFoundError, match="not a finished folder"):
        storage.fetch(f"file://{half}")
    assert not list((tmp_path / "node-cache").glob("[!.]*"))  # nothing half-fetched left


def test_a_shared_folder_is_used_where_it_is(tmp_path):
    src = built(tmp_path / "artifact")
    assert storage.fetch(str(src)) == src
    assert storage.publish(src, str(src)) == str(src)  # on the shared mount already
    copy = storage.publish(src, str(tmp_path / "shared" / "a"))
    assert storage.exists(copy) and storage.join(str(tmp_path), "x", "y") == f"{tmp_path}/x/y"
    assert storage.join("s3://bucket/", "knowledge", "/a/") == "s3://bucket/knowledge/a"


def test_knowledge_and_tune_results_go_under_the_task_storage(tmp_path):
    from rl_bk.experiments import knowledge_pipeline as pipeline
    from rl_bk.experiments.run import tune_location
    from rl_bk.experiments.task_config import load_task

    task = load_task("babyai-gotolocal-redball-s20")
    local = pipeline.published_location(task, "bk-pref", "oracle", tmp_path)
    assert local == str(pipeline.artifact_dir(task, "bk-pref", "oracle", tmp_path))
    on_s3 = task.model_copy(update={"storage": "s3://lab/rl-bk"})
    where = pipeline.published_location(on_s3, "bk-pref", "oracle", tmp_path)
    assert where.startswith("s3://lab/rl-bk/knowledge/BabyAI-Text-GoToLocal-Pretraining-S20")
    assert (
        tune_location(on_s3, tmp_path / "20261124-000000")
        == "s3://lab/rl-bk/results/babyai-gotolocal-redball-s20/20261124-000000/tune"
    )
