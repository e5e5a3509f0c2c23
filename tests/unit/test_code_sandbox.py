"""The BK-Code sandbox: what untrusted code may not do, how each refusal reads, and that the
sandbox keeps working after every kind of failure."""

from __future__ import annotations

import os
import uuid

import pytest

from rl_bk.methods.bk.code.sandbox import (
    CodeDefinitionError,
    CodeError,
    Sandbox,
    SandboxCrash,
    SandboxMemoryError,
    SandboxRefusal,
    SandboxTimeout,
)

GOOD = """
import math
import numpy as np
from collections import Counter

def f(x, y=0.0):
    return float(np.tanh(x) + math.sqrt(abs(y)) + len(Counter("ab")))
"""
# Reaches the os module without importing anything: the classic jail escape.
ESCAPE = "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(time_limit_s=1.0, memory_mb=256) as sb:
        yield sb


def body(*lines: str) -> str:
    """A function ``f()`` running ``lines``, then returning 1.0."""
    return "def f():\n" + "".join(f"    {line}\n" for line in lines) + "    return 1.0\n"


def run(sandbox: Sandbox, code: str, args: list | None = None) -> list[float]:
    sandbox.load(code, "f")
    return sandbox.call_many(args if args is not None else [[]])


def still_works(sandbox: Sandbox) -> None:
    assert run(sandbox, GOOD, [[0.0, 4.0], [0.0]]) == [4.0, 2.0]


def test_a_good_function_runs_a_batch_in_one_call(sandbox):
    values = run(sandbox, GOOD, [[0.0, 4.0], [0.0, 9.0], [100.0]])
    assert values == [4.0, 5.0, 3.0]
    assert all(type(v) is float for v in values)
    sandbox.load("def f(n):\n    return n * 2\n", "f")  # ints are numbers too
    assert sandbox.call_many([[1], [2]]) == [2.0, 4.0]


IDIOMS = """
from __future__ import annotations
import statistics
from collections import defaultdict, namedtuple
from dataclasses import dataclass
from typing import List

Point = namedtuple("Point", "x y")

@dataclass
class Score:
    base: float = 1.0

def f(window: List[dict]) -> float:
    counts = defaultdict(int)
    for step in window:
        counts[step["action"]] += 1
    print("debugging output goes nowhere", counts)
    rng = np.random.default_rng(0)  # np, math and re need no import
    return Score().base + Point(1, 2).y + statistics.mean([1, 3]) + 0 * rng.random()
"""


def test_ordinary_idioms_work(sandbox):
    assert run(sandbox, IDIOMS, [[[{"caption": "x", "action": None}]]]) == [5.0]


@pytest.mark.parametrize(
    "code, words",
    [
        (body("open(PATH, 'w').write('x')"), ["open", "for writing", "may not touch files"]),
        (body("open(PATH, 'a')"), ["for writing"]),
        (body(f"{ESCAPE}.__init__.__globals__['open'](PATH, 0o101)"), ["for writing"]),
        (body(f"{ESCAPE}.__init__.__globals__['remove']('/tmp')"), ["os.remove", "touch files"]),
        (body("len(open('/etc/passwd').read())"), ["'/etc/passwd' for reading", "touch files"]),
        (body(f"{ESCAPE}.__init__.__globals__['listdir']('/')"), ["os.listdir"]),
    ],
    ids=["write", "append", "os-open-write", "remove", "read-etc-passwd", "listdir"],
)
def test_files_are_refused(sandbox, code, words):
    path = f"/tmp/rlbk-sandbox-{uuid.uuid4().hex}"
    with pytest.raises(SandboxRefusal) as e:
        run(sandbox, code.replace("PATH", repr(path)))
    for word in words:
        assert word in str(e.value)
    assert not os.path.exists(path)
    still_works(sandbox)


@pytest.mark.parametrize(
    "code, words",
    [
        (
            body("import socket", "socket.create_connection(('example.com', 80))"),
            ["import 'socket'"],
        ),
        (
            body(
                f"s = {ESCAPE}.__init__.__globals__['__builtins__']['__import__']('socket')",
                "s.socket().connect(('127.0.0.1', 9))",
            ),
            ["import 'socket'"],
        ),
    ],
    ids=["import-socket", "socket-via-escape"],
)
def test_the_network_is_refused(sandbox, code, words):
    with pytest.raises(SandboxRefusal) as e:
        run(sandbox, code)
    for word in words:
        assert word in str(e.value)
    still_works(sandbox)


@pytest.mark.parametrize(
    "code, words",
    [
        (body("import subprocess", "subprocess.run(['touch', PATH])"), ["import 'subprocess'"]),
        (
            body(f"{ESCAPE}.__init__.__globals__['system']('touch ' + PATH)"),
            ["start a program (os.system", "may not run programs"],
        ),
        (
            body(
                f"g = {ESCAPE}.__init__.__globals__",
                "g['posix_spawn']('/usr/bin/touch', ['touch', PATH], {})",
            ),
            ["os.posix_spawn"],
        ),
        (body(f"{ESCAPE}.__init__.__globals__['fork']()"), ["os.fork"]),
        (
            body(f"g = {ESCAPE}.__init__.__globals__", "g['execv']('/usr/bin/touch', ['t', PATH])"),
            ["os.exec"],
        ),
        (
            body(f"g = {ESCAPE}.__init__.__globals__", "g['kill'](g['getppid'](), 9)"),
            ["signal a process"],
        ),
    ],
    ids=["subprocess", "os-system", "posix-spawn", "fork", "exec", "kill-parent"],
)
def test_programs_are_refused(sandbox, code, words):
    path = f"/tmp/rlbk-sandbox-{uuid.uuid4().hex}"
    with pytest.raises(SandboxRefusal) as e:
        run(sandbox, code.replace("PATH", repr(path)))
    for word in words:
        assert word in str(e.value)
    assert not os.path.exists(path)
    still_works(sandbox)


