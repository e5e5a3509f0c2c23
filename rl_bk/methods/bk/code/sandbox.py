"""Running untrusted, LLM-written Python in a locked-down, persistent worker process, one round
trip per batch, behind four layers (process, limits, an import allow-list, an audit hook that
cannot be removed); every failure is a typed error after which the sandbox is usable again:
docs/methods.md#bk-codes-sandbox. This file is also the worker's program (``python -I -B
sandbox.py --worker R W``), so its module-level imports are the standard library only, never
``subprocess``.
"""

from __future__ import annotations

import builtins
import importlib
import json
import math
import numbers
import os
import resource
import select
import struct
import sys
import threading
import time
import types

#: Modules the code may import. All are imported before the lock.
ALLOWED_MODULES: tuple[str, ...] = (
    "__future__",
    "abc",
    "array",
    "bisect",
    "cmath",
    "collections",
    "collections.abc",
    "copy",
    "dataclasses",
    "decimal",
    "difflib",
    "enum",
    "fractions",
    "functools",
    "heapq",
    "itertools",
    "json",
    "math",
    "numbers",
    "numpy",
    "numpy.linalg",
    "numpy.random",
    "operator",
    "random",
    "re",
    "statistics",
    "string",
    "textwrap",
    "typing",
    "unicodedata",
)
#: Names the code finds without importing them.
PRELOADED_NAMES = {"math": "math", "re": "re", "np": "numpy", "numpy": "numpy"}
#: The file name the code's tracebacks show.
CODE_FILENAME = "<potential code>"

_HEADER = struct.Struct("!Q")
_MAX_MESSAGE = 1 << 30  # a reply larger than this is a broken worker, not data
_TRACEBACK_CHARS = 1500


# ------------------------------------------------------------------------------ errors
class SandboxError(Exception):
    """Something stopped the code from giving a value; ``str(e)`` says what, in one sentence."""


class SandboxRefusal(SandboxError):
    """The code tried something the sandbox does not allow (files, network, programs, ...)."""


class SandboxTimeout(SandboxError):
    """The code ran past the call's wall-clock limit; its worker was killed."""


class SandboxMemoryError(SandboxError):
    """The code ran out of its memory limit."""


class SandboxCrash(SandboxError):
    """The worker process died, or spoke out of turn, while running the code."""


class CodeError(SandboxError):
    """The code raised, or returned something that is not a finite number.

    ``traceback`` is the exception's traceback trimmed to the code's own frames (with the
    offending lines), ``index`` the batch item it failed on (None when not per item).
    """

    def __init__(self, message: str, traceback: str = "", index: int | None = None):
        super().__init__(message)
        self.traceback = traceback
        self.index = index

    def details(self) -> str:
        """The sentence and the trimmed traceback, as a LLM should read them."""
        return f"{self}\n{self.traceback}".rstrip()


class CodeDefinitionError(CodeError):
    """The code does not compile, raised while being defined, or lacks the function."""


_ERRORS: dict[str, type[SandboxError]] = {
    "refusal": SandboxRefusal,
    "memory": SandboxMemoryError,
    "code": CodeError,
    "definition": CodeDefinitionError,
}


