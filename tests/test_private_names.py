"""No module uses another module's private names: `from x import _y`, `import x._y` or `x._y` where x is a rise_core or
explorer module, anywhere outside tests/ (the library, the explorer, the pages, the benchmarks, the scripts; read with
`ast`). A name another module needs is public: renamed and documented. A private module (`diagnostics/_common.py`)
belongs to its package: the package's own modules may import it. Tests may reach into privates (they are not read)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("rise_core", "explorer")  # the packages whose privates stay private
SKIPPED = {"tests", "build", "dist", "__pycache__"}  # and every directory whose name starts with a dot


def python_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py")
                  if not any(part in SKIPPED or part.startswith(".") for part in p.relative_to(ROOT).parts[:-1]))


def module_of(path: Path) -> str:
    """'rise_core.store.index' for rise_core/store/index.py, 'rise_core.store' for its __init__.py."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def allowed(importer: str, module: str, name: str) -> bool:
    """Whether `importer` may use `module`'s private `name`: its own names only; a private submodule, its package's."""
    if is_module(f"{module}.{name}"):
        return importer == module or importer.startswith(module + ".")
    return importer == module


def violations(source: str, importer: str, is_package: bool = False, where: str = "") -> list[str]:
    """Each use in `source` (the module `importer`) of a private name of another rise_core or explorer module."""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    tree = ast.parse(source)
    modules: dict[str, str] = {}  # local name -> the rise_core/explorer module it is bound to
    found: list[str] = []

    def check(module: str, name: str, line: int, how: str) -> None:
        if private(name) and not allowed(importer, module, name):
            found.append(f"{where or importer}:{line} {how} {module}.{name}")

    def check_path(dotted: str, line: int, how: str) -> None:
        parts = dotted.split(".")
        for i in range(1, len(parts)):
            check(".".join(parts[:i]), parts[i], line, how)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in TARGETS:
                    check_path(alias.name, node.lineno, "imports")
                    local = alias.asname or alias.name.split(".")[0]
                    modules[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[:len(package) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] not in TARGETS:
                continue
            check_path(base, node.lineno, "imports from")
            for alias in node.names:
                check(base, alias.name, node.lineno, "imports")
                if is_module(f"{base}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{base}.{alias.name}"

    def module_value(node: ast.expr) -> str | None:
        """The module an expression names (`compare`, `rise_core.ann.rank`), or None when it names no module."""
        if isinstance(node, ast.Name):
            return modules.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = module_value(node.value)
            if parent is not None and is_module(f"{parent}.{node.attr}"):
                return f"{parent}.{node.attr}"
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            module = module_value(node.value)
            if module is not None:
                check(module, node.attr, node.lineno, "uses")
    return found


@pytest.mark.parametrize(("source", "importer", "bad"), [
    ("from rise_core.compare import _unit_rows", "rise_core.methods", ["rise_core.compare._unit_rows"]),
    ("from .compare import _unit_rows", "rise_core.methods", ["rise_core.compare._unit_rows"]),
    ("import rise_core.compare as c\nc._unit_rows(x)", "outside.script", ["rise_core.compare._unit_rows"]),
    ("from rise_core import ann\nann.build._index_reader", "outside.script", ["rise_core.ann.build._index_reader"]),
    ("def f():\n    import rise_core.ann\n    return rise_core.ann.rank._LOADED", "app", ["rise_core.ann.rank._LOADED"]),
    ("from rise_core.diagnostics._common import DiagnosticResult", "outside.script", ["rise_core.diagnostics._common"]),
    ("from rise_core.diagnostics._common import DiagnosticResult", "rise_core.diagnostics.energy", []),
    ("from ._common import DiagnosticResult", "rise_core.diagnostics.energy", []),
    ("from rise_core.compare import rise_scores\nindex._private, rise_scores.__name__", "app", []),
    ("import numpy as np\nnp._NoValue", "rise_core.compare", []),
])
def test_the_check_finds_known_uses(source, importer, bad):
    assert [v.split(" ")[-1] for v in violations(source, importer)] == bad


def test_no_module_uses_another_modules_private_names():
    assert len(python_files()) > 100 and {"rise_core", "explorer", "app_pages"} <= {
        p.relative_to(ROOT).parts[0] for p in python_files()}
    found = []
    for path in python_files():
        found += violations(path.read_text(), module_of(path), path.name == "__init__.py",
                            str(path.relative_to(ROOT)))
    assert not found, "private names used across modules (make them public: renamed, documented):\n" + "\n".join(found)
