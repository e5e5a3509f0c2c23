"""The label store: keys, first-label-wins, restarts, concurrency, export/import."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing as mp
import sqlite3
import threading
from pathlib import Path

import pytest

from rl_bk.labeling import store as store_mod
from rl_bk.labeling.store import LabelStore, SchemaVersionError
from rl_bk.labeling.tasks import (
    TASKS,
    GoalsLabel,
    GoalsRequest,
    HelpfulLabel,
    HelpfulRequest,
    PreferenceLabel,
    PreferenceRequest,
)


def goals(i: int) -> tuple[GoalsRequest, GoalsLabel]:
    return GoalsRequest(caption=f"you see a red ball {i}"), GoalsLabel(goals=[f"go to ball {i}"])


def helpful(i: int) -> tuple[HelpfulRequest, HelpfulLabel]:
    request = HelpfulRequest(caption=f"door {i}", task="open the door")
    return request, HelpfulLabel(helpful=i % 2 == 0)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sub" / "labels.sqlite3"


@pytest.fixture
def store(db: Path):
    with LabelStore(db) as s:
        yield s


def test_put_then_get_in_order_with_misses(store: LabelStore) -> None:
    pairs = [goals(i) for i in range(4)]
    store.put_many(
        "fake",
        "m",
        "goals",
        [r for r, _ in pairs[:2]],
        [lab for _, lab in pairs[:2]],
        latency_s=0.5,
    )
    order = [pairs[3][0], pairs[1][0], pairs[2][0], pairs[0][0]]
    got = store.get_many("fake", "m", "goals", order)
    assert got == [None, pairs[1][1], None, pairs[0][1]]
    assert isinstance(got[1], GoalsLabel)
    s = store.stats()
    assert (s["hits"], s["misses"], s["puts"], s["rows"]) == (2, 2, 2, 2)
    assert s["latency"]["goals"]["count"] == 2
    assert s["latency"]["goals"]["mean"] == pytest.approx(0.5)


def test_parent_dirs_created_and_env_var_default(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "a" / "b" / "labels.sqlite3"
    monkeypatch.setenv("RLBK_LABEL_STORE", str(target))
    with LabelStore() as s:
        assert s.path == target
    assert target.exists()


def test_survives_restart(db: Path) -> None:
    req, lab = goals(1)
    with LabelStore(db) as s:
        s.put_many("llamacpp", "smol", "goals", [req], [lab], latency_s=1.0, is_oracle=False)
    with LabelStore(db) as s:
        assert s.get_many("llamacpp", "smol", "goals", [req]) == [lab]
        assert s.stats()["rows"] == 1


def test_keys_separate_model_backend_and_template_version(store: LabelStore, monkeypatch) -> None:
    req, lab = goals(1)
    store.put_many("llamacpp", "smol", "goals", [req], [lab], latency_s=0.1)
    assert store.get_many("llamacpp", "smol", "goals", [req]) == [lab]
    assert store.get_many("llamacpp", "other-model", "goals", [req]) == [None]
    assert store.get_many("vllm", "smol", "goals", [req]) == [None]
    # A prompt change bumps the template version: old labels must not be reused.
    monkeypatch.setitem(TASKS, "goals", dataclasses.replace(TASKS["goals"], template_version="v2"))
    assert store.get_many("llamacpp", "smol", "goals", [req]) == [None]
    lab2 = GoalsLabel(goals=["new prompt goal"])
    assert store.put_many("llamacpp", "smol", "goals", [req], [lab2], latency_s=0.1) == 1
    assert store.get_many("llamacpp", "smol", "goals", [req]) == [lab2]
    monkeypatch.undo()
    assert store.get_many("llamacpp", "smol", "goals", [req]) == [lab]


def test_same_input_other_task_kept_apart(store: LabelStore) -> None:
    req = PreferenceRequest(segment_a=["a"], segment_b=["b"], criteria="progress")
    store.put_many("fake", "m", "preference", [req], [PreferenceLabel(choice="A")], latency_s=0)
    with pytest.raises(TypeError):  # another task's request is a caller's bug
        store.get_many("fake", "m", "goals", [req])


def test_first_label_wins(store: LabelStore) -> None:
    req, lab = goals(1)
    assert store.put_many("fake", "m", "goals", [req], [lab], latency_s=0.1) == 1
    other = GoalsLabel(goals=["something else"])
    assert store.put_many("fake", "m", "goals", [req], [other], latency_s=0.1) == 0
    assert store.get_many("fake", "m", "goals", [req]) == [lab]
    assert store.stats()["puts"] == 1 and store.stats()["rows"] == 1


def test_wal_mode(store: LabelStore, db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_newer_schema_version_refused(db: Path) -> None:
    LabelStore(db).close()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(SchemaVersionError, match="schema version 99"):
        LabelStore(db)


def test_closed_store_refuses(db: Path) -> None:
    s = LabelStore(db)
    s.close()
    s.close()  # idempotent
    with pytest.raises(store_mod.StoreClosedError):
        s.get_many("fake", "m", "goals", [goals(0)[0]])


def test_get_many_beyond_one_chunk(store: LabelStore) -> None:
    n = 1200
    assert n > store_mod.IN_CHUNK * 2
    pairs = [helpful(i) for i in range(n)]
    stored = pairs[::2]  # every other one is a miss
    store.put_many(
        "fake", "m", "helpful", [r for r, _ in stored], [lab for _, lab in stored], latency_s=0.01
    )
    got = store.get_many("fake", "m", "helpful", [r for r, _ in pairs])
    assert got == [lab if i % 2 == 0 else None for i, (_, lab) in enumerate(pairs)]
    assert store.stats()["hits"] == n // 2 and store.stats()["misses"] == n // 2


def test_threads_write_disjoint_labels(store: LabelStore) -> None:
    per_thread, batches = 30, 10
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def write(offset: int) -> None:
        try:
            barrier.wait()
            for b in range(batches):
                pairs = [goals(offset + b * per_thread + i) for i in range(per_thread)]
                store.put_many(
                    "fake",
                    "m",
                    "goals",
                    [r for r, _ in pairs],
                    [lab for _, lab in pairs],
                    latency_s=0.01,
                )
                store.get_many("fake", "m", "goals", [r for r, _ in pairs])
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(k * 100_000,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    total = 2 * per_thread * batches
    assert store.stats()["rows"] == total and store.stats()["puts"] == total
    everything = [goals(k * 100_000 + i)[0] for k in range(2) for i in range(per_thread * batches)]
    assert None not in store.get_many("fake", "m", "goals", everything)


def _process_writer(path: str, offset: int, start: mp.synchronize.Event) -> None:
    start.wait(30)
    with LabelStore(path, timeout_s=30) as s:
        for b in range(20):
            pairs = [goals(offset + b * 25 + i) for i in range(25)]
            s.put_many(
                "fake",
                "m",
                "goals",
                [r for r, _ in pairs],
                [lab for _, lab in pairs],
                latency_s=0.01,
            )


def test_processes_write_disjoint_labels(db: Path) -> None:
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [
        ctx.Process(target=_process_writer, args=(str(db), k * 100_000, start)) for k in range(2)
    ]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    with LabelStore(db) as s:
        assert s.stats()["rows"] == 2 * 20 * 25
        everything = [goals(k * 100_000 + i)[0] for k in range(2) for i in range(500)]
        assert None not in s.get_many("fake", "m", "goals", everything)


def _fill(s: LabelStore) -> None:
    g = [goals(i) for i in range(5)]
    h = [helpful(i) for i in range(3)]
    s.put_many("llamacpp", "smol", "goals", [r for r, _ in g], [lab for _, lab in g], latency_s=0.2)
    s.put_many(
        "oracle",
        "rules",
        "helpful",
        [r for r, _ in h],
        [lab for _, lab in h],
        latency_s=0.0,
        is_oracle=True,
    )


def _rows(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT * FROM labels ORDER BY task, input_hash").fetchall()
    finally:
        conn.close()


def test_export_import_round_trip(tmp_path: Path) -> None:
    src, dst, out = tmp_path / "src.sqlite3", tmp_path / "dst.sqlite3", tmp_path / "x.jsonl"
    with LabelStore(src) as s:
        _fill(s)
        assert s.export_jsonl(out) == 8
        assert s.export_jsonl(tmp_path / "g.jsonl", task="goals") == 5
        assert s.export_jsonl(tmp_path / "o.jsonl", backend="oracle", model="rules") == 3
    first = json.loads(out.read_text().splitlines()[0])
    assert isinstance(first["input"], dict) and isinstance(first["label"], dict)
    assert {
        "backend",
        "model",
        "task",
        "template_version",
        "input_hash",
        "is_oracle",
        "created_at",
        "latency_s",
    } <= first.keys()
    with LabelStore(dst) as d:
        assert d.import_jsonl(out) == (8, 0)
        assert d.import_jsonl(out) == (0, 8)
        g = [goals(i) for i in range(5)]
        assert d.get_many("llamacpp", "smol", "goals", [r for r, _ in g]) == [lab for _, lab in g]
    assert _rows(src) == _rows(dst)  # every column, is_oracle and timestamps included


def test_import_bad_line_names_it_and_imports_nothing(tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    with LabelStore(tmp_path / "src.sqlite3") as s:
        _fill(s)
        s.export_jsonl(out)
    lines = out.read_text().splitlines()
    bad_label = json.loads(lines[5])
    bad_label["label"] = {"helpful": "perhaps"}
    unknown_task = json.loads(lines[1])
    unknown_task["task"] = "nope"
    cases = {
        3: [*lines[:2], '{"backend": "x", truncated', *lines[2:]],
        6: [*lines[:5], json.dumps(bad_label), *lines[6:]],
        2: [*lines[:1], json.dumps(unknown_task), *lines[2:]],
    }
    for lineno, content in cases.items():
        out.write_text("\n".join(content) + "\n")
        with LabelStore(tmp_path / f"dst{lineno}.sqlite3") as d:
            with pytest.raises(ValueError, match=f"line {lineno}\\b"):
                d.import_jsonl(out)
            assert d.stats()["rows"] == 0
