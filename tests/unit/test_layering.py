"""The import layers: the library (``rl_bk`` but its entry points) never imports the layers
above it, and no module imports itself back through others. Imports inside functions count:
a lazy import still ties the two modules together."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("rl_bk", "serve_deployments", "env_registry")
#: The layers above the library: sweeps and their knowledge builds, and the command line; and
#: of each method's folder, the declarations (``method.py``, the registry) that build on them.
ABOVE_THE_LIBRARY = (
    "rl_bk.experiments",
    "rl_bk.cli",
    "serve_deployments",
    "rl_bk.methods.registry",
    "rl_bk.methods.base",
)


def module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The project modules ``path`` imports (``from a import b`` counts as ``a.b`` when that
    is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found.update(n for n in names if n in known)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    return {m: imports_of(p, set(files)) - {m} for m, p in files.items()}


def is_within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def is_above_the_library(module: str) -> bool:
    declaration = module.startswith("rl_bk.methods.") and module.endswith(".method")
    return declaration or is_within(module, ABOVE_THE_LIBRARY)


def test_the_library_never_imports_the_layers_above_it(graph):
    library = [m for m in graph if m.startswith("rl_bk") and not is_above_the_library(m)]
    assert len(library) > 50
    assert "rl_bk.methods.bk.potential_shaping" in library
    assert not is_above_the_library("rl_bk.methods.oni.intrinsic_reward")
    assert is_above_the_library("rl_bk.methods.oni.method")
    upward = {m: sorted(d for d in graph[m] if is_above_the_library(d)) for m in library}
    assert {m: d for m, d in upward.items() if d} == {}


def test_the_env_packages_never_import_the_library(graph):
    # The family packages hold the envs, captions and oracle rules; the library calls them.
    envs = [m for m in graph if is_within(m, ("env_registry",))]
    assert len(envs) > 20
    upward = {
        m: sorted(d for d in graph[m] if is_within(d, ("rl_bk", "serve_deployments"))) for m in envs
    }
    assert {m: d for m, d in upward.items() if d} == {}


def test_the_labeler_loads_no_simulator():
    # A labeler reads the families' vocabularies, descriptions and oracle rules; none of them
    # may pull in minigrid, crafter or nle (seconds and hundreds of MB per process).
    code = (
        "import sys, rl_bk.labeling.prompts, rl_bk.labeling.backends.oracle, "
        "rl_bk.methods.bk.code.descriptions; "
        "print(sorted(m for m in ('minigrid', 'crafter', 'nle') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_the_cli_loads_no_torch_before_it_pins_numerics():
    # `rl-bk knowledge` pins torch's numerics before torch loads, and `rl-bk --help` answers
    # without Ray: both rely on the CLI's module-level imports loading neither.
    code = (
        "import sys, rl_bk.cli; "
        "print(sorted(m for m in ('torch', 'ray', 'gymnasium', 'nle') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_no_module_imports_itself_back_through_others(graph):
    # Tarjan's strongly connected components: any with two or more modules is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert cycles == []


def test_the_labeling_package_stands_on_the_env_packages_alone(graph):
    # Everything that asks an LLM for labels lives in rl_bk.labeling; the methods use it, it
    # uses none of them (only the families' vocabularies, descriptions and oracle rules).
    labeling = [m for m in graph if is_within(m, ("rl_bk.labeling",))]
    assert len(labeling) > 15
    outside = {
        m: sorted(d for d in graph[m] if not is_within(d, ("rl_bk.labeling", "env_registry")))
        for m in labeling
    }
    assert {m: d for m, d in outside.items() if d} == {}


def test_a_labeler_is_built_in_one_place(graph):
    # A config becomes a working labeler in rl_bk.labeling (LabelerSpec.build); outside it,
    # only the Serve app that hosts one, the experiments layer's pre-flight check and the
    # command line reach the backend registry or the service.
    builders = ("rl_bk.labeling.backends.registry", "rl_bk.labeling.service")
    allowed = (
        "rl_bk.labeling",
        "serve_deployments.labeler",
        "rl_bk.experiments.labelers",
        "rl_bk.cli",
    )
    reaching = {m for m in graph if any(d in builders for d in graph[m])}
    assert "rl_bk.labeling.labeler" in reaching  # the rule reads real imports
    assert sorted(m for m in reaching if not is_within(m, allowed)) == []


def test_the_sweep_layer_names_no_method():
    """``rl_bk/experiments`` never branches on a method's
    name: what differs per method is a hook on its declaration (``Method.before_sweep``,
    ``Method.trial_params``), so a new method needs no edit here. "ppo" is also the name of
    an algorithm (``algorithm: ppo``), which the layer does choose between."""
    from rl_bk.methods.registry import METHODS

    names = set(METHODS) - {"ppo"}
    found = []
    for path in sorted((ROOT / "rl_bk" / "experiments").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Constant) and side.value in names:
                    found.append(f"{path.name}:{node.lineno} compares with {side.value!r}")
    assert not found, found


def _says_why(comment: str) -> bool:
    # A noqa or type: comment silences a checker; it does not say why the import is there.
    text = comment.lstrip("#").strip()
    return bool(text) and not text.startswith(("noqa", "type:"))


def in_function_imports_without_a_reason(path: Path) -> list[str]:
    """The imports inside functions of ``path`` that say nothing of why they are there: no
    comment on their lines, none on the line above, and not in a group (imports one after the
    other) whose first one has one."""
    lines = path.read_text().splitlines()
    imports = {}  # first line -> node, each import inside a function once
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    imports[node.lineno] = node

    def explained(node: ast.stmt) -> bool:
        own = lines[node.lineno - 1 : node.end_lineno]
        if any("#" in line and _says_why(line[line.index("#") :]) for line in own):
            return True
        above = node.lineno - 2
        while above >= 0 and not lines[above].strip():
            above -= 1
        if above < 0:
            return False
        if lines[above].strip().startswith("#"):
            return _says_why(lines[above].strip())
        group = next((n for n in imports.values() if n.end_lineno == above + 1), None)
        return group is not None and explained(group)

    relative = path.relative_to(ROOT)
    return [
        f"{relative}:{n.lineno}: {lines[n.lineno - 1].strip()}"
        for n in sorted(imports.values(), key=lambda n: n.lineno)
        if not explained(n)
    ]


def test_an_import_inside_a_function_says_why():
    # Imports go at the top of a module, except where an optional dependency, an import cycle
    # or a light entry point (rl-bk --help, the method registry) needs them in a function:
    # each such import says which, in a comment on its line or the line above (one comment
    # above a group of them is enough).
    files = sorted((ROOT / "rl_bk").rglob("*.py"))
    assert len(files) > 100
    unexplained = [line for path in files for line in in_function_imports_without_a_reason(path)]
    assert unexplained == []