# ------------------------------------------------------------------------------ framing
def _send(stream, message: dict) -> None:
    data = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_exactly(fd: int, n: int, deadline: float | None) -> bytes | None:
    """``n`` bytes from ``fd``; None at end of file; TimeoutError past ``deadline``."""
    chunks, left = [], n
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# ------------------------------------------------------------------------------ parent side
class Sandbox:
    """A worker process that runs one piece of untrusted code, a batch per round trip.

    Args:
        time_limit_s: wall-clock limit of one :meth:`call_many` (or :meth:`load`).
        memory_mb: address space the code may use on top of the worker's own baseline
            (Python and numpy, about 150 MB).
        start_timeout_s: how long a new worker may take to start (it imports numpy).

    The worker starts on first use, in the process that uses the sandbox (do not share one
    across a fork); calls from several threads are serialised.
    """

    def __init__(
        self, time_limit_s: float = 5.0, memory_mb: int = 512, start_timeout_s: float = 60.0
    ):
        if time_limit_s <= 0 or memory_mb <= 0:
            raise ValueError("time_limit_s and memory_mb must be positive")
        self.time_limit_s = float(time_limit_s)
        self.memory_mb = int(memory_mb)
        self.start_timeout_s = float(start_timeout_s)
        self.restarts = 0  # workers started after the first one
        self._proc = None
        self._to_worker = None
        self._from_worker: int | None = None
        self._loaded: tuple[str, str] | None = None
        self._worker_has_code = False
        self._started_once = False
        self._lock = threading.Lock()

    # -- public API
    def load(self, code: str, function: str = "compute_potential") -> None:
        """Defines ``function`` from ``code`` in the worker; later calls run it.

        Raises CodeDefinitionError (syntax error, missing function, error at definition
        time) or any other SandboxError.
        """
        with self._lock:
            self._loaded = None
            self._worker_has_code = False
            self._ensure_worker()
            self._round_trip({"op": "load", "code": code, "function": function})
            self._loaded = (code, function)
            self._worker_has_code = True

    def call_many(self, args_list: list) -> list[float]:
        """The loaded function on each item of ``args_list`` (each a list or tuple of
        positional arguments, JSON-able), in one round trip; one float per item."""
        with self._lock:
            if self._loaded is None:
                raise RuntimeError("no code is loaded: call load() first")
            self._ensure_worker()
            if not self._worker_has_code:  # a fresh worker after a failure
                code, function = self._loaded
                self._round_trip({"op": "load", "code": code, "function": function})
                self._worker_has_code = True
            values = self._round_trip({"op": "call", "args": [list(a) for a in args_list]})
            if (
                not isinstance(values, list)
                or len(values) != len(args_list)
                or not all(type(v) is float and math.isfinite(v) for v in values)
            ):
                self._kill()
                raise SandboxCrash(
                    "the sandbox worker sent back malformed values; it was restarted"
                )
        return values

    def call(self, *args) -> float:
        """The loaded function on one set of arguments."""
        return self.call_many([args])[0]

    def close(self) -> None:
        """Stops the worker (a later call starts a new one)."""
        with self._lock:
            self._kill()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._kill()
        except Exception:
            pass

    # -- worker life
    def _ensure_worker(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        self._kill()
        import subprocess  # here, never at module level: the worker must not load it

        parent_r, child_w = os.pipe()
        child_r, parent_w = os.pipe()
        env = {
            "PATH": os.defpath,
            "LANG": "C.UTF-8",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        cmd = [
            sys.executable,
            "-I",
            "-B",
            os.path.abspath(__file__),
            "--worker",
            str(child_r),
            str(child_w),
            str(self.memory_mb),
        ]
        try:
            self._proc = subprocess.Popen(
                cmd,
                pass_fds=(child_r, child_w),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd="/",
                close_fds=True,
            )
        finally:
            os.close(child_r)
            os.close(child_w)
        self._to_worker = os.fdopen(parent_w, "wb")
        self._from_worker = parent_r
        if self._started_once:
            self.restarts += 1
        self._started_once = True
        self._worker_has_code = False
        try:
            self._receive(time.monotonic() + self.start_timeout_s, starting=True)
        except SandboxTimeout:
            self._kill()
            raise SandboxCrash(
                f"the sandbox worker did not start within {self.start_timeout_s:g} s"
            ) from None

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        self._worker_has_code = False
        if self._to_worker is not None:
            try:
                self._to_worker.close()
            except OSError:
                pass
            self._to_worker = None
        if self._from_worker is not None:
            os.close(self._from_worker)
            self._from_worker = None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()

    def _round_trip(self, message: dict):
        try:
            _send(self._to_worker, message)
        except (BrokenPipeError, OSError):
            return self._died()
        return self._receive(time.monotonic() + self.time_limit_s)

    def _receive(self, deadline: float, starting: bool = False):
        try:
            header = _read_exactly(self._from_worker, _HEADER.size, deadline)
            size = _HEADER.unpack(header)[0] if header is not None else None
            if size is not None and size > _MAX_MESSAGE:
                self._kill()
                raise SandboxCrash("the sandbox worker sent an oversized reply; it was restarted")
            data = _read_exactly(self._from_worker, size, deadline) if size is not None else None
        except TimeoutError:
            self._kill()
            if starting:
                raise SandboxTimeout("the sandbox worker did not start in time") from None
            raise SandboxTimeout(
                f"the code ran longer than its {self.time_limit_s:g} s time limit and was stopped"
            ) from None
        if data is None:
            return self._died()
        try:
            reply = json.loads(data, parse_constant=_no_constants)
            ok = reply["ok"]
        except (ValueError, KeyError, TypeError):
            self._kill()
            raise SandboxCrash(
                "the sandbox worker sent an unreadable reply; it was restarted"
            ) from None
        if ok:
            return reply.get("value")
        kind = reply.get("error")
        message = str(reply.get("message") or "the code failed")
        if kind not in ("code", "definition"):
            self._kill()  # refused, out of memory or broken: start clean next time
        if starting:
            raise SandboxCrash(f"the sandbox worker could not start: {message}")
        error = _ERRORS.get(kind, SandboxCrash)
        if issubclass(error, CodeError):
            index = reply.get("index")
            raise error(
                message, str(reply.get("traceback") or ""), index if type(index) is int else None
            )
        raise error(message)

    def _died(self):
        proc = self._proc
        code = None
        if proc is not None:
            for _ in range(50):  # it closed its pipe: give it a moment to exit, then kill it
                if (code := proc.poll()) is not None:
                    break
                time.sleep(0.01)
        self._kill()
        raise SandboxCrash(
            f"the sandbox worker died (exit code {code}) while running the code; it may have "
            "exhausted its memory or crashed the interpreter"
        )


def _no_constants(name: str) -> float:
    raise ValueError(f"{name} is not a value")


# ------------------------------------------------------------------------------ worker side
#: The audit hook, as source: compiled in a namespace of its own with empty builtins (only
#: ``str`` and ``int``, for type checks), so its tables are constants of its code object and no
#: monkey-patched function can change what it decides. Any exception it raises (even a
#: NameError) aborts the audited operation: it fails closed.
_HOOK_SOURCE = """
def audit(event, args):
    why = None
    if event == "open":
        mode, flags = args[1], args[2]
        writing = (mode.__class__ is str and ("w" in mode or "a" in mode or "x" in mode
                                               or "+" in mode)) or (
            flags.__class__ is int and flags & 0o3103 != 0)
        why = (f"the code tried to open {args[0]!r:.200} for "
               f"{'writing' if writing else 'reading'}; potential code may not touch files")
    elif event in {"os.listdir", "os.scandir", "glob.glob", "glob.glob/2", "os.listxattr",
                   "os.getxattr", "os.remove", "os.rename", "os.rmdir", "os.mkdir",
                   "os.chmod", "os.chown", "os.chflags", "os.lchflags", "os.truncate",
                   "os.utime", "os.link", "os.symlink", "os.setxattr", "os.removexattr",
                   "tempfile.mkstemp", "tempfile.mkdtemp", "mmap.__new__", "os.chroot"
                   } or event.startswith("shutil."):
        target = f" on {args[0]!r:.200}" if args else ""
        why = f"the code tried {event}{target}; potential code may not touch files"
    elif event.startswith(("socket.", "urllib.", "http.", "ftplib.", "smtplib.", "poplib.",
                           "imaplib.", "nntplib.", "telnetlib.", "webbrowser.", "ssl.")):
        why = f"the code tried to use the network ({event}); potential code has no network access"
    elif event in {"os.system", "subprocess.Popen", "os.posix_spawn", "os.spawn", "os.fork",
                   "os.forkpty", "os.exec", "pty.spawn", "os.startfile",
                   "_posixsubprocess.fork_exec"}:
        what = f": {args[0]!r:.200}" if args else ""
        why = (f"the code tried to start a program ({event}{what}); "
               "potential code may not run programs")
    elif event in {"os.kill", "os.killpg", "signal.pthread_kill"}:
        why = f"the code tried to signal a process ({event}); potential code may not do that"
    elif event == "import":
        why = (f"the code tried to import {args[0]!r:.100}; potential code may only import "
               "ALLOWED_LIST")
    elif event in {"marshal.loads", "marshal.load", "code.__new__", "gc.get_objects",
                   "gc.get_referrers", "gc.get_referents", "pickle.find_class",
                   "sys.addaudithook", "setopencodehook", "sys.remote_exec", "os.putenv",
                   "os.unsetenv", "cpython.PyInterpreterState_New"} or event.startswith((
                       "ctypes.", "fcntl.", "msvcrt.", "winreg.", "_winapi.", "sqlite3.",
                       "syslog.")):
        why = f"the code tried a low-level operation ({event}); potential code must be plain Python"
    elif event in {"resource.setrlimit", "resource.prlimit"}:
        why = f"the code tried to change its resource limits ({event})"
    elif event == "object.__setattr__" and args[1] == "__code__":
        why = "the code tried to replace a function's code; potential code must be plain Python"
    if why is not None:
        note(why)
        raise Refused(why)
"""


class _Refused(BaseException):
    """Raised by the audit hook: a BaseException, so ``except Exception`` in the code does
    not swallow it (the refusal is also noted, for code that catches everything)."""


def _install_audit_hook(note) -> None:
    allowed = ", ".join(m for m in ALLOWED_MODULES if m != "__future__")
    namespace = {"__builtins__": {}, "note": note, "Refused": _Refused, "str": str, "int": int}
    exec(
        compile(_HOOK_SOURCE.replace("ALLOWED_LIST", allowed), "<sandbox audit>", "exec"), namespace
    )
    sys.addaudithook(namespace.pop("audit"))


def _vm_size_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _set_limits(memory_mb: int) -> None:
    address_space = _vm_size_bytes() + memory_mb * 1024 * 1024
    for limit, value in (
        (resource.RLIMIT_AS, address_space),
        (resource.RLIMIT_FSIZE, 0),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, 0),
    ):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):
            if limit == resource.RLIMIT_AS:
                raise


