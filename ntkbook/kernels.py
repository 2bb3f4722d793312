"""Empirical tangent kernels, Eq. (1) of Liu, Zhu & Belkin (2020).

K_{(x,z)}(w) = ∇_w f(w; x)ᵀ ∇_w f(w; z).  For k outputs the kernel is a (k × k) block per pair of
inputs, K[i, j, a, b] = ⟨∇_w f_a(w; x_i), ∇_w f_b(w; z_j)⟩, the layout neural-tangents returns with
``trace_axes=()``.

Three methods, which agree to floating-point precision (tests):

* ``"jacobian"`` — form both Jacobians J₁ ∈ ℝ^{n₁k×P}, J₂ ∈ ℝ^{n₂k×P} (reverse mode) and contract.
  Memory O((n₁ + n₂) k P).
* ``"ntvp"`` — NTK-vector products: column (j, b) of K is J₁ (J₂ᵀ e_{jb}), one vector-Jacobian
  product followed by one Jacobian-vector product; columns are computed in batches, so memory is
  O(batch · P) and the Jacobians are never stored.

* ``"structured"`` — for networks built from dense layers (:mod:`ntkbook.structured_ntk`): the kernel
  from forward activations and backward pre-activation gradients, layer by layer; cost
  Σ_l n₁n₂k²m_l, no Jacobian.

``"auto"`` picks ``"structured"`` when the model supports it; otherwise ``"jacobian"`` when both
Jacobians fit in a memory budget and ``"ntvp"`` when they do not.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from . import _validation as V
from . import structured_ntk
from .pytree import num_params

Array = jax.Array
PyTree = Any
ApplyFn = Callable[[PyTree, Array], Array]

METHODS = ("auto", "jacobian", "ntvp", "structured")
JACOBIAN_MEMORY_BUDGET = 1 << 30
"""Bytes of Jacobian that ``method="auto"`` is willing to materialize (1 GiB)."""


def _output_shape(apply_fn: ApplyFn, params: PyTree, x: Array) -> tuple[int, ...]:
    try:
        out = jax.eval_shape(apply_fn, params, x)
    except Exception as err:  # a readable message for the usual mistakes (wrong x shape, ...)
        raise ValueError(f"apply_fn(params, x) failed for x of shape {tuple(x.shape)}: {err}") from err
    if out.ndim not in (1, 2) or out.shape[0] != x.shape[0]:
        raise ValueError(
            f"apply_fn(params, x) must return shape (n,) or (n, k) with n = {x.shape[0]}, got {tuple(out.shape)}"
        )
    return tuple(out.shape)


def _as_nk(f: Array) -> Array:
    """Outputs as (n, k) (scalar outputs get k = 1)."""
    return f[:, None] if f.ndim == 1 else f


@partial(jax.jit, static_argnames=("apply_fn",))
def _ntk_jacobian(apply_fn: ApplyFn, params: PyTree, x1: Array, x2: Array) -> Array:
    def jac(x: Array) -> list[Array]:
        j = jax.jacrev(lambda p: _as_nk(apply_fn(p, x)))(params)
        return [leaf.reshape(leaf.shape[0], leaf.shape[1], -1) for leaf in jax.tree_util.tree_leaves(j)]

    j1, j2 = jac(x1), jac(x2)
    return sum(
        jnp.einsum("iap,jbp->ijab", a, b, precision=jax.lax.Precision.HIGHEST) for a, b in zip(j1, j2, strict=True)
    )


@partial(jax.jit, static_argnames=("apply_fn", "batch_size"))
def _ntk_ntvp(apply_fn: ApplyFn, params: PyTree, x1: Array, x2: Array, batch_size: int) -> Array:
    f2, vjp2 = jax.vjp(lambda p: _as_nk(apply_fn(p, x2)), params)
    n2, k = f2.shape

    def column(cotangent: Array) -> Array:
        (g,) = vjp2(cotangent)
        return jax.jvp(lambda p: _as_nk(apply_fn(p, x1)), (params,), (g,))[1]  # (n1, k)

    basis = jnp.eye(n2 * k, dtype=f2.dtype).reshape(n2 * k, n2, k)
    cols = jax.lax.map(column, basis, batch_size=batch_size)  # (n2*k, n1, k): [(j,b), i, a]
    n1 = cols.shape[1]
    return cols.reshape(n2, k, n1, k).transpose(2, 0, 3, 1)  # [i, j, a, b]


def _choose_method(params: PyTree, n1: int, n2: int, k: int) -> str:
    itemsize = max(leaf.dtype.itemsize for leaf in jax.tree_util.tree_leaves(params))
    jac_bytes = (n1 + n2) * k * num_params(params) * itemsize
    return "jacobian" if jac_bytes <= JACOBIAN_MEMORY_BUDGET else "ntvp"


def empirical_ntk(
    apply_fn: ApplyFn,
    params: PyTree,
    x1: Any,
    x2: Any = None,
    *,
    method: str = "auto",
    batch_size: int | None = None,
) -> Array:
    """The empirical tangent kernel of ``apply_fn`` at ``params`` (Eq. 1).

    Args:
        apply_fn: ``apply_fn(params, x) -> (n,) or (n, k)``.
        params: any pytree of floating arrays (the trainable parameters w).
        x1: inputs, ``(n1, ...)`` as ``apply_fn`` expects them.
        x2: second set of inputs (defaults to ``x1``).
        method: ``"jacobian"``, ``"ntvp"``, ``"structured"`` or ``"auto"``.
        batch_size: for ``"ntvp"``, how many kernel columns to compute at once (memory
            O(batch_size · P)); default: all columns at once when that takes under 1 GiB.

    Returns:
        ``(n1, n2)`` for scalar outputs (also when k = 1), ``(n1, n2, k, k)`` for k > 1, with
        ``K[i, j, a, b] = ⟨∇f_a(x1_i), ∇f_b(x2_j)⟩``.
    """
    V.callable_("apply_fn", apply_fn)
    V.pytree_of_arrays("params", params)
    V.choice("method", method, METHODS)
    x1 = V.array("x1", x1)
    same = x2 is None or x2 is x1
    x2 = x1 if same else V.array("x2", x2)
    model = structured_ntk.model_of(apply_fn)
    if model is not None and method in ("auto", "structured"):
        # a known dense model: shapes follow from its configuration (no tracing of apply_fn)
        k = structured_ntk.output_dim(model)
        n1, n2 = x1.shape[0], x2.shape[0]
    else:
        s1 = _output_shape(apply_fn, params, x1)
        s2 = _output_shape(apply_fn, params, x2)
        k = 1 if len(s1) == 1 else s1[1]
        if (1 if len(s2) == 1 else s2[1]) != k:
            raise ValueError(f"apply_fn returns {s1} for x1 but {s2} for x2: the number of outputs differs")
        n1, n2 = s1[0], s2[0]
    if method == "structured" and model is None:
        names = ", ".join(c.__name__ for c in structured_ntk.SUPPORTED)
        raise ValueError(f"method='structured' needs apply_fn to be the apply method of a dense model ({names}); "
                         "use method='jacobian' or 'ntvp' for other functions")
    if method == "auto":
        method = "structured" if model is not None else _choose_method(params, n1, n2, k)
    if method == "structured":
        kernel = structured_ntk.structured_ntk(model, params, x1, None if same else x2)
    elif method == "jacobian":
        kernel = _ntk_jacobian(apply_fn, params, x1, x2)
    else:
        if batch_size is None:
            itemsize = max(leaf.dtype.itemsize for leaf in jax.tree_util.tree_leaves(params))
            per_column = max(1, num_params(params) * itemsize)
            batch_size = max(1, min(n2 * k, JACOBIAN_MEMORY_BUDGET // per_column))
        batch_size = V.positive_int("batch_size", batch_size)
        kernel = _ntk_ntvp(apply_fn, params, x1, x2, min(batch_size, n2 * k))
    return kernel[:, :, 0, 0] if k == 1 else kernel


def flatten_ntk(kernel: Array) -> Array:
    """(n1, n2, k, k) → the (n1·k, n2·k) matrix with rows (i, a) and columns (j, b).

    This is the "full kernel" of the paper's experiments (Appendix B: an (N·3) × (N·3) matrix).
    A (n1, n2) kernel is returned unchanged.
    """
    kernel = V.array("kernel", kernel, ndim=(2, 4))
    if kernel.ndim == 2:
        return kernel
    n1, n2, k1, k2 = kernel.shape
    return kernel.transpose(0, 2, 1, 3).reshape(n1 * k1, n2 * k2)


def kernel_diagonal(apply_fn: ApplyFn, params: PyTree, x: Any) -> Array:
    """K_{(x,x)}(w) = ‖∇_w f(w; x)‖² for every input — shape (n,) (scalar outputs only).

    One gradient per input, vmapped; cheaper than the full kernel when only the diagonal is needed
    (e.g. Eq. 10, K(x, x) = Θ(1)).
    """
    V.callable_("apply_fn", apply_fn)
    V.pytree_of_arrays("params", params)
    x = V.array("x", x)
    shape = _output_shape(apply_fn, params, x)
    if len(shape) != 1:
        raise ValueError(f"kernel_diagonal needs a scalar-output model; apply_fn returns shape {shape}")
    return _kernel_diagonal(apply_fn, params, x)


@partial(jax.jit, static_argnames=("apply_fn",))
def _kernel_diagonal(apply_fn: ApplyFn, params: PyTree, x: Array) -> Array:
    def sq_grad_norm(xi: Array) -> Array:
        g = jax.grad(lambda p: apply_fn(p, xi[None])[0])(params)
        return sum(jnp.vdot(leaf, leaf) for leaf in jax.tree_util.tree_leaves(g))

    return jax.vmap(sq_grad_norm)(x)


def relative_change(kernel: Array, kernel0: Array) -> Array:
    """‖K − K₀‖_F / ‖K₀‖_F — the kernel change the paper plots (Appendix B)."""
    kernel = flatten_ntk(kernel)
    kernel0 = flatten_ntk(kernel0)
    if kernel.shape != kernel0.shape:
        raise ValueError(f"kernel and kernel0 must have the same shape, got {kernel.shape} and {kernel0.shape}")
    return jnp.linalg.norm(kernel - kernel0) / jnp.linalg.norm(kernel0)


__all__ = ["METHODS", "empirical_ntk", "flatten_ntk", "kernel_diagonal", "relative_change"]

