"""The persistent label store: every label an LLM (or the oracle) ever gave, on SQLite, keyed by
``(backend, model, task, template_version, input_hash)`` so that a changed prompt or parser
never reuses old labels and labels of different models never mix. A stored label is never
overwritten (first label wins): an experiment that already read a label must read the same one
when rerun. Why, and export and import: docs/labeler.md#the-label-store; how processes and
threads share it: :class:`LabelStore`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rl_bk.labeling.tasks import TaskSpec, canonical_json, get_task

SCHEMA_VERSION = 1
ENV_VAR = "RLBK_LABEL_STORE"
DEFAULT_PATH = Path("~/.cache/rl-bk/labels.sqlite3")
IN_CHUNK = 500  # hashes per ``IN (...)``: far below SQLite's limit on bound parameters

_SCHEMA = """
CREATE TABLE labels (
    backend          TEXT    NOT NULL,
    model            TEXT    NOT NULL,
    task             TEXT    NOT NULL,
    template_version TEXT    NOT NULL,
    input_hash       TEXT    NOT NULL,
    input_json       TEXT    NOT NULL,
    label_json       TEXT    NOT NULL,
    is_oracle        INTEGER NOT NULL,
    created_at       REAL    NOT NULL,
    latency_s        REAL    NOT NULL,
    PRIMARY KEY (backend, model, task, template_version, input_hash)
)
"""
_COLUMNS = (
    "backend, model, task, template_version, input_hash, input_json, label_json, is_oracle, "
    "created_at, latency_s"
)
_INSERT = f"INSERT OR IGNORE INTO labels ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


class SchemaVersionError(RuntimeError):
    """The file was written by a newer (or unknown) version of the store."""


class StoreClosedError(RuntimeError):
    pass


def default_path() -> Path:
    """``$RLBK_LABEL_STORE`` if set, else ``~/.cache/rl-bk/labels.sqlite3``."""
    return Path(os.environ.get(ENV_VAR) or DEFAULT_PATH).expanduser()


def template_version(spec: TaskSpec, asked_as: str = "") -> str:
    """The key's template version: the task's, with how it was asked ("preference-v2+scores-2")."""
    return f"{spec.template_version}+{asked_as}" if asked_as else spec.template_version


def input_hash(request: BaseModel) -> str:
    """sha256 (hex) of the request's canonical JSON: the request part of the store's key."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


class _ExportRow(BaseModel):
    """One line of an export: the row, with input and label as nested objects."""

    model_config = ConfigDict(extra="forbid", strict=False)

    backend: str
    model: str
    task: str
    template_version: str
    input_hash: str | None = None  # recomputed on import: the key follows the input
    input: dict[str, Any]
    label: dict[str, Any]
    is_oracle: bool = False
    created_at: float
    latency_s: float


def _release(conns: set[sqlite3.Connection], lock: threading.Lock, conn: sqlite3.Connection):
    """Close a dead thread's connection (weakref finalizer: holds no reference to the store)."""
    with lock:
        if conn in conns:
            conns.discard(conn)
            conn.close()


