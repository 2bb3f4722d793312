"""The linearization of a model around w₀ and what it leaves out (Liu–Zhu–Belkin 2020, Eq. 5 and Eq. 56–57).

* :func:`linearize` — the first-order Taylor model f_lin(w; x) = f(w₀; x) + ∇f(w₀; x)ᵀ(w − w₀);
* :func:`remainder` — f(w; x) − f_lin(w; x), the part of the model that is not linear;
* :func:`gradient_change` — ∇f(w) − ∇f(w₀) = ∫₀¹ H(w₀ + sΔ)Δ ds (Eq. 56, the integral form of Taylor's theorem
  behind Proposition 2.3), by Gauss–Legendre quadrature of Hessian-vector products;
* :func:`remainder_integral` — f(w) − f_lin(w) = ∫₀¹ (1 − s) Δᵀ H(w₀ + sΔ) Δ ds, the same for the model itself.

The integral forms are identities for twice continuously differentiable models, so comparing them with
the direct differences tests the Hessian code (and shows where it fails: for ReLU autodiff misses the
Dirac masses of σ''); the quadrature nodes are an explicit argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from . import _validation as V
from .pytree import tree_axpy, tree_sub
from .quadrature import gauss_legendre_unit

PyTree = Any
Array = jax.Array


def linearize(apply_fn: Callable[[PyTree, Any], Array], params0: PyTree) -> Callable[[PyTree, Any], Array]:
    """The first-order Taylor model around ``params0`` (the "linearized network", Eq. 5):

    f_lin(w; x) = f(w₀; x) + ∇_w f(w₀; x)ᵀ (w − w₀),

    computed with one Jacobian-vector product (no Jacobian is formed).  It is linear in w with the
    non-linear feature map φ(x) = ∇_w f(w₀; x), so by Proposition 2.2 its tangent kernel is constant.
    Returns ``apply_lin(params, x)`` with the shapes of ``apply_fn``.
    """
    V.callable_("apply_fn", apply_fn)
    V.pytree_of_arrays("params0", params0)

    def apply_lin(params: PyTree, x: Any) -> Array:
        f0, df = jax.jvp(lambda p: apply_fn(p, x), (params0,), (tree_sub(params, params0),))
        return f0 + df

    return apply_lin


def remainder(apply_fn: Callable[[PyTree, Any], Array], params0: PyTree, params: PyTree, x: Any) -> Array:
    """f(w; x) − f_lin(w; x): what the linearization around w₀ misses at w (shape of ``apply_fn(params, x)``)."""
    return apply_fn(params, x) - linearize(apply_fn, params0)(params, x)


def _nodes(nodes: int, like: PyTree) -> tuple[Array, Array]:
    t, w = gauss_legendre_unit(nodes)
    dtype = jnp.result_type(*jax.tree_util.tree_leaves(like))
    return jnp.asarray(t, dtype), jnp.asarray(w, dtype)


def gradient_change(fn: Callable[[PyTree], Array], params0: PyTree, params: PyTree, *, nodes: int = 16) -> PyTree:
    """∫₀¹ H(w₀ + sΔ)Δ ds with Δ = w − w₀ (Eq. 56), for a scalar ``fn``: equals ∇fn(w) − ∇fn(w₀) when fn is C².

    Gauss–Legendre on [0, 1] with ``nodes`` points (:func:`ntkbook.quadrature.gauss_legendre_unit`), one
    Hessian-vector product (forward over reverse) per node.  Returns a pytree like ``params``.
    """
    delta = tree_sub(params, params0)
    grad = jax.grad(fn)
    ts, ws = _nodes(nodes, params0)
    hv = jax.lax.map(lambda t: jax.jvp(grad, (tree_axpy(t, delta, params0),), (delta,))[1], ts)
    return jax.tree_util.tree_map(lambda h: jnp.tensordot(ws, h, axes=1), hv)


def remainder_integral(fn: Callable[[PyTree], Array], params0: PyTree, params: PyTree, *, nodes: int = 16) -> Array:
    """∫₀¹ (1 − s) Δᵀ H(w₀ + sΔ) Δ ds with Δ = w − w₀, for a scalar ``fn``: equals fn(w) − fn_lin(w) when fn is C².

    The second-order integral form of Taylor's theorem, by Gauss–Legendre with ``nodes`` points; each node is
    one second directional derivative (two nested Jacobian-vector products).
    """
    delta = tree_sub(params, params0)
    ts, ws = _nodes(nodes, params0)

    def second(t: Array) -> Array:
        first = lambda p: jax.jvp(fn, (p,), (delta,))[1]  # noqa: E731
        return jax.jvp(first, (tree_axpy(t, delta, params0),), (delta,))[1]

    return jnp.sum(ws * (1.0 - ts) * jax.lax.map(second, ts))


__all__ = ["gradient_change", "linearize", "remainder", "remainder_integral"]