@pytest.mark.parametrize(
    "code, words",
    [
        ("import os\ndef f():\n    return 1.0\n", ["import 'os'", "may only import", "numpy"]),
        (body("__import__('os')"), ["import 'os'"]),
        (body("import importlib", "importlib.import_module('os')"), ["import 'importlib'"]),
        (body("from importlib import import_module"), ["import 'importlib'"]),
        (body("from . import x"), ["import"]),
        (body("import numpy.ctypeslib"), ["import 'numpy.ctypeslib'"]),
        (
            body(
                "c = [c for c in ().__class__.__base__.__subclasses__() "
                "if c.__name__ == 'BuiltinImporter'][0]",
                "c.load_module('gc').get_objects()",
            ),
            ["gc.get_objects", "plain Python"],
        ),
        (body("import numpy", "numpy.ctypeslib.as_array"), ["import 'numpy.ctypeslib'"]),
    ],
    ids=[
        "import-os",
        "dunder-import",
        "importlib",
        "from-importlib",
        "relative",
        "numpy-ctypeslib",
        "gc-via-importer",
        "numpy-attribute",
    ],
)
def test_disallowed_imports_are_refused(sandbox, code, words):
    with pytest.raises(SandboxRefusal) as e:
        run(sandbox, code)
    for word in words:
        assert word in str(e.value)
    still_works(sandbox)


def test_a_refusal_the_code_catches_is_still_reported(sandbox):
    code = body("try:", "    open('/tmp/x', 'w')", "except BaseException:", "    pass")
    with pytest.raises(SandboxRefusal, match="for writing"):
        run(sandbox, code)
    still_works(sandbox)


def test_an_infinite_loop_times_out_and_the_sandbox_recovers(sandbox):
    with pytest.raises(SandboxTimeout, match="ran longer than its 1 s time limit"):
        run(sandbox, "def f():\n    while True:\n        pass\n")
    still_works(sandbox)


@pytest.mark.parametrize(
    "code",
    [
        body("x = bytearray(10**10)"),
        body("x = []", "while True:", "    x.append([0] * 1000000)"),  # 8 MB a step: fast when busy
    ],
    ids=["bytearray", "growing-list"],
)
def test_memory_bombs_hit_the_memory_limit(sandbox, code):
    with pytest.raises(SandboxMemoryError, match="256 MB memory limit"):
        run(sandbox, code)
    still_works(sandbox)


@pytest.mark.parametrize(
    "code, words",
    [
        ("def f():\n    return float('nan')\n", ["returned nan", "finite float"]),
        ("def f():\n    return 'high'\n", ["returned a str"]),
        ("def f():\n    return (1.0, {})\n", ["returned a tuple"]),
        ("def f():\n    return None\n", ["returned a NoneType"]),
    ],
    ids=["nan", "str", "tuple", "none"],
)
def test_results_must_be_finite_floats(sandbox, code, words):
    with pytest.raises(CodeError) as e:
        run(sandbox, code)
    for word in words:
        assert word in str(e.value)
    still_works(sandbox)


def test_an_exception_in_the_code_comes_back_with_a_readable_traceback(sandbox):
    code = "def f(window):\n    last = window[-1]\n    return last['captions']\n"
    sandbox.load(code, "f")
    with pytest.raises(CodeError) as e:
        sandbox.call_many([[[{"caption": "a"}]], [[{"captions": 1.0}]]])
    err = e.value
    assert type(err) is CodeError and err.index == 0
    assert str(err) == "f raised KeyError: 'captions' on item 0"
    assert "line 3, in f" in err.traceback and "return last['captions']" in err.traceback
    assert "sandbox.py" not in err.traceback  # only the code's own frames
    assert err.details().startswith(str(err))
    assert sandbox.call_many([[[{"captions": 2.0}]]]) == [2.0]  # same worker, still loaded


@pytest.mark.parametrize(
    "code, words",
    [
        ("def f(:\n    return 1.0\n", ["does not compile", "SyntaxError"]),
        ("def g():\n    return 1.0\n", ["no function named 'f'", "it defines: g"]),
        ("raise ValueError('boom')\n", ["raised while being defined", "boom"]),
    ],
    ids=["syntax", "missing", "raises"],
)
def test_broken_definitions_are_definition_errors(sandbox, code, words):
    with pytest.raises(CodeDefinitionError) as e:
        sandbox.load(code, "f")
    for word in words:
        assert word in str(e.value)
    with pytest.raises(RuntimeError, match="no code is loaded"):
        sandbox.call_many([[]])
    still_works(sandbox)


def test_the_loaded_code_comes_back_after_a_restart():
    code = "def f(x):\n    if x:\n        open('/tmp/x', 'w')\n    return 1.0\n"
    with Sandbox(time_limit_s=2.0) as sb:
        sb.load(code, "f")
        with pytest.raises(SandboxRefusal):
            sb.call_many([[1]])
        assert sb.call_many([[0], [0]]) == [1.0, 1.0]  # a new worker, the same code
        assert sb.restarts == 1


def test_a_worker_that_dies_is_replaced(sandbox):
    with pytest.raises(SandboxCrash, match=r"died \(exit code 3\)"):
        run(sandbox, body(f"{ESCAPE}.__init__.__globals__['_exit'](3)"))
    still_works(sandbox)