class LabelStore:
    """Labels keyed by (backend, model, task, template version, request).

    ``path`` overrides ``$RLBK_LABEL_STORE`` and the default; parent folders are created.
    ``timeout_s`` is how long a writer waits for another process's lock before failing.

    ``input_hash`` is the sha256 of the request's canonical JSON; ``template_version`` comes
    from the task's spec. New labels go in with ``INSERT OR IGNORE``. Concurrency: one file,
    WAL mode (readers never block the writer), ``synchronous=NORMAL`` and a busy timeout, so
    several processes share it. Within a process the store is thread-safe: each thread gets
    its own sqlite3 connection (``threading.local``), opened on first use and closed by
    :meth:`close` (or when its thread is collected); counters sit behind a lock. A store used
    in a forked child opens fresh connections there (SQLite connections must not cross a
    fork).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout_s: float = 30.0):
        if str(path) == ":memory:":
            raise ValueError("LabelStore needs a file: each thread has its own connection")
        self.path = Path(path).expanduser() if path is not None else default_path()
        self.timeout_s = float(timeout_s)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._closed = False
        self._counts = {"hits": 0, "misses": 0, "puts": 0}
        self._reset_connections()
        self._init_schema()

    # ------------------------------------------------------------------------- connections
    def _reset_connections(self) -> None:
        self._pid = os.getpid()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: set[sqlite3.Connection] = set()

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreClosedError(f"label store {self.path} is closed")
        if os.getpid() != self._pid:  # forked: the parent's connections are not ours to use
            self._reset_connections()
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._lock:
                self._conns.add(conn)
            weakref.finalize(threading.current_thread(), _release, self._conns, self._lock, conn)
        return conn

    def _connect(self) -> sqlite3.Connection:
        try:
            # Autocommit (isolation_level=None): transactions are explicit BEGIN ... COMMIT.
            # check_same_thread=False only so that close() may close other threads' connections.
            conn = sqlite3.connect(
                self.path, timeout=self.timeout_s, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as e:
            raise sqlite3.DatabaseError(f"cannot open label store {self.path}: {e}") from e
        return conn

    def _init_schema(self) -> None:
        conn = self._conn()
        try:
            # WAL is a property of the file; switching needs a moment alone with it, so retry
            # while another process holds it (the busy handler does not always apply here).
            deadline = time.monotonic() + self.timeout_s
            while True:
                try:
                    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    break
                except sqlite3.OperationalError as e:
                    if "locked" not in str(e) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"{self.path}: cannot use WAL (mode {mode!r})")
            with _transaction(conn):
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
                )
                row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                if row is None:
                    conn.execute(_SCHEMA)
                    conn.execute(
                        "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                        (str(SCHEMA_VERSION),),
                    )
                elif row[0] != str(SCHEMA_VERSION):
                    raise SchemaVersionError(
                        f"label store {self.path} has schema version {row[0]}, this code knows "
                        f"version {SCHEMA_VERSION}: update rl-bk, or use another file "
                        f"(${ENV_VAR} or LabelStore(path=...))"
                    )
        except sqlite3.DatabaseError as e:
            self.close()
            raise sqlite3.DatabaseError(f"label store {self.path}: {e}") from e
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close every thread's connection; idempotent. The store cannot be used afterwards."""
        self._closed = True
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for conn in conns:
            conn.close()

    def __enter__(self) -> LabelStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent to another process (a Ray actor, a worker): reopen the same file there.
        return (_reopen, (type(self), str(self.path), self.timeout_s))

    def __repr__(self) -> str:
        return f"LabelStore({str(self.path)!r})"

    # ------------------------------------------------------------------------------- labels
    def get_many(
        self,
        backend: str,
        model: str,
        task: str,
        requests: Sequence[BaseModel],
        *,
        asked_as: str = "",
    ) -> list[BaseModel | None]:
        """The stored label of each request (None where there is none), in request order.

        One query per 500 requests; counts hits and misses. ``asked_as``: how the backend
        asked (:meth:`~rl_bk.labeling.backends.base.Backend.asked_as`), kept in the key's
        template version.
        """
        spec = get_task(task)
        version = template_version(spec, asked_as)
        hashes = [input_hash(_as_request(spec, r)) for r in requests]
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(hashes))
        conn = self._conn()
        for i in range(0, len(unique), IN_CHUNK):
            chunk = unique[i : i + IN_CHUNK]
            rows = conn.execute(
                "SELECT input_hash, label_json FROM labels WHERE backend = ? AND model = ? "
                f"AND task = ? AND template_version = ? AND input_hash IN "
                f"({', '.join('?' * len(chunk))})",
                (backend, model, task, version, *chunk),
            )
            found.update(rows)
        parsed = {h: spec.label.model_validate_json(j) for h, j in found.items()}
        out = [parsed.get(h) for h in hashes]
        hits = sum(label is not None for label in out)
        with self._lock:
            self._counts["hits"] += hits
            self._counts["misses"] += len(out) - hits
        return out

    def put_many(
        self,
        backend: str,
        model: str,
        task: str,
        requests: Sequence[BaseModel],
        labels: Sequence[BaseModel],
        *,
        latency_s: float,
        is_oracle: bool = False,
        asked_as: str = "",
    ) -> int:
        """Store labels in one transaction; returns how many were new.

        A label already stored under the same key is kept (first label wins), so that a rerun
        reads what the original run read. ``latency_s`` is the backend's time for this batch.
        """
        spec = get_task(task)
        if len(requests) != len(labels):
            raise ValueError(f"{len(requests)} requests but {len(labels)} labels")
        if not (math.isfinite(latency_s) and latency_s >= 0):
            raise ValueError(f"latency_s must be finite and >= 0, not {latency_s!r}")
        now = time.time()
        version = template_version(spec, asked_as)
        rows = []
        for request, label in zip(requests, labels):
            request = _as_request(spec, request)
            label = label if isinstance(label, spec.label) else spec.label.model_validate(label)
            text = canonical_json(request)
            rows.append(
                (
                    backend,
                    model,
                    task,
                    version,
                    hashlib.sha256(text.encode("utf-8")).hexdigest(),
                    text,
                    label.model_dump_json(),
                    int(is_oracle),
                    now,
                    float(latency_s),
                )
            )
        inserted = self._insert(rows)
        with self._lock:
            self._counts["puts"] += inserted
        return inserted

    def _insert(self, rows: Iterable[tuple[Any, ...]]) -> int:
        conn = self._conn()
        with _transaction(conn):
            before = conn.total_changes
            conn.executemany(_INSERT, rows)
            return conn.total_changes - before

    # -------------------------------------------------------------------------------- stats
    def stats(self) -> dict[str, Any]:
        """This process's hits, misses and puts; rows in the file; latency of stored labels.

        ``latency`` maps each task to count, mean, p50 and p99 (nearest rank) of latency_s.
        """
        with self._lock:
            out: dict[str, Any] = dict(self._counts)
        conn = self._conn()
        out["rows"] = conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0]
        latency: dict[str, dict[str, float]] = {}
        per_task = conn.execute(
            "SELECT task, COUNT(*), AVG(latency_s) FROM labels GROUP BY task ORDER BY task"
        ).fetchall()
        for task, n, mean in per_task:
            entry = {"count": n, "mean": mean}
            for name, q in (("p50", 0.50), ("p99", 0.99)):
                rank = max(1, math.ceil(q * n))
                entry[name] = conn.execute(
                    "SELECT latency_s FROM labels WHERE task = ? ORDER BY latency_s "
                    "LIMIT 1 OFFSET ?",
                    (task, rank - 1),
                ).fetchone()[0]
            latency[task] = entry
        out["latency"] = latency
        return out

    # ----------------------------------------------------------------------- export, import
    def export_jsonl(
        self,
        path: str | os.PathLike[str],
        *,
        backend: str | None = None,
        model: str | None = None,
        task: str | None = None,
    ) -> int:
        """Write the rows (optionally only one backend / model / task) as JSON lines.

        Each line holds every column, with ``input`` and ``label`` as nested objects. Returns
        the number of rows written.
        """
        where, params = [], []
        for column, value in (("backend", backend), ("model", model), ("task", task)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        sql = f"SELECT {_COLUMNS} FROM labels"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY rowid"
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        n = 0
        conn = self._conn()
        with open(path, "w", encoding="utf-8") as f:
            for b, m, t, tv, h, inp, lab, oracle, created, latency in conn.execute(sql, params):
                row = {
                    "backend": b,
                    "model": m,
                    "task": t,
                    "template_version": tv,
                    "input_hash": h,
                    "input": json.loads(inp),
                    "label": json.loads(lab),
                    "is_oracle": bool(oracle),
                    "created_at": created,
                    "latency_s": latency,
                }
                f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
                n += 1
        return n

    def import_jsonl(self, path: str | os.PathLike[str]) -> tuple[int, int]:
        """Add the rows of an export; returns (inserted, skipped as already present).

        Every line is validated (known task, request and label against the task's models)
        before anything is written, so a bad file imports nothing; the error names the line.
        Keys are recomputed from the input; template versions are kept as written, so labels
        of an older prompt stay apart from the current one.
        """
        rows = []
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    rows.append(_parse_line(line))
                except (ValueError, KeyError) as e:  # JSON, pydantic and unknown-task errors
                    raise ValueError(f"{path}, line {lineno}: bad label row: {e}") from e
        inserted = self._insert(rows)
        return inserted, len(rows) - inserted


# ------------------------------------------------------------------------------------ helpers
class _transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error): takes the write lock at the start, so
    that a writer waits (busy timeout) rather than failing when upgrading a read lock."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
                return
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        self.conn.execute("ROLLBACK")


def _reopen(cls: type[LabelStore], path: str, timeout_s: float) -> LabelStore:
    return cls(path, timeout_s=timeout_s)


def _as_request(spec: TaskSpec, request: Any) -> BaseModel:
    if isinstance(request, spec.request):
        return request
    if isinstance(request, BaseModel):  # another task's request: a caller's bug, say so
        raise TypeError(
            f"task {spec.name!r} takes {spec.request.__name__}, not {type(request).__name__}"
        )
    return spec.request.model_validate(request)


def _parse_line(line: str) -> tuple[Any, ...]:
    try:
        row = _ExportRow.model_validate_json(line)
    except ValidationError as e:
        raise ValueError(str(e)) from None
    spec = get_task(row.task)
    try:
        request = spec.request.model_validate(row.input)
        label = spec.label.model_validate(row.label)
    except ValidationError as e:
        raise ValueError(str(e)) from None
    text = canonical_json(request)
    return (
        row.backend,
        row.model,
        row.task,
        row.template_version,
        hashlib.sha256(text.encode("utf-8")).hexdigest(),
        text,
        label.model_dump_json(),
        int(row.is_oracle),
        row.created_at,
        row.latency_s,
    )
