"""Extreme eigenpairs of symmetric linear operators — the one eigen-solver front end of the package.

Every extreme eigenvalue in the book goes through :func:`extreme_eigenpairs`: Hessian spectral norms
(:func:`ntkbook.hessian_spectral_norm` builds the Hessian-vector-product operator and calls it), the
largest and smallest eigenvalues of tangent kernels (step sizes η ∝ 1/λ_max(K), λ_min(K) along a
training path), covariance and Gram matrices (λ_min(Σ(X)), σ²_min(X ∗ X)) and the structured layer
norms of Chapter 3.  One result type, :class:`EigenResult`, whatever the method.

**The operator** is either

* a dense symmetric matrix ``(n, n)`` (NumPy or JAX; a batch ``(..., n, n)`` for ``method="dense"``;
  the symmetric part ½(A + Aᵀ) is used), or
* a :class:`SymmetricOperator`: a matrix-free product v ↦ A v on vectors shaped like a template
  pytree (e.g. the parameters of a network), ``matvec(v, *operands)`` a pure JAX function — or, with
  ``backend="numpy"``, a NumPy function on flat float64 vectors (no compilation; ARPACK and dense only).

**Which end** (``which``): ``"LM"`` the eigenvalue of largest magnitude (a spectral norm ‖A‖ = max|λ|),
``"BE"`` both ends (λ_min and λ_max, both converged), ``"LA"`` the largest (algebraic) eigenvalue,
``"SA"`` the smallest.

**Methods and their trade-offs** (n = size of the operator, k = Krylov basis size):

* ``"dense"`` — LAPACK on the full matrix (``numpy.linalg.eigvalsh``/``eigh`` for "LM"/"BE",
  ``scipy.linalg.eigh`` restricted to one index for "LA"/"SA"; ``jax.numpy.linalg.eigh`` inside ``jit``),
  float64 on the host.  Exact up to the backward error O(n ε ‖A‖); memory O(n²), time O(n³); a
  matrix-free operator is first formed column by column (n products, n ≤ :data:`DENSE_MAX_SIZE`).
  This is the *reference* the other methods are tested against.
* ``"lanczos"`` — Krylov–Schur thick-restart Lanczos with full reorthogonalization (Stewart 2002),
  on the accelerator; memory O(k·n) (k ≤ ``basis_size``, reduced to fit :data:`BASIS_MEMORY_BUDGET`),
  one product per step.  It stops when the Krylov residual β|e_kᵀs| of the requested Ritz pair(s) is
  ≤ ``tol``·max|θ| (for "LM" *both* ends must pass: max|λ| = max(|λ_min|, |λ_max|) is only known once
  both ends are).  It keeps the Ritz vector and measures the true residual with one extra product.
  With full reorthogonalization it handles clustered and repeated eigenvalues: a cluster converges
  to its value (not necessarily to a particular vector of the eigenspace).
* ``"arpack"`` — scipy's ``eigsh`` (implicitly restarted Lanczos, ARPACK), an independent
  implementation on the host: every product is a round trip host ↔ device.  Memory O(ncv·n) with
  ncv = ``basis_size`` (default 24, or 12 from a warm start, since ARPACK rebuilds ncv vectors at each
  restart whatever the start vector).  ARPACK's test is |residual| ≤ tol·|θ| per Ritz value; on
  tightly clustered or degenerate extreme eigenvalues (gaps ≲ tol·‖A‖) with a small ncv it can need
  many restarts and stop with ``ArpackNoConvergence`` — then the best pair found is returned with
  ``converged=False``; raise ``basis_size`` or use ``"lanczos"``.
* ``"fixed"`` — exactly ``num_steps`` Lanczos steps with full reorthogonalization as *one pure JAX
  function* (:func:`lanczos_fixed`): no data-dependent stopping, so it can be ``jit``-compiled and
  ``vmap``-ped over many operators (seeds, inputs).  Memory O(num_steps · n) per operator.  Its
  ``residual`` is the Krylov residual β_k|e_kᵀs| of the extreme Ritz pair(s) relative to max|θ|
  (no extra product): in exact arithmetic some eigenvalue lies within residual·max|θ| of the Ritz
  value, so the value is to be trusted only if the residual is small — :func:`refine_unconverged`
  recomputes those that are not with an adaptive method.

Random start vectors are drawn from explicit seeds — on the device from a PRNG key (``jax.random.key(0)``
by default) for the JAX methods, on the host from ``numpy.random.default_rng`` (seed 0 by default, or
drawn from the key) for ARPACK — so results never depend on the process's history, timing or load
(ARPACK's own random start, whose seed persists between calls in a process, is never used).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from . import _validation as V
from .pytree import FlatSpec, flat_spec
from .random import normal

Array = jax.Array
PyTree = Any
HIGHEST = jax.lax.Precision.HIGHEST

WHICH = ("LM", "BE", "LA", "SA")
"""Largest magnitude, both ends, largest algebraic, smallest algebraic."""
METHODS = ("auto", "dense", "lanczos", "arpack", "fixed")
DENSE_MAX_SIZE = 20_000
"""Largest n for which a matrix-free operator is formed as an n × n matrix (``method="dense"``)."""
BASIS_MEMORY_BUDGET = 4 << 30
"""Bytes the Lanczos basis may take; ``basis_size`` is reduced to fit (at least 8 vectors)."""
CHUNK_MAX_SIZE = 1 << 17
"""Below this n, Lanczos steps run 8 at a time per host round trip (Python overhead dominates tiny
products); above it one at a time, so no product is wasted."""
LANCZOS_BASIS = 32
"""Default Krylov basis size of ``"lanczos"`` before a thick restart."""
ARPACK_BASIS, ARPACK_WARM_BASIS = 24, 12
"""Default ARPACK ncv from a random start and from a given start vector."""


# ---------------------------------------------------------------------------------------------
# Result and operator types
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EigenResult:
    """Extreme eigenpair(s) of a symmetric operator — the one result type of every method.

    Attributes:
        value: the quantity asked for: max|λ| for ``which="LM"``/``"BE"`` (the spectral norm),
            λ_max for ``"LA"``, λ_min for ``"SA"``.
        eigenvalue: the signed eigenvalue the value comes from (|eigenvalue| = value for "LM"/"BE").
        eigenvector: the unit (Ritz) eigenvector of ``eigenvalue``, shaped like the operator's
            template (a flat array for a dense matrix); ``None`` when not computed (``vectors=False``,
            or A = 0).
        lambda_min: estimate of the smallest eigenvalue (NaN for an end the method did not compute,
            e.g. ARPACK with which="LA" has no λ_min).
        lambda_max: estimate of the largest eigenvalue (NaN when not computed).
        iterations: products (Lanczos steps) the answer is built from (0 for an explicit dense matrix,
            n when a matrix-free operator was formed densely).
        products: all products computed, including the one that measures the residual.
        residual: ‖Au − θu‖/|θ| of the returned pair (relative to max|θ| when θ = 0); for
            "BE" the larger of the two ends' residuals divided by max|θ|; for ``"fixed"`` the Krylov
            estimate (see the module docstring).  NaN for a dense result without eigenvectors.
        converged: whether the stopping test passed (always True for ``"dense"``; for ``"fixed"``,
            residual ≤ tol).
        method: the method that produced the numbers.

    For ``"fixed"`` (and for ``"dense"`` inside ``jit``) the numeric fields are JAX arrays; the class
    is a pytree (``method`` is static), so it can be returned from ``jit``/``vmap``-ped functions.
    """

    value: Any
    eigenvalue: Any
    eigenvector: Any
    lambda_min: Any
    lambda_max: Any
    iterations: Any
    products: Any
    residual: Any
    converged: Any
    method: str = field(metadata={"static": True})


jax.tree_util.register_dataclass(
    EigenResult,
    data_fields=["value", "eigenvalue", "eigenvector", "lambda_min", "lambda_max", "iterations", "products",
                 "residual", "converged"],
    meta_fields=["method"],
)


@dataclass(frozen=True, eq=False)
class SymmetricOperator:
    """A symmetric linear operator v ↦ A v given by its product.

    Attributes:
        matvec: ``matvec(v, *operands)`` → A v with the structure of ``template``.  With
            ``backend="jax"`` a pure JAX function; it is a static argument of the compiled Lanczos
            steps, so pass the same (module-level, hashable) function every call and put the data that
            changes in ``operands`` to compile once per shape.  With ``backend="numpy"``,
            ``matvec(v)`` takes and returns flat float64 NumPy vectors (``operands`` unused).
        template: a pytree of arrays with the structure, shapes and dtype of the vectors (a flat
            array of length n for ``backend="numpy"``).
        operands: traced extra arguments of ``matvec`` (JAX backend).
        backend: ``"jax"`` or ``"numpy"``.
    """

    matvec: Callable[..., Any]
    template: Any
    operands: tuple = ()
    backend: str = "jax"

    def __post_init__(self) -> None:
        V.callable_("matvec", self.matvec)
        V.choice("backend", self.backend, ("jax", "numpy"))
        if not isinstance(self.operands, tuple):
            raise TypeError(f"operands must be a tuple, got {type(self.operands).__name__}")
        V.pytree_of_arrays("template", self.template, finite=False)
        if self.backend == "numpy" and np.ndim(self.template) != 1:
            raise ValueError("template of a NumPy operator must be a flat array of length n")

    @property
    def size(self) -> int:
        """n, the dimension of the space the operator acts on."""
        if self.backend == "numpy":
            return int(np.shape(self.template)[0])
        return flat_spec(self.template).size


def _result(value, eigenvalue, eigenvector, lambda_min, lambda_max, iterations, products, residual, converged,
            method) -> EigenResult:
    return EigenResult(value, eigenvalue, eigenvector, lambda_min, lambda_max, iterations, products, residual,
                       converged, method)


def _pick(theta_min: float, theta_max: float, which: str) -> float:
    """The signed eigenvalue a result reports for ``which``."""
    if which == "LA":
        return theta_max
    if which == "SA":
        return theta_min
    return theta_max if abs(theta_max) >= abs(theta_min) else theta_min


def _value(eigenvalue: Any, which: str) -> Any:
    return abs(eigenvalue) if which in ("LM", "BE") else eigenvalue


# ---------------------------------------------------------------------------------------------
# Front end
# ---------------------------------------------------------------------------------------------


def extreme_eigenpairs(
    operator: Any,
    *,
    which: str = "LM",
    method: str = "auto",
    tol: float = 1e-6,
    max_iter: int = 1000,
    basis_size: int | None = None,
    num_steps: int = 32,
    key: Array | None = None,
    start: Any = None,
    vectors: bool = True,
) -> EigenResult:
    """Extreme eigenvalue(s) and eigenvector of a symmetric matrix or matrix-free operator.

    Args:
        operator: an ``(n, n)`` symmetric matrix (``(..., n, n)`` batch for ``"dense"``) or a
            :class:`SymmetricOperator`.
        which: ``"LM"`` (largest magnitude), ``"BE"`` (both ends), ``"LA"`` (largest), ``"SA"`` (smallest).
        method: ``"dense"``, ``"lanczos"``, ``"arpack"``, ``"fixed"`` or ``"auto"`` (dense for a matrix,
            Lanczos for a JAX operator, ARPACK for a NumPy operator).  Trade-offs: module docstring.
        tol: relative tolerance of the stopping test (Lanczos: Krylov residual ≤ tol·max|θ|; ARPACK:
            residual ≤ tol·|θ|; fixed: sets ``converged``).
        max_iter: the most products the iteration may use (ARPACK: max_iter // ncv restarts).
        basis_size: Krylov basis size (Lanczos: before a thick restart, default 32; ARPACK: ncv,
            default 24, or 12 from a given ``start``).
        num_steps: Lanczos steps of ``"fixed"``.
        key: PRNG key of the random start vector (default: ``jax.random.key(0)`` for the JAX methods, seed 0
            of ``numpy.random.default_rng`` for ARPACK).
        start: a start vector shaped like the operator's template (e.g. the eigenvector of a nearby
            operator — a warm start along a path) instead of a random one.
        vectors: compute the eigenvector (``"dense"`` only; the iterative methods always do).

    Returns:
        An :class:`EigenResult`.
    """
    V.choice("which", which, WHICH)
    V.choice("method", method, METHODS)
    tol = V.positive_float("tol", tol)
    max_iter = V.positive_int("max_iter", max_iter)
    if basis_size is not None:
        basis_size = V.positive_int("basis_size", basis_size, minimum=4)
    num_steps = V.positive_int("num_steps", num_steps, minimum=2)
    if not isinstance(vectors, bool):
        raise TypeError(f"vectors must be True or False, got {vectors!r}")
    if isinstance(operator, SymmetricOperator):
        op = operator
        if method == "auto":
            method = "lanczos" if op.backend == "jax" else "arpack"
        if op.backend == "numpy" and method in ("lanczos", "fixed"):
            raise ValueError(f"method {method!r} needs a JAX operator; a NumPy operator supports 'arpack' and 'dense'")
    else:
        a = _matrix("operator", operator, batched=method in ("auto", "dense"))
        if method in ("auto", "dense"):
            return _dense(a, which, vectors, products=0)
        op = _matrix_operator(a)
    if method == "dense":
        return _dense_operator(op, which, vectors)
    start_flat = _start(op, start, key, method)
    if method == "fixed":
        return lanczos_fixed(op.matvec, op.template, op.operands, num_steps=num_steps, which=which, key=key,
                             tol=tol, start=None if start is None else start_flat)
    if method == "arpack":
        ncv = basis_size or (ARPACK_BASIS if start is None else ARPACK_WARM_BASIS)
        return _arpack(op, which, tol, max_iter, ncv, start_flat)
    return _krylov_schur(op, which, start_flat, tol, max_iter, basis_size or LANCZOS_BASIS)


def _matrix(name: str, a: Any, *, batched: bool) -> Any:
    """A traced JAX array as it is; anything else as a float64 NumPy array (no float32 round trip)."""
    if V.is_tracer(a):
        arr = a
        if not jnp.issubdtype(arr.dtype, jnp.floating):
            raise TypeError(f"{name} must have a real floating dtype (float32/float64), got {arr.dtype}")
    else:
        arr = V.numpy_array(name, a)
    if arr.ndim < 2 or (arr.ndim > 2 and not batched) or arr.shape[-1] != arr.shape[-2]:
        want = "(..., n, n)" if batched else "(n, n)"
        raise ValueError(f"{name} must be a square matrix of shape {want}, got shape {tuple(arr.shape)}")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(arr.shape)}")
    return arr


def _sym_matvec(v: Array, a: Array) -> Array:
    return jnp.matmul(a, v, precision=HIGHEST)


def _matrix_operator(a: Any) -> SymmetricOperator:
    a = jnp.asarray(a)
    a = 0.5 * (a + a.T)
    return SymmetricOperator(_sym_matvec, jnp.zeros(a.shape[0], a.dtype), (a,))


def _start(op: SymmetricOperator, start: Any, key: Array | None, method: str) -> Any:
    """The start vector as a flat array.

    ``"lanczos"``/``"fixed"``: a unit JAX vector, N(0, 1) entries drawn on the device from ``key``
    (default ``jax.random.key(0)``).  ``"arpack"`` runs on the host and takes a float64 NumPy vector
    (not normalized: ARPACK normalizes it): a given start as it is, else N(0, 1) entries from
    ``numpy.random.default_rng(seed)``, seed 0 by default or drawn from ``key``.
    """
    n = op.size
    if start is None:
        if method == "fixed":
            return None
        if method == "arpack":
            seed = 0 if key is None else int(jax.random.randint(key, (), 0, 2**31 - 1))
            return np.random.default_rng(seed).standard_normal(n)
        spec = flat_spec(op.template)
        v = normal(jax.random.key(0) if key is None else key, (spec.size,), spec.dtype)
        return v / jnp.linalg.norm(v)
    if op.backend == "numpy":
        v = V.numpy_array("start", start, ndim=1)
        if v.shape != (n,):
            raise ValueError(f"start must be a flat vector of length {n}, got shape {v.shape}")
        if not np.any(v):
            raise ValueError("start must be a non-zero vector")
        return v
    spec = flat_spec(op.template)
    if jax.tree_util.tree_structure(start) != spec.treedef:
        raise ValueError("start must have the same pytree structure as the operator's template (params)")
    V.pytree_of_arrays("start", start)
    v = spec.ravel(start)
    if not V.is_tracer(v) and float(jnp.linalg.norm(v)) == 0.0:
        raise ValueError("start must be a non-zero vector")
    if method == "arpack":
        return np.asarray(v, dtype=np.float64)
    return v / jnp.linalg.norm(v)


# ---------------------------------------------------------------------------------------------
# Dense reference
# ---------------------------------------------------------------------------------------------


def _dense(a: Any, which: str, vectors: bool, *, products: int) -> EigenResult:
    """LAPACK on the symmetric part of ``a`` (float64 on the host; ``jnp.linalg.eigh`` when traced)."""
    if V.is_tracer(a):
        r = _dense_traced(a, which, vectors)
        count = jnp.full(jnp.shape(r.value), products, jnp.int32)
        return replace(r, iterations=count, products=count)
    a = np.asarray(a, dtype=np.float64)
    a = 0.5 * (a + np.swapaxes(a, -1, -2))
    if a.ndim > 2:
        parts = [_dense_host(a[idx], which, vectors) for idx in np.ndindex(a.shape[:-2])]
        stack = lambda name: np.reshape([getattr(p, name) for p in parts], a.shape[:-2])  # noqa: E731
        vec = (np.reshape([p.eigenvector for p in parts], (*a.shape[:-2], a.shape[-1])) if vectors else None)
        return _result(stack("value"), stack("eigenvalue"), vec, stack("lambda_min"), stack("lambda_max"),
                       products, products, stack("residual"), True, "dense")
    r = _dense_host(a, which, vectors)
    return replace(r, iterations=products, products=products)


def _dense_host(a: np.ndarray, which: str, vectors: bool) -> EigenResult:
    n = a.shape[0]
    u = None
    if which in ("LA", "SA"):
        i = n - 1 if which == "LA" else 0
        out = scipy.linalg.eigh(a, subset_by_index=[i, i], eigvals_only=not vectors)
        lam = float((out if not vectors else out[0])[0])
        if vectors:
            u = out[1][:, 0]
        lo, hi = (lam, float("nan")) if which == "SA" else (float("nan"), lam)
        eig = lam
    else:
        if vectors:
            theta, s = np.linalg.eigh(a)
        else:
            theta, s = np.linalg.eigvalsh(a), None
        lo, hi = float(theta[0]), float(theta[-1])
        eig = _pick(lo, hi, which)
        if vectors:
            u = s[:, 0] if eig == lo and abs(lo) > abs(hi) else s[:, -1]
    residual = float("nan")
    if u is not None:
        scale = abs(eig) if eig != 0 else float(np.max(np.abs(a)))
        residual = float(np.linalg.norm(a @ u - eig * u) / scale) if scale > 0 else 0.0
    return _result(_value(eig, which), eig, u, lo, hi, 0, 0, residual, True, "dense")


def _dense_traced(a: Array, which: str, vectors: bool) -> EigenResult:
    """The dense path inside ``jit``/``vmap`` (batched over leading axes), in the dtype of ``a``.

    ``jnp.linalg.eigh`` symmetrizes its input itself, (A + Aᵀ)/2; symmetrizing here as well would change
    how XLA fuses the expression that produced ``a`` and so its float32 rounding.
    """
    theta, s = jnp.linalg.eigh(a)
    lo, hi = theta[..., 0], theta[..., -1]
    if which == "LA":
        eig, idx = hi, jnp.full(lo.shape, a.shape[-1] - 1)
    elif which == "SA":
        eig, idx = lo, jnp.zeros(lo.shape, int)
    else:
        top = jnp.abs(hi) >= jnp.abs(lo)
        eig, idx = jnp.where(top, hi, lo), jnp.where(top, a.shape[-1] - 1, 0)
    value = jnp.abs(eig) if which in ("LM", "BE") else eig
    u, residual = None, jnp.full(lo.shape, jnp.nan, a.dtype)
    if vectors:
        u = jnp.take_along_axis(s, idx[..., None, None], axis=-1)[..., 0]
        a = 0.5 * (a + jnp.swapaxes(a, -1, -2))
        r = jnp.einsum("...ij,...j->...i", a, u, precision=HIGHEST) - eig[..., None] * u
        scale = jnp.where(eig != 0, jnp.abs(eig), jnp.max(jnp.abs(a), axis=(-2, -1)))
        residual = jnp.linalg.norm(r, axis=-1) / jnp.where(scale > 0, scale, 1)
    zero = jnp.zeros(lo.shape, jnp.int32)
    return _result(value, eig, u, lo, hi, zero, zero, residual, jnp.ones(lo.shape, bool), "dense")


@partial(jax.jit, static_argnames=("matvec", "spec"))
def _operator_matrix(operands: tuple, matvec: Callable, spec: FlatSpec) -> Array:
    eye = jnp.eye(spec.size, dtype=spec.dtype)
    return jax.vmap(lambda e: spec.ravel(matvec(spec.unravel(e), *operands)))(eye)


def _dense_operator(op: SymmetricOperator, which: str, vectors: bool) -> EigenResult:
    """Form the n × n matrix of a matrix-free operator (n products) and diagonalize it."""
    n = op.size
    if n > DENSE_MAX_SIZE:
        raise ValueError(f"the operator has size n = {n}; method='dense' forms an n x n matrix and is limited to "
                         f"n <= {DENSE_MAX_SIZE}: use method='lanczos' or 'arpack' (matrix-free)")
    if op.backend == "numpy":
        a = np.column_stack([np.asarray(op.matvec(e), dtype=np.float64) for e in np.eye(n)])
    else:
        a = _operator_matrix(op.operands, op.matvec, flat_spec(op.template))
    return _unflatten(op, _dense(a, which, vectors, products=n))


# ---------------------------------------------------------------------------------------------
# Krylov–Schur (thick-restart Lanczos), on the device
# ---------------------------------------------------------------------------------------------
# The Krylov basis is a pytree with the structure of the template whose leaves carry a leading axis of
# length k+1 (one row per basis vector): products then need no flattening (which costs more than the
# product itself for 10⁷ parameters on a CPU).  Rows not yet in use are zero.


def _rows_dot(basis: PyTree, w: PyTree, rows: int) -> Array:
    """(⟨basis_i, w⟩ for i < rows), summed over leaves — shape (rows,).

    Call it with all rows where speed matters: on the CPU a slice ``b[:rows]`` is a copy.
    """
    parts = [jnp.tensordot(b if rows == b.shape[0] else b[:rows], x, axes=x.ndim, precision=HIGHEST)
             for b, x in zip(jax.tree_util.tree_leaves(basis), jax.tree_util.tree_leaves(w), strict=True)]
    return sum(parts[1:], parts[0])


def _rows_combine(coeffs: Array, basis: PyTree) -> PyTree:
    """Σ_i coeffs[i]·basis_i over the first len(coeffs) rows."""
    n = coeffs.shape[0]
    return jax.tree_util.tree_map(
        lambda b: jnp.tensordot(coeffs, b if n == b.shape[0] else b[:n], axes=1, precision=HIGHEST), basis)


def _tree_norm(w: PyTree) -> Array:
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in jax.tree_util.tree_leaves(w)))


def _set_row(basis: PyTree, i: Array, w: PyTree) -> PyTree:
    return jax.tree_util.tree_map(lambda b, x: b.at[i].set(x), basis, w)


def _orthogonalize(basis: PyTree, w: PyTree, rows: int) -> tuple[Array, PyTree]:
    """Classical Gram–Schmidt of w against the first ``rows`` basis vectors, repeated when needed.

    The second pass runs only if the first removed more than 1 − 1/√2 of ‖w‖ (the DGKS criterion),
    which is when cancellation can leave w visibly non-orthogonal.  Returns (coefficients, w⊥).
    """

    def sub(w: PyTree, h: Array) -> PyTree:
        return jax.tree_util.tree_map(jnp.subtract, w, _rows_combine(h, basis))

    h = _rows_dot(basis, w, rows)
    w1 = sub(w, h)

    def second(_):
        h2 = _rows_dot(basis, w1, rows)
        return h + h2, sub(w1, h2)

    needed = _tree_norm(w1) < jnp.sqrt(0.5) * _tree_norm(w)
    return jax.lax.cond(needed, second, lambda _: (h, w1), None)


def _lanczos_body(matvec: Callable, operands: tuple, basis: PyTree, i: Array, rows: int):
    """One step from the pending vector basis_i: (new basis, coefficients h (rows,), β)."""
    v = jax.tree_util.tree_map(lambda b: b[i], basis)
    h, w = _orthogonalize(basis, matvec(v, *operands), rows)
    beta = _tree_norm(w)
    scale = jnp.where(beta > 0, 1.0 / jnp.where(beta > 0, beta, 1), 0.0)
    return _set_row(basis, i + 1, jax.tree_util.tree_map(lambda x: x * scale, w)), h, beta


@partial(jax.jit, static_argnames=("matvec", "chunk", "rows"), donate_argnums=(0,))
def _lanczos_steps(basis: PyTree, j: Array, n: Array, operands: tuple, matvec: Callable, chunk: int, rows: int):
    """``n`` ≤ ``chunk`` Lanczos steps starting from the pending vector basis_j.

    Each step applies A to basis_i, orthogonalizes against rows 0..rows−1 (the rows beyond i are
    zero) and stores basis_{i+1}.  Returns the new basis, the coefficients
    h_i = basisᵀ·(A v_i) (rows of ``coeffs``: column i of the projected matrix) and β_i.
    """
    dtype = jax.tree_util.tree_leaves(basis)[0].dtype
    coeffs = jnp.zeros((chunk, rows), dtype)
    betas = jnp.zeros((chunk,), dtype)

    def body(k, carry):
        basis, coeffs, betas = carry
        basis, h, beta = _lanczos_body(matvec, operands, basis, j + k, rows)
        return basis, coeffs.at[k].set(h), betas.at[k].set(beta)

    if chunk == 1:  # (n == 1) no loop: a while loop would copy the whole basis carried through it
        return body(0, (basis, coeffs, betas))
    return jax.lax.fori_loop(0, n, body, (basis, coeffs, betas))


@partial(jax.jit, donate_argnums=(0,))
def _restart(basis: PyTree, coeffs: Array, m: Array) -> PyTree:
    """Rows 0..keep−1 ← Ritz vectors Σ_i coeffs[i, c]·basis_i; row keep ← basis_m; other rows ← 0."""
    keep = coeffs.shape[1]

    def leaf(b: Array) -> Array:
        ritz = jnp.tensordot(coeffs.T, b, axes=1, precision=HIGHEST)  # coeffs has a row per basis row
        return jnp.zeros_like(b).at[:keep].set(ritz).at[keep].set(b[m])

    return jax.tree_util.tree_map(leaf, basis)


@partial(jax.jit, static_argnames=("rows", "dtype"))
def _basis_from(start: PyTree, rows: int, dtype: Any) -> PyTree:
    """A Krylov basis of ``rows`` rows (leading axis) with ``start`` in row 0 and zeros elsewhere (one compiled
    program per start's shapes; built eagerly, zeros and the row update were two programs per leaf)."""
    return jax.tree_util.tree_map(lambda x: jnp.zeros((rows, *x.shape), dtype).at[0].set(x), start)


@partial(jax.jit, static_argnames=("matvec",))
def _ritz_vector_residual(basis: PyTree, coeffs: Array, theta: Array, operands: tuple, matvec: Callable):
    u = _rows_combine(coeffs, basis)
    norm = _tree_norm(u)
    u = jax.tree_util.tree_map(lambda x: x / norm, u)
    au = matvec(u, *operands)
    r = jax.tree_util.tree_map(lambda a, b: a - theta * b, au, u)
    return u, _tree_norm(r)


def _krylov_schur(op: SymmetricOperator, which: str, start: Array, tol: float, max_iter: int,
                  basis_size: int) -> EigenResult:
    """Krylov–Schur restarted Lanczos (Stewart 2002).

    Each step orthogonalizes A v_j against the whole basis by classical Gram–Schmidt, repeated when the
    DGKS criterion asks for it, so the projected matrix T = VᵀAV is formed from the actual inner
    products (tridiagonal, or arrowhead after a restart).  With A V = V T + β v_{k+1} e_kᵀ, the Ritz
    pair (θ_i, V s_i) has residual β|e_kᵀ s_i|; the iteration stops when this is ≤ tol·max|θ| for the
    requested end(s).  When the basis is full, the ``basis_size // 6`` most extreme Ritz vectors of each
    end are kept (thick restart).
    """
    matvec, operands = op.matvec, op.operands
    spec = flat_spec(op.template)
    p = spec.size
    itemsize = jnp.dtype(spec.dtype).itemsize
    fit = max(8, BASIS_MEMORY_BUDGET // (p * itemsize) - 1)
    nb = int(min(basis_size, fit, p))
    keep_each = max(1, nb // 6)
    chunk = 8 if p < CHUNK_MAX_SIZE else 1
    start_tree = spec.unravel(start)
    basis = _basis_from(start_tree, rows=nb + 1, dtype=spec.dtype)
    t = np.zeros((nb + 1, nb + 1))
    j = 0  # index of the pending basis vector; columns 0..j-1 of t are complete
    steps, products, converged = 0, 0, False
    theta, s, beta = np.zeros(1), np.ones((1, 1)), 0.0
    while steps < max_iter and not converged:
        if j == nb:  # basis full: thick restart, keeping the most extreme Ritz vectors of both ends
            sel = np.unique(np.r_[np.arange(keep_each), np.arange(nb - keep_each, nb)])
            padded = np.zeros((nb + 1, len(sel)))
            padded[:nb] = s[:, sel]
            basis = _restart(basis, jnp.asarray(padded, spec.dtype), jnp.asarray(nb))
            k = len(sel)
            t = np.zeros_like(t)
            t[np.arange(k), np.arange(k)] = theta[sel]
            t[k, :k] = t[:k, k] = beta * s[nb - 1, sel]
            j = k
        n = min(chunk, nb - j, max_iter - steps)
        # all rows take part in the products (unused ones are zero): slicing the active rows out
        # would copy them, which costs more than multiplying by zeros
        basis, coeffs, betas = _lanczos_steps(basis, jnp.asarray(j), jnp.asarray(n), operands, matvec=matvec,
                                              chunk=chunk, rows=nb + 1)
        products += n
        coeffs = np.asarray(coeffs, dtype=np.float64)
        betas = np.asarray(betas, dtype=np.float64)
        for i in range(n):  # take the columns one by one and stop at the first converged one
            h, beta = coeffs[i, : j + 1], float(betas[i])
            steps += 1
            t[: j + 1, j] = h
            t[j, : j + 1] = h
            m = j + 1
            theta, s = np.linalg.eigh(t[:m, :m])
            res = beta * np.abs(s[m - 1, :])
            scale = float(np.max(np.abs(theta)))
            t[m, j] = t[j, m] = beta
            j = m
            ok_low, ok_high = res[0] <= tol * scale, res[-1] <= tol * scale
            if (which == "LA" and ok_high) or (which == "SA" and ok_low) or (ok_low and ok_high):
                converged = True
            elif beta <= 100 * np.finfo(spec.dtype).eps * scale or scale == 0.0:
                converged = True  # invariant subspace (breakdown): the Ritz values are exact
            if converged:
                break
    lo, hi = float(theta[0]), float(theta[-1])
    if which == "LA":
        i_star = len(theta) - 1
    elif which == "SA":
        i_star = 0
    else:
        i_star = int(np.argmax(np.abs(theta)))
    eig = float(theta[i_star])
    scale = float(np.max(np.abs(theta)))
    if scale == 0.0:  # A = 0 on the Krylov space
        return _result(0.0, 0.0, None, lo, hi, steps, products, 0.0, converged, "lanczos")
    coeffs = np.zeros(nb + 1)  # padded to all rows: no slicing, one compiled function per problem
    coeffs[: s.shape[0]] = s[:, i_star]
    coeffs = jnp.asarray(coeffs, spec.dtype)
    u, r = _ritz_vector_residual(basis, coeffs, jnp.asarray(eig, spec.dtype), operands, matvec=matvec)
    denom = abs(eig) if eig != 0.0 else scale
    if which == "BE":  # the other end's residual as well
        other = 0 if i_star == len(theta) - 1 else len(theta) - 1
        c2 = np.zeros(nb + 1)
        c2[: s.shape[0]] = s[:, other]
        _, r2 = _ritz_vector_residual(basis, jnp.asarray(c2, spec.dtype), jnp.asarray(theta[other], spec.dtype),
                                      operands, matvec=matvec)
        r, denom, products = max(float(r), float(r2)), scale, products + 1
    return _result(_value(eig, which), eig, u, lo, hi, steps, products + 1, float(r) / denom, converged, "lanczos")


# ---------------------------------------------------------------------------------------------
# ARPACK (scipy), on the host
# ---------------------------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("matvec", "spec"))
def _flat_matvec(v: Array, operands: tuple, matvec: Callable, spec: FlatSpec) -> Array:
    return spec.ravel(matvec(spec.unravel(v), *operands))


def _host_matvec(op: SymmetricOperator) -> Callable[[np.ndarray], np.ndarray]:
    """v ↦ A v on flat float64 NumPy vectors (a compiled JAX product for the JAX backend)."""
    if op.backend == "numpy":
        return lambda v: np.asarray(op.matvec(np.asarray(v, dtype=np.float64).ravel()), dtype=np.float64)
    spec = flat_spec(op.template)

    def mv(v: np.ndarray) -> np.ndarray:
        out = _flat_matvec(jnp.asarray(np.ravel(v), spec.dtype), op.operands, matvec=op.matvec, spec=spec)
        return np.asarray(out, dtype=np.float64)

    return mv


def _arpack(op: SymmetricOperator, which: str, tol: float, max_iter: int, ncv: int, start: Any) -> EigenResult:
    n = op.size
    base = _host_matvec(op)
    count = [0]

    def mv(v: np.ndarray) -> np.ndarray:
        count[0] += 1
        return base(v)

    k = 2 if which == "BE" else 1
    if n <= k + 1:  # too small for ARPACK (k < ncv ≤ n): the matrix from n products, diagonalized
        r = _dense(np.column_stack([mv(e) for e in np.eye(n)]), which, True, products=n)
        return _unflatten(op, r)
    v0 = np.asarray(start, dtype=np.float64)
    lin = LinearOperator((n, n), matvec=mv, dtype=np.float64)
    ncv = int(min(n, max(ncv, 2 * k + 1)))
    try:
        vals, vecs = eigsh(lin, k=k, which=which, tol=tol, v0=v0, ncv=ncv, maxiter=max(1, max_iter // ncv))
        converged = True
    except ArpackNoConvergence as err:  # reported, not raised
        vals, vecs, converged = err.eigenvalues, err.eigenvectors, False
        if len(vals) == 0:
            nan = float("nan")
            return _result(nan, nan, None, nan, nan, count[0], count[0], float("inf"), False, "arpack")
    steps = count[0]
    order = np.argsort(vals)
    vals, vecs = np.asarray(vals)[order], np.asarray(vecs)[:, order]
    nan = float("nan")
    if len(vals) == 2:
        lo, hi = float(vals[0]), float(vals[1])
    elif which == "LA" or (which == "LM" and vals[0] > 0):
        lo, hi = nan, float(vals[0])
    else:
        lo, hi = float(vals[0]), nan
    i_star = int(np.argmax(np.abs(vals))) if which in ("LM", "BE") else (len(vals) - 1 if which == "LA" else 0)
    eig = float(vals[i_star])
    scale = float(np.max(np.abs(vals)))
    res = []
    for i in range(len(vals)):
        u = vecs[:, i] / np.linalg.norm(vecs[:, i])
        res.append(float(np.linalg.norm(mv(u) - vals[i] * u)))
    u = vecs[:, i_star] / np.linalg.norm(vecs[:, i_star])
    if scale == 0.0:
        residual = 0.0
    elif which == "BE":
        residual = max(res) / scale
    else:
        residual = res[i_star] / (abs(eig) if eig != 0 else scale)
    r = _result(_value(eig, which), eig, u, lo, hi, steps, count[0], residual, converged, "arpack")
    return _unflatten(op, r)


def _unflatten(op: SymmetricOperator, r: EigenResult) -> EigenResult:
    """The eigenvector of a host result in the operator's template structure."""
    if r.eigenvector is None or op.backend == "numpy":
        return r
    spec = flat_spec(op.template)
    return replace(r, eigenvector=spec.unravel(jnp.asarray(r.eigenvector, spec.dtype)))


# ---------------------------------------------------------------------------------------------
# Fixed number of steps, pure JAX (vmappable)
# ---------------------------------------------------------------------------------------------


def lanczos_fixed(matvec: Callable, template: PyTree, operands: tuple = (), *, num_steps: int = 32,
                  which: str = "LM", key: Array | None = None, tol: float = 1e-6, start: Any = None) -> EigenResult:
    """``num_steps`` Lanczos steps with full reorthogonalization, as one pure JAX function.

    No data-dependent stopping, so it can be ``jit``-compiled and ``vmap``-ped over operators (e.g. over
    the parameters or inputs in ``operands``).  Returns an :class:`EigenResult` of JAX arrays (a
    pytree): ``residual`` is the relative Krylov residual — for "LM"/"BE" β|e_kᵀs| of the *two* extreme
    Ritz pairs, the larger, divided by max|θ|; for "LA"/"SA" that of the requested end divided by its
    |θ| — and ``converged`` = residual ≤ ``tol``.  ``iterations`` = ``products`` = the number of steps
    (min(num_steps, n)).  After a breakdown (an invariant subspace: the Ritz values are exact) the
    remaining steps are inert.  Memory O(num_steps · n).

    Args:
        matvec: ``matvec(v, *operands)`` → A v (pure JAX, hashable: a static argument of the compiled loop).
        template: a pytree with the structure and dtype of the vectors.
        operands: traced extra arguments of ``matvec``.
        num_steps, which, key, tol: see :func:`extreme_eigenpairs`.
        start: a flat start vector of length n (default: normal entries from ``key``).
    """
    V.callable_("matvec", matvec)
    V.choice("which", which, WHICH)
    if not isinstance(operands, tuple):
        raise TypeError(f"operands must be a tuple of extra arguments for matvec, got {type(operands).__name__}")
    num_steps = V.positive_int("num_steps", num_steps, minimum=2)
    tol = V.positive_float("tol", tol)
    key = jax.random.key(0) if key is None else key
    spec = flat_spec(template)
    return _lanczos_fixed(matvec, spec, operands, key, start, min(num_steps, spec.size), which, tol)


def power_iteration(a: Array, u: Array, iterations: int) -> tuple[Array, Array]:
    """λ_max of a symmetric positive semi-definite matrix ``a`` (n, n) by ``iterations`` power iterations
    from ``u`` (n,): (Rayleigh quotient uᵀAu, unit vector u), as one pure JAX function (usable inside a
    jitted training step).  Meant to be warm-started from the previous top eigenvector of a slowly
    changing matrix, where a few dozen iterations suffice; for a cold start or a certified value use
    :func:`extreme_eigenpairs` (whose dense path is the reference).  The error of the Rayleigh quotient
    after k steps falls like (λ₂/λ₁)^{2k} (Golub & Van Loan, §8.2.1), and it never exceeds λ_max."""
    def body(_, v):
        w = a @ v
        return w / jnp.maximum(jnp.linalg.norm(w), jnp.finfo(w.dtype).tiny)

    u = jax.lax.fori_loop(0, iterations, body, u / jnp.linalg.norm(u))
    return u @ (a @ u), u


@partial(jax.jit, static_argnames=("matvec", "spec", "num_steps", "which", "tol"))
def _lanczos_fixed(matvec, spec: FlatSpec, operands, key, start, num_steps, which, tol):
    if start is None:
        v0 = normal(key, (spec.size,), spec.dtype)
    else:
        v0 = jnp.asarray(start, spec.dtype)
    v0 = spec.unravel(v0 / jnp.linalg.norm(v0))
    basis = jax.tree_util.tree_map(lambda x: jnp.zeros((num_steps + 1, *x.shape), spec.dtype).at[0].set(x), v0)
    eps = 100 * jnp.finfo(spec.dtype).eps

    def body(j, carry):
        basis, alphas, betas, active, scale = carry
        new_basis, h, beta = _lanczos_body(matvec, operands, basis, j, num_steps + 1)
        scale = jnp.maximum(scale, jnp.maximum(jnp.abs(h[j]), beta))
        # after a breakdown (invariant subspace) the remaining steps are decoupled copies of α₀,
        # a Rayleigh quotient, so they cannot move the extreme Ritz values
        alpha = jnp.where(active, h[j], alphas[0])
        still = active & (beta > eps * scale)
        new_basis = jax.tree_util.tree_map(lambda nb_, b: jnp.where(still, nb_, b), new_basis, basis)
        return new_basis, alphas.at[j].set(alpha), betas.at[j].set(jnp.where(still, beta, 0)), still, scale

    zeros = jnp.zeros((num_steps,), spec.dtype)
    carry = (basis, zeros, zeros, jnp.array(True), jnp.zeros((), spec.dtype))
    basis, alphas, betas, _, _ = jax.lax.fori_loop(0, num_steps, body, carry)
    t = jnp.diag(alphas) + jnp.diag(betas[:-1], 1) + jnp.diag(betas[:-1], -1)
    theta, s = jnp.linalg.eigh(t)
    res = betas[-1] * jnp.abs(s[-1, :])
    if which == "LA":
        i_star = num_steps - 1
    elif which == "SA":
        i_star = 0
    else:
        i_star = jnp.argmax(jnp.abs(theta))
    eig = theta[i_star]
    value = jnp.abs(eig) if which in ("LM", "BE") else eig
    if which in ("LM", "BE"):
        rel = jnp.maximum(res[0], res[-1]) / jnp.where(value > 0, value, 1)
    else:
        rel = res[i_star] / jnp.where(eig != 0, jnp.abs(eig), 1)
    coeffs = jnp.zeros((num_steps + 1,), spec.dtype).at[:num_steps].set(s[:, i_star])
    u = _rows_combine(coeffs, basis)
    norm = _tree_norm(u)
    u = jax.tree_util.tree_map(lambda x: x / jnp.where(norm > 0, norm, 1), u)
    steps = jnp.asarray(num_steps, jnp.int32)
    return _result(value, eig, u, theta[0], theta[-1], steps, steps, rel, rel <= tol, "fixed")


# ---------------------------------------------------------------------------------------------
# Recomputing what a fixed number of steps did not resolve
# ---------------------------------------------------------------------------------------------


LANCZOS_RESIDUAL_TOL = 1e-5
"""Largest relative residual ‖Hu − θu‖/|θ| accepted from a vmapped ``"fixed"`` Lanczos run in float32 before
:func:`refine_unconverged` recomputes the value (an order above float32 Hessian-vector-product rounding)."""


def refine_unconverged(batch: EigenResult, solve: Callable[[int], EigenResult], *, tol: float) -> EigenResult:
    """Replace the entries of a batched result whose residual is not ≤ ``tol`` by ``solve(i)``.

    The pattern of the book's sweeps: a ``vmap``-ped ``"fixed"`` Lanczos gives every seed's value in one
    compiled call; the few whose Krylov residual is too large (or NaN) are recomputed one by one by an
    adaptive method — ``solve(i)`` must compute entry i's operator from scratch (from explicit keys),
    so the outcome depends only on the data, never on timing or on what ran before.

    Args:
        batch: an :class:`EigenResult` whose numeric fields have a leading batch axis.
        solve: entry index ↦ the :class:`EigenResult` of an adaptive method for that entry.
        tol: the largest residual accepted from ``batch``.

    Returns:
        An :class:`EigenResult` of NumPy arrays (``eigenvector`` None); ``method`` is ``batch.method``,
        or ``"<batch method>+<solve's method>"`` when some entry was recomputed.
    """
    tol = V.positive_float("tol", tol)
    fields = ("value", "eigenvalue", "lambda_min", "lambda_max", "iterations", "products", "residual", "converged")
    out = {f: np.array(getattr(batch, f)) for f in fields}
    if out["residual"].ndim != 1:
        raise ValueError(f"batch must have one leading batch axis, got residual of shape {out['residual'].shape}")
    method = batch.method
    for i in np.flatnonzero(~(out["residual"] <= tol)):
        r = solve(int(i))
        if not isinstance(r, EigenResult):
            raise TypeError(f"solve must return an EigenResult, got {type(r).__name__}")
        for f in fields:
            out[f][i] = getattr(r, f)
        method = f"{batch.method}+{r.method}"
    return _result(out["value"], out["eigenvalue"], None, out["lambda_min"], out["lambda_max"], out["iterations"],
                   out["products"], out["residual"], out["converged"], method)


def spectral_norm(a: Any) -> float:
    """‖A‖₂ = max|λ| of a symmetric matrix, float64 (dense; :func:`extreme_eigenpairs` with which="LM")."""
    return float(extreme_eigenpairs(a, which="LM", method="dense", vectors=False).value)


def lambda_max(a: Any) -> Any:
    """λ_max of a symmetric matrix (or a batch, or inside ``jit``), dense."""
    return extreme_eigenpairs(a, which="LA", method="dense", vectors=False).value


def lambda_min(a: Any) -> Any:
    """λ_min of a symmetric matrix (or a batch, or inside ``jit``), dense."""
    return extreme_eigenpairs(a, which="SA", method="dense", vectors=False).value


__all__ = [
    "LANCZOS_RESIDUAL_TOL",
    "EigenResult",
    "SymmetricOperator",
    "extreme_eigenpairs",
    "lambda_max",
    "lambda_min",
    "lanczos_fixed",
    "power_iteration",
    "refine_unconverged",
    "spectral_norm",
]

