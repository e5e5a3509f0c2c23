"""Results files that keep what a person wrote: a benchmark or a study rewrites its generated
part, never the hand-written reading below it."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

READING = "## Reading (written by hand)"


def write_keeping_reading(path: Path, text: str) -> None:
    """Writes a results file's generated part, keeping the hand-written reading that follows
    ``READING`` in the file it replaces."""
    notes = ""
    if path.is_file() and READING in path.read_text():
        notes = READING + path.read_text().split(READING, 1)[1]
    path.write_text(text + ("\n" + notes if notes else ""))


def replace_section(report: Path, heading: str, section: list[str]) -> None:
    """Puts a generated ``section`` (starting with its ``heading`` line) into ``report`` in
    place of an older one (from its heading to the next ``## `` heading), or else just before
    the hand-written reading; the rest of the report is left as it is."""
    text = report.read_text() if report.is_file() else ""
    body = "\n".join(section).rstrip("\n") + "\n\n"
    if heading in text:
        before, _, rest = text.partition(heading)
        after = rest.split("\n## ", 1)
        text = before + body + ("## " + after[1] if len(after) > 1 else "")
    elif READING in text:
        before, _, reading = text.partition(READING)
        text = before.rstrip("\n") + "\n\n" + body + READING + reading
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + body
    report.write_text(text)


def code_and_machine(root: Path) -> dict[str, str]:
    """The commit a benchmark ran at (``+dirty`` with uncommitted changes) and the CPU it ran
    on, for its results file: two machines of the same kind can differ by 2x on one env."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        return out.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += "+dirty"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"commit": commit, "cpu": cpu}
