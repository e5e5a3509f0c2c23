"""Folders every node of a cluster can read: a shared mount, or a URI (``s3://``, ``gs://``,
``file://``, any filesystem ``pyarrow.fs`` knows). A run with ``storage`` set publishes what
trials read (knowledge artifacts) there, so a trial on a worker node never looks in the
driver's home folder: on a shared mount nothing is copied; behind a URI :func:`publish`
uploads a built folder once and :func:`fetch` downloads it once per node. Details:
docs/cluster.md#three-settings-that-make-a-sweep-work-across-nodes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

#: A folder counts as published or fetched once this file is in it (pipeline.DONE).
MARKER = "DONE.json"


def is_uri(location: str | os.PathLike) -> bool:
    return "://" in str(location)


def join(base: str, *parts: str) -> str:
    """``base`` / parts, for a path or a URI."""
    if is_uri(base):
        return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])
    return str(Path(base, *parts))


def _fs(location: str):
    import pyarrow.fs  # kept light: only a URI needs pyarrow (rl-bk --help imports this)

    try:
        return pyarrow.fs.FileSystem.from_uri(location)
    except (ValueError, OSError) as err:
        raise ValueError(
            f"storage {location!r} is not a folder or a URI pyarrow can open "
            f"(s3://bucket/path, gs://bucket/path, file:///path): {err}"
        ) from None


def exists(location: str, name: str = MARKER) -> bool:
    """Whether ``location/name`` exists (a published folder has its marker)."""
    if not is_uri(location):
        return (Path(location) / name).exists()
    import pyarrow.fs  # kept light: only a URI needs pyarrow (rl-bk --help imports this)

    fs, path = _fs(location)
    return fs.get_file_info(f"{path.rstrip('/')}/{name}").type != pyarrow.fs.FileType.NotFound


def publish(folder: Path, location: str) -> str:
    """Copies a finished local folder to ``location`` (the marker last, so a reader never sees
    half a folder); nothing to do when the location is the folder itself. Returns it."""
    folder = Path(folder)
    if not is_uri(location):
        if Path(location).resolve() != folder.resolve():
            shutil.copytree(folder, location, dirs_exist_ok=True)
        return location
    import pyarrow.fs  # kept light: only a URI needs pyarrow (rl-bk --help imports this)

    fs, path = _fs(location)
    fs.create_dir(path, recursive=True)
    local = pyarrow.fs.LocalFileSystem()
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    for p in [*[f for f in files if f.name != MARKER], *[f for f in files if f.name == MARKER]]:
        target = f"{path.rstrip('/')}/{p.relative_to(folder).as_posix()}"
        fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        pyarrow.fs.copy_files(str(p), target, source_filesystem=local, destination_filesystem=fs)
    return location


def fetch_root() -> Path:
    return Path(os.environ.get("RLBK_FETCH_DIR", "~/.cache/rl-bk/fetched")).expanduser()


def fetch(location: str | os.PathLike) -> Path:
    """The folder at ``location`` as a local path: a path as it is; a URI downloaded once into
    this node's fetch cache (``~/.cache/rl-bk/fetched/``, or ``$RLBK_FETCH_DIR``; to a
    temporary folder first, then renamed into place, so it is complete or not there)."""
    if not is_uri(location):
        return Path(location)
    import pyarrow.fs  # kept light: only a URI needs pyarrow (rl-bk --help imports this)

    location = str(location)
    local = fetch_root() / hashlib.sha256(location.encode()).hexdigest()[:16]
    if (local / MARKER).exists():
        return local
    fs, path = _fs(location)
    local.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=local.parent))
    try:
        pyarrow.fs.copy_files(
            path,
            str(staging),
            source_filesystem=fs,
            destination_filesystem=pyarrow.fs.LocalFileSystem(),
        )
        if not (staging / MARKER).exists():
            raise FileNotFoundError(
                f"{location} is not a finished folder (no {MARKER}): was it published completely?"
            )
        if local.exists():  # another process on this node got there first
            shutil.rmtree(staging)
        else:
            staging.rename(local)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return local