def _safe_builtins(modules: dict) -> dict:
    allowed = set(ALLOWED_MODULES)
    allowed_list = ", ".join(m for m in ALLOWED_MODULES if m != "__future__")

    def restricted_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level != 0 or name not in allowed:
            why = (
                f"the code tried to import {name!r}; potential code may only import {allowed_list}"
            )
            _refusals.append(why)
            raise _Refused(why)
        return modules["__import__"](name, globals, locals, fromlist, level)

    safe = dict(builtins.__dict__)
    for name in (
        "exec",
        "eval",
        "compile",
        "input",
        "breakpoint",
        "help",
        "exit",
        "quit",
        "copyright",
        "credits",
        "license",
        "__loader__",
        "__spec__",
    ):
        safe.pop(name, None)
    safe["__import__"] = restricted_import
    return safe


_refusals: list[str] = []


def _code_traceback(exc: BaseException, lines: list[str]) -> str:
    """The exception with the code's own frames only: what a LLM needs to fix it.

    Built by hand, not with ``traceback``: that module reads other frames' source files,
    and after the lock every file open is refused.
    """
    out = []
    if isinstance(exc, SyntaxError):
        out.append(f'  File "{CODE_FILENAME}", line {exc.lineno}')
        if exc.text:
            text = exc.text.rstrip("\n")
            out.append("    " + text.strip())
            if exc.offset:
                indent = len(text) - len(text.lstrip())
                out.append("    " + " " * max(0, exc.offset - 1 - indent) + "^")
        out.append(f"{type(exc).__name__}: {exc.msg}")
    else:
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code.co_filename == CODE_FILENAME:
                frames.append((tb.tb_lineno, code.co_name))
            tb = tb.tb_next
        if frames:
            out.append("Traceback (most recent call last):")
        for lineno, name in frames[-6:]:
            out.append(f'  File "{CODE_FILENAME}", line {lineno}, in {name}')
            if 0 < lineno <= len(lines):
                out.append("    " + lines[lineno - 1].strip())
        out.append(_exception_line(exc))
    text = "\n".join(out)
    if len(text) > _TRACEBACK_CHARS:
        text = text[: _TRACEBACK_CHARS // 3] + "\n...\n" + text[-2 * _TRACEBACK_CHARS // 3 :]
    return text


def _exception_line(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = ""
    text = " ".join(text.split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _as_value(value) -> float | str:
    """A finite float, or why the value is not one."""
    if isinstance(value, numbers.Real):
        try:
            number = float(value)
        except Exception:
            return f"a {type(value).__name__} that does not convert to float"
        return number if math.isfinite(number) else f"{number}"
    kind = type(value).__name__
    return f"a {kind}"


def _worker(read_fd: int, write_fd: int, memory_mb: int) -> None:
    sys.dont_write_bytecode = True
    sys.path[:] = [
        p
        for p in sys.path
        if p and os.path.abspath(p) != os.path.dirname(os.path.abspath(__file__))
    ]
    outgoing = os.fdopen(write_fd, "wb")
    try:
        modules = {name: importlib.import_module(name) for name in ALLOWED_MODULES}
        modules["__import__"] = builtins.__import__
        if "_posixsubprocess" in sys.modules:  # an unaudited fork_exec in reach: refuse to run
            raise RuntimeError("_posixsubprocess is loaded in the sandbox worker")
        safe_builtins = _safe_builtins(modules)
        _set_limits(memory_mb)
        _install_audit_hook(_refusals.append)
    except BaseException as e:
        _send(outgoing, {"ok": False, "error": "crash", "message": _exception_line(e)})
        return
    sys.stdin = sys.stdout = sys.stderr = None
    _send(outgoing, {"ok": True, "value": None})

    function, lines, name = None, [], ""
    while True:
        header = _read_exactly(read_fd, _HEADER.size, None)
        if header is None:
            return
        data = _read_exactly(read_fd, _HEADER.unpack(header)[0], None)
        if data is None:
            return
        request = json.loads(data)
        op = request.get("op")
        del _refusals[:]
        index = None
        try:
            if op == "load":
                function, name = None, request["function"]
                lines = request["code"].splitlines()
                try:
                    compiled = compile(request["code"], CODE_FILENAME, "exec")
                except (SyntaxError, ValueError) as e:
                    raise _DefinitionError(
                        f"the code does not compile: {_exception_line(e)}",
                        _code_traceback(e, lines),
                    ) from None
                # A real module in sys.modules: dataclasses and typing look the code's module up.
                module = types.ModuleType("potential_code")
                sys.modules["potential_code"] = module
                namespace = module.__dict__
                namespace["__builtins__"] = safe_builtins
                namespace.update({k: modules[v] for k, v in PRELOADED_NAMES.items()})
                try:
                    exec(compiled, namespace)
                except (_Refused, MemoryError):
                    raise
                except BaseException as e:
                    raise _DefinitionError(
                        f"the code raised while being defined: {_exception_line(e)}",
                        _code_traceback(e, lines),
                    ) from None
                candidate = namespace.get(name)
                if not callable(candidate):
                    defined = sorted(
                        k
                        for k, v in namespace.items()
                        if callable(v) and not k.startswith("__") and k not in PRELOADED_NAMES
                    )
                    raise _DefinitionError(
                        f"the code defines no function named {name!r}"
                        + (f" (it defines: {', '.join(defined)})" if defined else ""),
                        "",
                    )
                function = candidate
                result = None
            elif op == "call":
                if function is None:
                    raise _DefinitionError("no function is loaded", "")
                result = []
                for index, args in enumerate(request["args"]):
                    try:
                        value = _as_value(function(*args))
                    except (_Refused, MemoryError):
                        raise
                    except BaseException as e:
                        raise _CallError(
                            f"{name} raised {_exception_line(e)} on item {index}",
                            _code_traceback(e, lines),
                            index,
                        ) from None
                    if value.__class__ is not float:
                        raise _CallError(
                            f"{name} returned {value} for item {index}; "
                            "it must return one finite float",
                            "",
                            index,
                        )
                    result.append(value)
                index = None
            elif op == "exit":
                return
            else:
                raise RuntimeError(f"unknown request {op!r}")
            if _refusals:  # the code caught a refusal and went on: still a refusal
                reply = {"ok": False, "error": "refusal", "message": _refusals[0]}
            else:
                reply = {"ok": True, "value": result}
        except _Refused as e:
            reply = {
                "ok": False,
                "error": "refusal",
                "message": _refusals[0] if _refusals else str(e),
            }
        except MemoryError:
            reply = {
                "ok": False,
                "error": "memory",
                "message": (
                    f"the code ran out of its {memory_mb} MB memory limit"
                    + (f" on item {index}" if index is not None else "")
                ),
            }
        except _DefinitionError as e:
            reply = {
                "ok": False,
                "error": "definition",
                "message": e.args[0],
                "traceback": e.args[1],
            }
        except _CallError as e:
            reply = {
                "ok": False,
                "error": "code",
                "message": e.args[0],
                "traceback": e.args[1],
                "index": e.args[2],
            }
        except BaseException as e:  # the worker's own failure
            reply = {"ok": False, "error": "crash", "message": _exception_line(e)}
        result = None
        _send(outgoing, reply)


class _DefinitionError(Exception):
    pass


class _CallError(Exception):
    pass


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "--worker":
    _worker(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
