"""The floors of the house, read from the AST of every module (function-local and
`TYPE_CHECKING` imports included, so a local import cannot hide a cycle):

- no import cycle between modules;
- no module imports from a floor above its own;
- no rule imports another rule (what two rules share lives in `facts/` or
  `torch_api.py`);
- the `check` path stays light: the verifier and rich are not imported by what
  `accel-lint check` loads for plain output;
- the verifier's child side (the hook and the runner package, which run inside
  the user's training process and interpreter) imports the protocol module and
  nothing else of accel_lint: not the session, not the CLI.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT

PACKAGE = ROOT / "accel_lint"

# Top to bottom: a module may import its own floor and the floors below it.
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("face", ("accel_lint.cli", "accel_lint.__main__", "accel_lint.server")),
    (
        "wings",
        (
            "accel_lint.verify",
            "accel_lint.lint",
            "accel_lint.fixer",
            "accel_lint.files",
            "accel_lint.gitignore",
            "accel_lint.writeback",
            "accel_lint.cache",
            "accel_lint.parallel",
            "accel_lint.report",
            "accel_lint.notebook",
            "accel_lint.baseline",
        ),
    ),
    (
        "core",
        (
            "accel_lint.engine",
            "accel_lint.config",
            "accel_lint.rewrite",
            "accel_lint.fixcheck",
            "accel_lint.positions",
        ),
    ),
    ("rules", ("accel_lint.rules",)),
    (
        "base",
        (
            "accel_lint.rule",
            "accel_lint.facts",
            "accel_lint.edits",
            "accel_lint.layout",
        ),
    ),
    (
        "ground",
        (
            "accel_lint.names",
            "accel_lint.called",
            "accel_lint.purpose",  # what a file is for, from its path
            "accel_lint.startup",
            "accel_lint.torch_api",  # data only: what the prefilters and the rules know
            "accel_lint.incremental",
            "accel_lint.walk",
            "accel_lint.source",
            "accel_lint.noqa",
            "accel_lint.parse",
            "accel_lint.diagnostic",
            "accel_lint.pages",
        ),
    ),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {
    _module_name(p): p
    for p in PACKAGE.rglob("*.py")
    # the verifier's child-side code runs inside the user's process, loaded by path
    if "_pages" not in p.parts
}


def _floor(module: str) -> int:
    if module == "accel_lint":
        return len(FLOORS) - 1
    for index, (_, prefixes) in enumerate(FLOORS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    raise AssertionError(f"{module} is on no floor: add it to FLOORS")


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("accel_lint"):
                    yield _known(alias.name), node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            if not base.startswith("accel_lint"):
                continue
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield (candidate if candidate in MODULES else _known(base)), node.lineno


def _known(name: str) -> str:
    while name not in MODULES and "." in name:
        name = name.rpartition(".")[0]
    return name


GRAPH = {
    module: sorted({target for target, _ in _imports(module, path) if target != module})
    for module, path in MODULES.items()
}


def test_every_module_is_on_a_floor() -> None:
    for module in MODULES:
        _floor(module)


def test_no_import_cycles() -> None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in GRAPH.get(module, ()):
            if _is_package_of(target, module):
                continue  # a module imports its own package's __init__ when Python loads it
            if state.get(target) == 1:
                cycle = [*stack[stack.index(target) :], target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if state.get(target) is None:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)


def _is_package_of(package: str, module: str) -> bool:
    return module.startswith(package + ".")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_import(module: str) -> None:
    own = _floor(module)
    for target, line in _imports(module, MODULES[module]):
        if target == module or _is_package_of(target, module):
            continue
        assert _floor(target) >= own, (
            f"{module}:{line} imports {target}, on the floor above "
            f"({FLOORS[_floor(target)][0]} over {FLOORS[own][0]})"
        )


def _rule_package(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["accel_lint", "rules"]:
        return parts[2]
    return None


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _rule_package(m)))
def test_no_rule_imports_another(module: str) -> None:
    own = _rule_package(module)
    for target, line in _imports(module, MODULES[module]):
        other = _rule_package(target)
        assert other in (None, own), f"{module}:{line} imports the rule module {target}"
        assert target != "accel_lint.rules", f"{module}:{line} imports the rule table"


def test_check_loads_neither_the_verifier_nor_rich(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(range(4))\nx = 1\n",
        encoding="utf-8",
    )
    probe = (
        "import sys\n"
        "from accel_lint.cli import main\n"
        "try:\n"
        "    main(['check', sys.argv[1], '--no-cache', '--output-format', sys.argv[2]])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('rich', 'accel_lint.verify',"
        " 'accel_lint.notebook',"
        " 'torch')))\n"
        "sys.stderr.write(repr(loaded))\n"
    )
    for output in ("concise", "json", "full"):
        result = subprocess.run(
            [sys.executable, "-c", probe, str(script), output],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert result.stderr.strip().splitlines()[-1] == "[]", (output, result.stderr)


# The verifier's child side runs in the user's interpreter, which may have torch
# and nothing of ours: it may import the standard library, torch, its own modules
# and the protocol module shared with the parent (which needs only the standard
# library). Anything else of accel_lint (the session, the CLI) would pull in the
# parent's dependencies and, through them, an import cycle across processes.
PROTOCOL = "accel_lint.verify.protocol"
CHILD_SIDE = ("accel_lint.verify.runner", "accel_lint.verify.hook")
CHILD_THIRD_PARTY = frozenset({"torch"})
CHILD_OPTIONAL = frozenset({"numpy"})  # only inside a function, used when present


def _child_side(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in CHILD_SIDE)


def _outside_imports(path: Path) -> Iterator[tuple[str, int, bool]]:
    """Top-level names of the absolute imports of anything but accel_lint, and
    whether the import is inside a function (not run when the module loads)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    guarded: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            guarded.update(ast.walk(node))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.partition(".")[0]
            if top not in ("accel_lint", "__future__"):
                yield top, node.lineno, node in guarded


