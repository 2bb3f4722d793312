"""Hessians of scalar functions of a parameter pytree, matrix-free and dense.

The central quantity of Liu, Zhu & Belkin (2020) is the spectral norm ‖H(w)‖ = max |λ(H)| of the
Hessian H = ∂²f/∂w² of the model output at one input.  For the sizes in the book (up to 10⁷–10⁸
parameters) H cannot be formed; everything here needs only Hessian-vector products

    H·u = d/dε ∇f(w + εu) |_{ε=0}      (forward-over-reverse: ``jax.jvp`` of ``jax.grad``),

which cost a small constant times one gradient.

* :func:`hessian_spectral_norm` — adaptive Krylov–Schur (thick-restart Lanczos with full
  reorthogonalization), stopped by residuals; or scipy's ARPACK (``method="arpack"``) as an
  independent implementation.  Memory O(k·P) for a basis of k ≤ ``basis_size`` vectors.
* :func:`lanczos_fixed_steps` — a fixed number of Lanczos steps as one pure JAX function, for
  ``jit``/``vmap`` over many points.
* :func:`dense_hessian` — the full P × P matrix, the reference for small P.

Why a hand-written Lanczos next to ARPACK: it runs entirely on the accelerator (no host round trip
per product), keeps the Ritz vector (needed to ascend the top eigenvalue), and reports the number of
products and the residual of the returned pair, which the book's accuracy claims rely on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V
from .pytree import FlatSpec, flat_spec

Array = jax.Array
PyTree = Any
ScalarFn = Callable[..., Array]
HIGHEST = jax.lax.Precision.HIGHEST

DENSE_MAX_PARAMS = 20_000
"""Largest P for which :func:`dense_hessian` agrees to build the P × P matrix."""
BASIS_MEMORY_BUDGET = 4 << 30
"""Bytes the Lanczos basis may take; ``basis_size`` is reduced to fit (at least 8 vectors)."""


def hvp(fn: ScalarFn, params: PyTree, tangent: PyTree, *args: Any) -> PyTree:
    """H(params)·tangent for the scalar function ``fn(params, *args)`` (forward-over-reverse).

    ``tangent`` has the structure of ``params``; usable inside ``jit``/``vmap``.
    """
    V.callable_("fn", fn)
    if jax.tree_util.tree_structure(tangent) != jax.tree_util.tree_structure(params):
        raise ValueError("tangent must have the same pytree structure as params")
    return jax.jvp(lambda p: jax.grad(fn)(p, *args), (params,), (tangent,))[1]


def at_input(
    apply_fn: Callable[[PyTree, Array], Array], x: Any, output: int | None = None
) -> Callable[[PyTree], Array]:
    """The scalar function w ↦ f(w; x) of one input (and one output index for k > 1 outputs).

    ``x`` is a single input (shape (d,) or a scalar for d = 1).  Use it to turn a model into the
    ``fn`` that :func:`hessian_spectral_norm` expects.
    """
    x = V.array("x", x, ndim=(0, 1))

    def fn(params: PyTree) -> Array:
        f = apply_fn(params, x[None])
        f = f[0]
        if f.ndim == 1:
            if output is None:
                raise ValueError("the model has several outputs: pass output=<index>")
            f = f[output]
        return f

    return fn


def _check_scalar_fn(fn: ScalarFn, params: PyTree, args: tuple) -> None:
    try:
        out = jax.eval_shape(fn, params, *args)
    except Exception as err:
        raise ValueError(f"fn(params, *args) failed: {err}") from err
    if out.shape != ():
        raise ValueError(f"fn(params, *args) must return a scalar, got shape {out.shape}")


# ---------------------------------------------------------------------------------------------
# Dense reference
# ---------------------------------------------------------------------------------------------


def dense_hessian(fn: ScalarFn, params: PyTree, *args: Any) -> Array:
    """The full Hessian ∂²fn/∂w² as a (P, P) array, w = the flattened ``params`` (leaf order).

    For references and small models only: raises ``ValueError`` when P > ``DENSE_MAX_PARAMS``.
    """
    V.callable_("fn", fn)
    V.pytree_of_arrays("params", params)
    _check_scalar_fn(fn, params, args)
    spec = flat_spec(params)
    if spec.size > DENSE_MAX_PARAMS:
        raise ValueError(
            f"params has P = {spec.size} entries; dense_hessian builds a P x P matrix and is limited to "
            f"P <= {DENSE_MAX_PARAMS}: use hessian_spectral_norm (matrix-free) instead"
        )
    return _dense_hessian(fn, spec, spec.ravel(params), args)


@partial(jax.jit, static_argnames=("fn", "spec"))
def _dense_hessian(fn: ScalarFn, spec: FlatSpec, w: Array, args: tuple) -> Array:
    return jax.hessian(lambda u: fn(spec.unravel(u), *args))(w)


def dense_spectral_norm(fn: ScalarFn, params: PyTree, *args: Any) -> float:
    """max |λ(H)| from the dense Hessian (symmetrized, ``eigvalsh``) — the reference value."""
    h = np.asarray(dense_hessian(fn, params, *args), dtype=np.float64)
    return float(np.max(np.abs(np.linalg.eigvalsh(0.5 * (h + h.T)))))


# ---------------------------------------------------------------------------------------------
# Matrix-free spectral norm
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpectralNormResult:
    """Result of :func:`hessian_spectral_norm`.

    Attributes:
        value: ‖H‖ = max |λ(H)|, the spectral norm (≥ 0).
        eigenvalue: the signed eigenvalue estimate with |eigenvalue| = value.
        eigenvector: the unit Ritz vector (same pytree structure as ``params``), or None.
        iterations: Lanczos steps (Hessian-vector products) the answer is built from.
        products: all Hessian-vector products computed, including the final residual check (and,
            for small P, the few steps of the last batch after convergence).
        residual: ‖Hu − λu‖ / |λ| of the returned pair, measured with one extra product
            (0 when H = 0).  Some eigenvalue of H lies within ``residual·value`` of ``eigenvalue``.
        converged: whether both extreme Ritz pairs met the tolerance before ``max_iter``.
        lambda_min: estimate of the smallest eigenvalue.
        lambda_max: estimate of the largest eigenvalue.
        method: ``"lanczos"`` or ``"arpack"``.
    """

    value: float
    eigenvalue: float
    eigenvector: PyTree | None
    iterations: int
    products: int
    residual: float
    converged: bool
    lambda_min: float
    lambda_max: float
    method: str


# The Krylov basis is a pytree with the structure of ``params`` whose leaves carry a leading axis of
# length k+1 (one row per basis vector): Hessian-vector products then need no flattening (which
# costs more than the product itself for 10⁷ parameters on a CPU).  Rows not yet in use are zero.


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


def _lanczos_body(fn: ScalarFn, params: PyTree, args: tuple, basis: PyTree, i: Array, rows: int):
    """One step from the pending vector basis_i: (new basis, coefficients h (rows,), β)."""
    v = jax.tree_util.tree_map(lambda b: b[i], basis)
    h, w = _orthogonalize(basis, hvp(fn, params, v, *args), rows)
    beta = _tree_norm(w)
    scale = jnp.where(beta > 0, 1.0 / jnp.where(beta > 0, beta, 1), 0.0)
    return _set_row(basis, i + 1, jax.tree_util.tree_map(lambda x: x * scale, w)), h, beta


@partial(jax.jit, static_argnames=("fn", "chunk", "rows"), donate_argnums=(0,))
def _lanczos_steps(basis: PyTree, j: Array, n: Array, params: PyTree, args: tuple, fn: ScalarFn, chunk: int,
                   rows: int):
    """``n`` ≤ ``chunk`` Lanczos steps starting from the pending vector basis_j.

    Each step applies H to basis_i, orthogonalizes against rows 0..rows−1 (the rows beyond i are
    zero) and stores basis_{i+1}.  Returns the new basis, the coefficients
    h_i = basisᵀ·(H v_i) (rows of ``coeffs``: column i of the projected matrix) and β_i.
    """
    dtype = jax.tree_util.tree_leaves(basis)[0].dtype
    coeffs = jnp.zeros((chunk, rows), dtype)
    betas = jnp.zeros((chunk,), dtype)

    def body(k, carry):
        basis, coeffs, betas = carry
        basis, h, beta = _lanczos_body(fn, params, args, basis, j + k, rows)
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


@partial(jax.jit, static_argnames=("fn",))
def _ritz_vector_residual(basis: PyTree, coeffs: Array, theta: Array, params: PyTree, args: tuple, fn: ScalarFn):
    u = _rows_combine(coeffs, basis)
    norm = _tree_norm(u)
    u = jax.tree_util.tree_map(lambda x: x / norm, u)
    hu = hvp(fn, params, u, *args)
    r = jax.tree_util.tree_map(lambda a, b: a - theta * b, hu, u)
    return u, _tree_norm(r)


def _validate_common(fn, params, args, tol, max_iter):
    V.callable_("fn", fn)
    V.pytree_of_arrays("params", params)
    if not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple of extra arguments for fn, got {type(args).__name__}")
    _check_scalar_fn(fn, params, args)
    tol = V.positive_float("tol", tol)
    max_iter = V.positive_int("max_iter", max_iter)
    return tol, max_iter


def hessian_spectral_norm(
    fn: ScalarFn,
    params: PyTree,
    *,
    args: tuple = (),
    tol: float = 1e-6,
    max_iter: int = 1000,
    basis_size: int = 32,
    method: str = "lanczos",
    key: Array | None = None,
    start: PyTree | None = None,
) -> SpectralNormResult:
    """Spectral norm ‖H‖ = max |λ| of the Hessian of ``fn(params, *args)``, matrix-free.

    Args:
        fn: scalar function of the parameter pytree (e.g. ``at_input(model.apply, x)``); extra
            arguments ``args`` are passed through as traced values, so one compiled function serves
            many inputs.
        params: the point w at which H is taken.
        tol: stop when both extreme Ritz pairs have residual ‖Hu − θu‖ ≤ tol·max|θ|.
        max_iter: the most Hessian-vector products the iteration may use.
        basis_size: Krylov basis size k before a thick restart (memory k·P); reduced to fit
            ``BASIS_MEMORY_BUDGET``.
        method: ``"lanczos"`` (JAX, on device) or ``"arpack"`` (scipy ``eigsh``, which="LM").
        key: PRNG key for the random start vector (default ``jax.random.key(0)``).
        start: a start vector with the structure of ``params`` instead of a random one — e.g. the
            eigenvector found at a nearby point, which saves products along a path.

    Returns:
        A :class:`~ntkbook.hessian.SpectralNormResult` (``.value``, ``.iterations``, ``.residual``, ``.converged``...).

    Algorithm (``"lanczos"``): Krylov–Schur restarted Lanczos (Stewart 2002).  Each step orthogonalizes
    H v_j against the whole basis by classical Gram–Schmidt, repeated when the DGKS criterion asks for
    it, so the projected matrix T = VᵀHV is formed from the actual inner products (tridiagonal, or
    arrowhead after a restart).  With H V = V T + β v_{k+1} e_kᵀ, the Ritz pair (θ_i, V s_i) has
    residual β |e_kᵀ s_i|; the iteration stops when this is ≤ tol·max|θ| for both ends of the
    spectrum.  When the basis is full, the ``basis_size // 6`` most extreme Ritz vectors of each end
    are kept (thick restart).
    """
    tol, max_iter = _validate_common(fn, params, args, tol, max_iter)
    V.choice("method", method, ("lanczos", "arpack"))
    basis_size = V.positive_int("basis_size", basis_size, minimum=4)
    key = jax.random.key(0) if key is None else key
    spec = flat_spec(params)
    p = spec.size
    if start is None:
        start = jax.random.normal(key, (p,), spec.dtype)
    else:
        if jax.tree_util.tree_structure(start) != spec.treedef:
            raise ValueError("start must have the same pytree structure as params")
        V.pytree_of_arrays("start", start)
        start = spec.ravel(start)
        if float(jnp.linalg.norm(start)) == 0.0:
            raise ValueError("start must be a non-zero vector")
    start = start / jnp.linalg.norm(start)
    if method == "arpack":
        return _arpack(fn, params, args, spec, start, tol, max_iter)
    return _krylov_schur(fn, params, args, spec, start, tol, max_iter, basis_size)


CHUNK_MAX_PARAMS = 1 << 17
"""Below this P, Lanczos steps run 8 at a time per host round trip (Python overhead dominates
tiny Hessian-vector products); above it one at a time, so no product is wasted."""


def _krylov_schur(fn, params, args, spec: FlatSpec, start, tol, max_iter, basis_size) -> SpectralNormResult:
    p = spec.size
    itemsize = jnp.dtype(spec.dtype).itemsize
    fit = max(8, BASIS_MEMORY_BUDGET // (p * itemsize) - 1)
    nb = int(min(basis_size, fit, p))
    keep_each = max(1, nb // 6)
    chunk = 8 if p < CHUNK_MAX_PARAMS else 1
    start_tree = spec.unravel(start)
    basis = jax.tree_util.tree_map(lambda x: jnp.zeros((nb + 1, *x.shape), spec.dtype).at[0].set(x), start_tree)
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
        basis, coeffs, betas = _lanczos_steps(basis, jnp.asarray(j), jnp.asarray(n), params, args, fn=fn,
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
            if res[0] <= tol * scale and res[-1] <= tol * scale:
                converged = True
            elif beta <= 100 * np.finfo(spec.dtype).eps * scale or scale == 0.0:
                converged = True  # invariant subspace (breakdown): the Ritz values are exact
            if converged:
                break
    i_star = int(np.argmax(np.abs(theta)))
    value_signed = float(theta[i_star])
    if value_signed == 0.0:
        return SpectralNormResult(0.0, 0.0, None, steps, products, 0.0, converged, float(theta[0]),
                                  float(theta[-1]), "lanczos")
    coeffs = np.zeros(nb + 1)  # padded to all rows: no slicing, one compiled function per problem
    coeffs[: s.shape[0]] = s[:, i_star]
    coeffs = jnp.asarray(coeffs, spec.dtype)
    u, r = _ritz_vector_residual(basis, coeffs, jnp.asarray(value_signed, spec.dtype), params, args, fn=fn)
    return SpectralNormResult(
        value=abs(value_signed),
        eigenvalue=value_signed,
        eigenvector=u,
        iterations=steps,
        products=products + 1,
        residual=float(r) / abs(value_signed),
        converged=converged,
        lambda_min=float(theta[0]),
        lambda_max=float(theta[-1]),
        method="lanczos",
    )


def _arpack(fn, params, args, spec: FlatSpec, start, tol, max_iter) -> SpectralNormResult:
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    p = spec.size
    matvec = jax.jit(lambda v, prm, a: spec.ravel(hvp(fn, prm, spec.unravel(v), *a)))
    count = [0]

    def mv(v: np.ndarray) -> np.ndarray:
        count[0] += 1
        return np.asarray(matvec(jnp.asarray(v.ravel(), spec.dtype), params, args), dtype=np.float64)

    if p == 1:
        lam = float(mv(np.ones(1))[0])
        vals, vecs, converged = np.array([lam]), np.ones((1, 1)), True
    else:
        op = LinearOperator((p, p), matvec=mv, dtype=np.float64)
        ncv = min(p, 32)
        try:
            vals, vecs = eigsh(op, k=1, which="LM", tol=tol, v0=np.asarray(start, np.float64), ncv=ncv,
                               maxiter=max(1, max_iter // ncv))
            converged = True
        except ArpackNoConvergence as err:
            vals, vecs, converged = err.eigenvalues, err.eigenvectors, False
            if len(vals) == 0:
                return SpectralNormResult(float("nan"), float("nan"), None, count[0], count[0], float("inf"),
                                          False, float("nan"), float("nan"), "arpack")
    steps = count[0]
    lam = float(vals[0])
    u = vecs[:, 0] / np.linalg.norm(vecs[:, 0])
    hu = mv(u)
    residual = float(np.linalg.norm(hu - lam * u) / abs(lam)) if lam != 0 else 0.0
    return SpectralNormResult(
        value=abs(lam),
        eigenvalue=lam,
        eigenvector=spec.unravel(jnp.asarray(u, spec.dtype)),
        iterations=steps,
        products=count[0],
        residual=residual,
        converged=converged,
        lambda_min=lam if lam < 0 else float("nan"),
        lambda_max=lam if lam > 0 else float("nan"),
        method="arpack",
    )


# ---------------------------------------------------------------------------------------------
# Fixed number of steps, pure JAX (vmappable)
# ---------------------------------------------------------------------------------------------


def lanczos_fixed_steps(fn: ScalarFn, params: PyTree, args: tuple = (), *, num_steps: int = 32,
                        key: Array | None = None) -> dict[str, Array]:
    """``num_steps`` Lanczos steps with full reorthogonalization, as one pure JAX function.

    Unlike :func:`hessian_spectral_norm` it has no data-dependent stopping, so it can be
    ``jit``-compiled and ``vmap``-ped over parameters or inputs.  Returns a dict of scalars:
    ``value`` (max |θ|), ``lambda_min``, ``lambda_max`` and ``residual`` (the relative Krylov
    residual β|e_kᵀs| / max|θ| of the extreme Ritz pair — check it before trusting ``value``).
    Memory O(num_steps · P).
    """
    V.callable_("fn", fn)
    V.pytree_of_arrays("params", params)
    if not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple of extra arguments for fn, got {type(args).__name__}")
    num_steps = V.positive_int("num_steps", num_steps, minimum=2)
    key = jax.random.key(0) if key is None else key
    spec = flat_spec(params)
    return _lanczos_fixed(fn, spec, params, args, key, min(num_steps, spec.size))


@partial(jax.jit, static_argnames=("fn", "spec", "num_steps"))
def _lanczos_fixed(fn, spec: FlatSpec, params, args, key, num_steps):
    v0 = jax.random.normal(key, (spec.size,), spec.dtype)
    v0 = spec.unravel(v0 / jnp.linalg.norm(v0))
    basis = jax.tree_util.tree_map(lambda x: jnp.zeros((num_steps + 1, *x.shape), spec.dtype).at[0].set(x), v0)
    eps = 100 * jnp.finfo(spec.dtype).eps

    def body(j, carry):
        basis, alphas, betas, active, scale = carry
        new_basis, h, beta = _lanczos_body(fn, params, args, basis, j, num_steps + 1)
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
    i_star = jnp.argmax(jnp.abs(theta))
    value = jnp.abs(theta[i_star])
    res = betas[-1] * jnp.abs(s[-1, :])
    rel = jnp.maximum(res[0], res[-1]) / jnp.where(value > 0, value, 1)
    return {"value": value, "lambda_min": theta[0], "lambda_max": theta[-1], "residual": rel}


__all__ = [
    "SpectralNormResult",
    "at_input",
    "dense_hessian",
    "dense_spectral_norm",
    "hessian_spectral_norm",
    "hvp",
    "lanczos_fixed_steps",
]

