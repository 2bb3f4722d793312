"""The package's architecture rules, read from the source (AST), so that "one home per object" cannot
regress silently:

* no module of ``ntkbook/experiments`` imports another one (what two chapters share lives in a named
  module of the package), and no experiments module is imported by two chapters;
* no ``lax.scan`` / ``lax.while_loop`` / ``lax.fori_loop`` outside ``ntkbook/training.py`` (the one
  gradient-descent loop), except the loops named in :data:`LAX_LOOPS`, each with its reason;
* no ARPACK call (``eigsh``, ``eigs``, ``svds``) outside ``ntkbook/eigen.py`` (the one eigen-solver front end);
* no import of a private name (``_name``) from another module, in ``ntkbook/`` and ``tests/``
  (``ntkbook._validation``, the package's shared argument checks, excepted).

Each rule is a function of a source string, and a self-test plants a violation in a synthetic source to
show that the rule fails on it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ntkbook"

LAX_LOOP_NAMES = frozenset({"scan", "while_loop", "fori_loop"})
LAX_LOOPS: dict[tuple[str, str], str] = {
    ("ntkbook.eigen", "_lanczos_steps"): "Lanczos recurrence (Krylov basis), not a descent loop",
    ("ntkbook.eigen", "_lanczos_fixed"): "fixed-step Lanczos recurrence inside jit/vmap, not a descent loop",
    ("ntkbook.eigen", "power_iteration"): "warm-started power iteration inside a jitted training step, not a descent",
    ("ntkbook.ball", "projected_ascent"): "the book's one projected gradient *ascent* over a ball or sphere (a "
        "maximization: a lower estimate of a supremum), no training loss",
}
"""(module, top-level function) → why this ``lax`` loop is not a second training loop."""

ARPACK_NAMES = frozenset({"eigsh", "eigs", "svds"})
ARPACK_HOME = "ntkbook.eigen"
PRIVATE_OK_MODULES = frozenset({"ntkbook._validation", "__future__"})
PUBLIC_UNDERSCORE = re.compile(r"^(__\w+__|_repr_\w+_|_replace|_asdict|_fields|_make)$")
"""Underscore names that are public protocols (dunders, IPython's ``_repr_*_``, namedtuple methods)."""


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _sources(*folders: str) -> list[tuple[str, str, bool]]:
    """(module name, source, is_package) of every .py file under the folders."""
    out = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            out.append((_module_name(path), path.read_text(encoding="utf-8"), path.name == "__init__.py"))
    return out


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module named by a (possibly relative) ``from ... import``."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module a source imports, as absolute names (``from a import b`` counts as ``a`` and ``a.b``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = _absolute(module, is_package, node)
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


# ---------------------------------------------------------------------------------------------
# The rules, each a function of one source
# ---------------------------------------------------------------------------------------------


def experiment_cross_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """Other ``ntkbook.experiments`` modules imported by the experiments module ``module``."""
    if not module.startswith("ntkbook.experiments.") or is_package:
        return []
    found = set()
    for name in _imported_modules(source, module, is_package):
        parts = name.split(".")
        if len(parts) >= 3 and parts[:2] == ["ntkbook", "experiments"] and parts[2] != module.split(".")[2]:
            found.add(".".join(parts[:3]))
    return sorted(found)


def _top_level_functions(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    return [(n.name, n) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def lax_loops(source: str, module: str) -> list[tuple[str, int]]:
    """(enclosing top-level function or "<module>", line) of every ``lax.scan``/``while_loop``/``fori_loop``."""
    tree = ast.parse(source)
    owner = {}
    for name, fn in _top_level_functions(tree):
        for node in ast.walk(fn):
            owner[id(node)] = name
    found = []
    for node in ast.walk(tree):
        hit = False
        if isinstance(node, ast.Attribute) and node.attr in LAX_LOOP_NAMES:
            hit = _dotted(node.value).split(".")[-1] == "lax"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("lax"):
            hit = any(a.name in LAX_LOOP_NAMES for a in node.names)
        if hit:
            found.append((owner.get(id(node), "<module>"), node.lineno))
    return found


def arpack_calls(source: str) -> list[int]:
    """Lines that import, reach (``linalg.eigsh``) or call an ARPACK routine of scipy (``eigsh``, ``eigs``,
    ``svds``); a variable that happens to be called ``eigs`` is not one."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ARPACK_NAMES:
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in ARPACK_NAMES:
            lines.append(node.lineno)
        elif isinstance(node, (ast.ImportFrom, ast.Import)) and any(
                a.name.split(".")[-1] in ARPACK_NAMES for a in node.names):
            lines.append(node.lineno)
    return sorted(set(lines))


def _private(name: str) -> bool:
    return name.startswith("_") and not PUBLIC_UNDERSCORE.match(name)


def private_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """Private names taken from other modules: ``from m import _x``, ``import m._x``, ``alias._x`` on a
    name bound by an import (``ntkbook._validation`` excepted)."""
    tree = ast.parse(source)
    found, imported = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = _absolute(module, is_package, node)
            if mod in PRIVATE_OK_MODULES:
                imported.update(a.asname or a.name for a in node.names)
                continue
            if any(_private(p) for p in mod.split(".")):
                found.append(f"{node.lineno}: from {mod}")
            for a in node.names:
                if f"{mod}.{a.name}" in PRIVATE_OK_MODULES:
                    imported.add(a.asname or a.name)
                    continue
                if _private(a.name):
                    found.append(f"{node.lineno}: from {mod} import {a.name}")
                imported.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name not in PRIVATE_OK_MODULES and any(_private(p) for p in a.name.split(".")):
                    found.append(f"{node.lineno}: import {a.name}")
                imported.add((a.asname or a.name).split(".")[0])
    ok_aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                  for a in node.names
                  if (isinstance(node, ast.Import) and a.name in PRIVATE_OK_MODULES)
                  or (isinstance(node, ast.ImportFrom)
                      and f"{_absolute(module, is_package, node)}.{a.name}" in PRIVATE_OK_MODULES)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = _dotted(node.value)
            root = base.split(".")[0]
            if root in imported and root not in ok_aliases:
                found.append(f"{node.lineno}: {base}.{node.attr}")
    return found


# ---------------------------------------------------------------------------------------------
# The rules applied to the repository
# ---------------------------------------------------------------------------------------------


def test_no_experiments_module_imports_another():
    bad = {m: hits for m, src, pkg in _sources("ntkbook/experiments")
           if (hits := experiment_cross_imports(src, m, pkg))}
    assert not bad, f"experiments modules import each other (move what they share to a package module): {bad}"


CHAPTER_IMPORT = re.compile(r"^\s*from ntkbook\.experiments import (\w+)|^\s*from ntkbook\.experiments\.(\w+) import"
                            r"|^\s*import ntkbook\.experiments\.(\w+)", re.MULTILINE)


def test_each_experiments_module_belongs_to_one_chapter():
    users: dict[str, set[str]] = {}
    for path in sorted((ROOT / "book" / "myst").glob("*.md")):
        for match in CHAPTER_IMPORT.finditer(path.read_text(encoding="utf-8")):
            name = next(g for g in match.groups() if g)
            users.setdefault(name, set()).add(path.stem)
    assert users, "no chapter imports an experiments module: the pattern is stale"
    shared = {m: sorted(c) for m, c in users.items() if len(c) > 1}
    assert not shared, f"experiments modules imported by several chapters: {shared}"


def test_lax_loops_only_in_training_or_named():
    found = set()
    for module, src, _ in _sources("ntkbook"):
        if module == "ntkbook.training":
            continue
        for fn, line in lax_loops(src, module):
            found.add((module, fn))
            assert (module, fn) in LAX_LOOPS, (
                f"{module}:{line} ({fn}) runs a lax loop: training loops belong in ntkbook.training.train; "
                "a loop that is not a descent on a training loss goes into LAX_LOOPS with its reason")
    stale = set(LAX_LOOPS) - found
    assert not stale, f"LAX_LOOPS names loops that no longer exist: {sorted(stale)}"


def test_arpack_only_in_eigen():
    bad = {m: lines for m, src, _ in _sources("ntkbook", "tests", "benchmarks")
           if m != ARPACK_HOME and (lines := arpack_calls(src))}
    assert not bad, f"ARPACK called outside {ARPACK_HOME} (use ntkbook.eigen.extreme_eigenpairs): {bad}"
    assert arpack_calls((PACKAGE / "eigen.py").read_text(encoding="utf-8")), "eigen.py no longer uses eigsh"


def test_no_private_names_across_modules():
    bad = {m: hits for m, src, pkg in _sources("ntkbook", "tests", "benchmarks")
           if (hits := private_imports(src, m, pkg))}
    assert not bad, f"private names imported across modules: {bad}"


# ---------------------------------------------------------------------------------------------
# Self-tests: each rule fails on a planted violation and passes on its clean twin
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("source,expected", [
    ("from .other_chapter import layer_factors\n", ["ntkbook.experiments.other_chapter"]),
    ("from . import lazy_training as lt\n", ["ntkbook.experiments.lazy_training"]),
    ("from ntkbook.experiments import assembly\n", ["ntkbook.experiments.assembly"]),
    ("import ntkbook.experiments.moderate\n", ["ntkbook.experiments.moderate"]),
    ("def f():\n    from .sibling import x\n", ["ntkbook.experiments.sibling"]),
    ("from ..layer_norms import layer_factors\nfrom .. import tables\n", []),
    ("from .chapter import helper\n", []),  # the module itself
])
def test_rule_experiment_cross_imports(source, expected):
    assert experiment_cross_imports(source, "ntkbook.experiments.chapter") == expected


def test_rule_lax_loops():
    planted = ("import jax\nfrom jax import lax\n\ndef fit(w):\n    return jax.lax.fori_loop(0, 9, step, w)\n\n"
               "def other(w):\n    return lax.scan(step, w, None, length=3)\n\n"
               "from jax.lax import while_loop\n")
    assert sorted(lax_loops(planted, "ntkbook.experiments.x")) == [("<module>", 10), ("fit", 5), ("other", 8)]
    assert lax_loops("import jax\ny = jax.lax.map(f, xs)\nz = jax.vmap(g)(xs)\n", "m") == []


def test_rule_arpack_calls():
    planted = "from scipy.sparse.linalg import eigsh\nvals = eigsh(a, k=1)\nimport scipy\nscipy.sparse.linalg.svds(a)\n"
    assert arpack_calls(planted) == [1, 2, 4]
    assert arpack_calls("import numpy as np\nnp.linalg.eigh(a)\ndef f(eigs):\n    return eigs[0]\n") == []


@pytest.mark.parametrize("source,count", [
    ("from ntkbook.hessian import _model_output\n", 1),
    ("from .hessian_compressed import _forward, base_pass\n", 1),
    ("from ntkbook import _private_module\n", 1),
    ("import ntkbook._secret\n", 1),
    ("from ntkbook.experiments import other_chapter as oc\noc._check_model(m)\n", 1),
    ("from ntkbook import _validation as V\nV.positive_int('n', 1)\n", 0),
    ("from .. import _validation as V\n", 0),
    ("from ntkbook import tables\nt = tables.show(x)\nt._repr_html_()\n", 0),
    ("def _helper():\n    pass\n_helper()\nobj._cache\n", 0),  # own names, attributes of non-imports
])
def test_rule_private_imports(source, count):
    assert len(private_imports(source, "ntkbook.experiments.chapter")) == count