def test_the_child_side_is_where_the_floor_plan_says() -> None:
    child = sorted(m for m in MODULES if _child_side(m))
    assert "accel_lint.verify.hook.sitecustomize" in child
    assert {"accel_lint.verify.runner", "accel_lint.verify.runner.server"} <= set(child)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _child_side(m)))
def test_the_runner_and_hook_import_only_the_protocol(module: str) -> None:
    for target, line in _imports(module, MODULES[module]):
        assert target == PROTOCOL or _child_side(target), (
            f"{module}:{line} imports {target}: the child side may import only {PROTOCOL}"
        )
    for name, line, guarded in _outside_imports(MODULES[module]):
        assert (
            name in sys.stdlib_module_names
            or name in CHILD_THIRD_PARTY
            or (name in CHILD_OPTIONAL and guarded)
        ), f"{module}:{line} imports {name}, which the user's interpreter may not have"


def test_the_protocol_needs_only_the_standard_library() -> None:
    assert list(_imports(PROTOCOL, MODULES[PROTOCOL])) == []
    for name, line, _ in _outside_imports(MODULES[PROTOCOL]):
        assert name in sys.stdlib_module_names, f"{PROTOCOL}:{line} imports {name}"


def test_the_runner_loads_in_an_interpreter_without_accel_lint(tmp_path: Path) -> None:
    """What the AST says, checked by loading: the hook, the protocol, the runner and
    the warm interpreter's server load with accel_lint and its dependencies blocked."""
    hook = PACKAGE / "verify" / "hook" / "sitecustomize.py"
    probe = textwrap.dedent(
        f"""
        import importlib.abc, importlib.util, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in ("accel_lint", "click", "libcst", "rich", "numpy"):
                    raise ImportError("blocked: " + name)
                return None

        sys.meta_path.insert(0, Block())
        spec = importlib.util.spec_from_file_location("_hook", {str(hook)!r})
        hook = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(hook)
        for name in ("protocol", "runner", "runner.server"):
            hook.load(name)
        print(sorted(m for m in sys.modules if m.startswith("_accel_lint_verify")))
        print("ours:", sorted(m for m in sys.modules if m.startswith("accel_lint")))
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_LINT")}
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "'_accel_lint_verify.runner.server'" in result.stdout
    assert "'_accel_lint_verify.runner.observe'" in result.stdout
    assert "ours: []" in result.stdout


# What `check` of one file (pre-commit's call) needs is libcst's parser and node
# classes, the engine and the rules the file's words name; what it does not need
# costs start-up time on every commit, so it must stay out: libcst's matchers and
# codemods, the worker pool (fewer than eight files to lint), diffs (no fix shown),
# the cache writer's temporary files and its hashes (no cache), a TOML reader (no
# configuration), the traceback module (no bug of ours to print).
# The fixer may load: the summary counts the findings a file's fixes reveal.
NOT_FOR_ONE_FILE = (
    "libcst.matchers",
    "libcst.codemod",
    "multiprocessing",
    "concurrent.futures",
    "difflib",
    "tempfile",
    "hashlib",
    "tomllib",
    "traceback",
    "accel_lint.parallel",
)


@pytest.mark.parametrize("fixture", ["cnn_bn", "data_parallel"])
def test_check_of_one_file_imports_only_what_it_needs(tmp_path: Path, fixture: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        (ROOT / "fixtures" / fixture / "train.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    probe = textwrap.dedent(
        """
        import atexit, runpy, sys

        def report():
            sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n")

        atexit.register(report)
        sys.argv = ["accel-lint", *sys.argv[1:]]
        runpy.run_module("accel_lint", run_name="__main__")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, "check", "train.py", "--no-cache", "--isolated"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr  # findings were reported
    assert {"cnn_bn": "ACL201", "data_parallel": "ACL401"}[fixture] in result.stdout
    loaded = result.stderr.rpartition("MODULES ")[2].split()
    assert "libcst" in loaded and "accel_lint.engine" in loaded  # the file was parsed
    unwanted = [
        name
        for name in loaded
        if any(name == bad or name.startswith(bad + ".") for bad in NOT_FOR_ONE_FILE)
    ]
    assert unwanted == []
