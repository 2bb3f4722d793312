"""The package's architecture rules, read from the source (AST), so that "one home per object" cannot
regress silently:

* there are no chapter modules: no ``ntkbook/experiments`` package, and no chapter imports one (each
  chapter's experiment is a short function in the chapter, built from the package's object homes);
* one projected ascent: every function named like an ascent (``*ascen*``), in the package or in a chapter's
  code cells, is :func:`ntkbook.ball.projected_ascent` or calls it;
* no PRNG key arithmetic (``fold_in(key, 1000 * s + m)``, ``key(100 * L + s)``) outside ``ntkbook/random.py``:
  keys come from coordinates (``random.fold_key``, the sweep engine's ``piece_key``);
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
import json
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


ASCENT_NAME = re.compile(r"ascen", re.IGNORECASE)
THE_ASCENT = "projected_ascent"


def ascent_functions(source: str) -> list[tuple[str, int, bool]]:
    """(name, line, runs the one ascent) of every function whose name contains "ascen"; a function runs it when it
    calls ``projected_ascent``, or a function of the same source that does."""
    tree = ast.parse(source)

    def calls(node: ast.AST, names: set[str]) -> bool:
        return any(isinstance(c, ast.Call) and _dotted(c.func).split(".")[-1] in names for c in ast.walk(node))

    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    runners = {THE_ASCENT} | {f.name for f in functions if calls(f, {THE_ASCENT})}
    return [(f.name, f.lineno, calls(f, runners)) for f in functions if ASCENT_NAME.search(f.name)]


KEY_MAKERS = frozenset({"fold_in", "key", "PRNGKey"})


def key_arithmetic(source: str) -> list[int]:
    """Lines that derive a PRNG key from arithmetic on numbers: ``fold_in(k, a * s + m)``, ``key(100 * L + s)``
    (a +, -, * or // in a key argument)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] in KEY_MAKERS:
            if any(isinstance(sub, ast.BinOp) and isinstance(sub.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv))
                   for arg in node.args for sub in ast.walk(arg)):
                lines.append(node.lineno)
    return sorted(set(lines))


def chapter_code(path: Path) -> str:
    """The code cells of a chapter notebook, as one Python source (IPython magics and shell lines dropped)."""
    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    return "\n".join("".join(line for line in (c["source"] if isinstance(c["source"], list)
                                                else c["source"].splitlines(keepends=True))
                              if not line.lstrip().startswith(("%", "!"))) for c in cells)


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


CHAPTER_IMPORT = re.compile(r"\bntkbook\.experiments\b|from ntkbook import experiments\b")


def test_no_chapter_modules():
    assert not (PACKAGE / "experiments").exists(), "ntkbook/experiments is back: a chapter's experiment lives in it"
    users = [p.stem for p in sorted((ROOT / "book" / "myst").glob("*.md"))
             if CHAPTER_IMPORT.search(p.read_text(encoding="utf-8"))]
    assert not users, f"chapters importing a chapter module: {users}"


def _chapters() -> list[tuple[str, str]]:
    return [(p.stem, chapter_code(p)) for p in sorted((ROOT / "book").glob("[0-9]*.ipynb"))]


def test_one_projected_ascent():
    found = {}
    for module, src in [(m, s) for m, s, _ in _sources("ntkbook")] + _chapters():
        for name, line, calls in ascent_functions(src):
            found[(module, name)] = (line, calls)
    assert ("ntkbook.ball", THE_ASCENT) in found, "ntkbook.ball.projected_ascent is gone: the rule is stale"
    others = {k: v for k, v in found.items() if k != ("ntkbook.ball", THE_ASCENT) and not v[1]}
    assert not others, f"ascent functions that do not run ntkbook.ball.projected_ascent: {others}"


def test_no_key_arithmetic_outside_random():
    sources = [(m, s) for m, s, _ in _sources("ntkbook") if m != "ntkbook.random"] + _chapters()
    bad = {m: lines for m, src in sources if (lines := key_arithmetic(src))}
    assert not bad, f"PRNG keys derived by arithmetic (use ntkbook.random.fold_key or the sweep's keys): {bad}"
    assert len(_chapters()) >= 12, "the chapters were not found: the rule is stale"


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
    ("def ascend(w):\n    for _ in range(9):\n        w = w + g(w)\n    return w\n", [("ascend", 1, False)]),
    ("def _ascent_step(w):\n    return w\n", [("_ascent_step", 1, False)]),
    ("def ascend(sign, t0):\n    return nb.ball.projected_ascent(f, t0, c, 1.0)\n", [("ascend", 1, True)]),
    ("def step(w):\n    return w + g(w)\n", []),
    ("def ascend_norm(w):\n    return _run(w)\n\ndef _run(w):\n    return ball.projected_ascent(f, w, w, 1.0)\n",
     [("ascend_norm", 1, True)]),
])
def test_rule_ascent_functions(source, expected):
    assert ascent_functions(source) == expected


@pytest.mark.parametrize("source,expected", [
    ("k = jax.random.fold_in(key, 1000 * s + m)\n", [1]),
    ("k = jax.random.key(100_000 * L + s)\n", [1]),
    ("from jax.random import PRNGKey\nk = PRNGKey(seed - 1)\n", [2]),
    ("k = jax.random.fold_in(key, i)\nk2 = jax.random.key(0)\nk3 = random.fold_key(key, m, s)\n", []),
    ("k = fold_in(key, int(x[0] + 1))\n", [1]),
])
def test_rule_key_arithmetic(source, expected):
    assert key_arithmetic(source) == expected


def test_rule_lax_loops():
    planted = ("import jax\nfrom jax import lax\n\ndef fit(w):\n    return jax.lax.fori_loop(0, 9, step, w)\n\n"
               "def other(w):\n    return lax.scan(step, w, None, length=3)\n\n"
               "from jax.lax import while_loop\n")
    assert sorted(lax_loops(planted, "ntkbook.x")) == [("<module>", 10), ("fit", 5), ("other", 8)]
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
    ("from ntkbook import hessian as h\nh._check_model(m)\n", 1),
    ("from ntkbook import _validation as V\nV.positive_int('n', 1)\n", 0),
    ("from .. import _validation as V\n", 0),
    ("from ntkbook import tables\nt = tables.show(x)\nt._repr_html_()\n", 0),
    ("def _helper():\n    pass\n_helper()\nobj._cache\n", 0),  # own names, attributes of non-imports
])
def test_rule_private_imports(source, count):
    assert len(private_imports(source, "ntkbook.models.some_home")) == count
