"""Exact norms of the layer derivatives of dense networks: the factors of Proposition 3.1 and
Theorem 3.1 of Liu, Zhu & Belkin (2020) (Eq. 73–75, Lemma F.2).

For a fully connected layer φ(W, a) = σ(Wa/√n) of an :class:`~ntkbook.models.dense.MLP` (Eq. 22, no
biases) or a :class:`~ntkbook.models.resnet.ResNet` (Eq. 97), with z = Wa/√n, s' = σ'(z), s'' = σ''(z),
every slice of the second-derivative tensors is rank one, T_i = s''_i p_i q_iᵀ, and
Σ_i |xᵀT_i z| = Σ_i |s''_i||p_iᵀx||q_iᵀz| can be maximized in closed form (:func:`layer_factors`):

* ‖∂φ/∂W‖ = ‖a‖ max_i|s'_i| / √n                 (J Jᵀ is diagonal),
* ‖∂φ/∂a‖ = ‖diag(s')W‖ / √n                     (ResNet: ‖I + diag(s')W/√n‖),
* ‖∂²φ/∂W²‖₂,₂,₁ = ‖a‖² max_i|s''_i| / n,
* ‖∂²φ/∂a∂W‖₂,₂,₁ = λ_max(M)^{1/2}, M = ‖a‖²Wᵀdiag(c²)W + Wᵀ(c⊙e)aᵀ + a(c⊙e)ᵀW + ‖e‖²I with
  c = s''/n, e = s'/√n.  The tensor has two parts, (∂²φ/∂a_j∂W_kk')_i = δ_ik(s''_i W_ij a_k'/n +
  s'_i δ_jk'/√n); Eq. 74 (supp. Eq. 57) keeps only the first (it forgets that ∂φ/∂a = diag(s')W/√n
  depends on W directly), whose norm would be ‖a‖‖diag(s'')W‖/n.
* ‖∂²φ/∂a²‖₂,₂,₁ = λ_max(Wᵀ diag(|s''|) W) / n.

They are exact (not bounds), computed in float64 (dense symmetric eigensolver up to n = 512, ARPACK to a
relative 1e-12 beyond), and checked against :func:`ntkbook.norm_221` on the
autodiff tensors (:func:`layer_tensors`) in the tests and the chapter.

The bounds of the papers built from these factors (Proposition 3.1, Theorem 3.1, Lemmas F.2–F.6) are
in :mod:`ntkbook.hessian_bounds`.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V
from .eigen import SymmetricOperator, extreme_eigenpairs
from .hessian import second_derivative_tensor
from .hessian_compressed import base_pass, check_dense_model, layer_inputs, single_input
from .models.dense import MLP
from .models.resnet import ResNet

Array = jax.Array
PyTree = Any
HIGHEST = jax.lax.Precision.HIGHEST


def _check_no_bias(model: Any) -> None:
    check_dense_model(model)
    if getattr(model, "use_bias", False):
        raise ValueError("the layer factors are derived for layers without biases (Eq. 22); got use_bias=True")


def layer_tensors(model: MLP | ResNet, params: PyTree, x: Any, layer: int) -> dict[str, np.ndarray]:
    """The derivatives of layer l = ``layer`` (1-based) by autodiff, unit index last (the contracted index of Eq. 5).

    Returns float64 arrays: ``"jw"`` ∂α⁽ˡ⁾/∂W (m_l, m_l·n), ``"ja"`` ∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾ (m_l, n), ``"ww"``
    ∂²α⁽ˡ⁾/∂W² as (m_l n, m_l n, m_l), ``"aw"`` ∂²α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾∂W as (n, m_l n, m_l) and ``"aa"``
    ∂²α⁽ˡ⁾/∂(α⁽ˡ⁻¹⁾)² as (n, n, m_l), with W flattened row-major.  For small layers only.
    """
    _check_no_bias(model)
    layer = V.positive_int("layer", layer)
    if layer > model.depth:
        raise ValueError(f"layer must be a layer index in 1..{model.depth}, got {layer}")
    w = params["layers"][layer - 1]["W"]
    a = layer_inputs(model, params, x)[layer - 1]
    m, n = w.shape
    if m * n > 4096:
        raise ValueError(f"layer {layer} has {m * n} weights; layer_tensors is a small-size reference (<= 4096)")
    act = model.activations[layer - 1]
    residual = isinstance(model, ResNet) and layer > 1
    jw, ja, t = _layer_derivatives(w, a, act, residual)
    mn = m * n
    as64 = partial(np.asarray, dtype=np.float64)
    t = as64(t)  # (m, mn + n, mn + n): second derivatives in z = (vec W, α⁽ˡ⁻¹⁾)
    return {"jw": as64(jw), "ja": as64(ja), "ww": np.transpose(t[:, :mn, :mn], (1, 2, 0)),
            "aw": np.transpose(t[:, :mn, mn:], (2, 1, 0)), "aa": np.transpose(t[:, mn:, mn:], (1, 2, 0))}


@partial(jax.jit, static_argnames=("act", "residual"))
def _layer_derivatives(w, a, act, residual):
    """(∂φ/∂W, ∂φ/∂a, ∂²φ/∂z²) of φ(W, a) = σ(Wa/√n) (+ a) with z = (vec W, a) — the second derivatives
    by :func:`ntkbook.hessian.second_derivative_tensor`, the blocks ww, aw, aa cut out by the caller."""
    m, n = w.shape

    def phi(z):
        out = act(jnp.matmul(z[: m * n].reshape(m, n), z[m * n:], precision=HIGHEST) / math.sqrt(n))
        return out + z[m * n:] if residual else out

    z = jnp.concatenate([w.reshape(-1), a])
    jac = jax.jacrev(phi)(z)
    return jac[:, : m * n], jac[:, m * n:], second_derivative_tensor(phi, z)


DENSE_FACTOR_MAX = 512
"""Up to this size the structured norms use a dense float64 eigensolver (exact); above it ARPACK on the
matrix-free operator (converged to a relative tolerance of 1e-12)."""


def _top_eig_sym(matvec, n: int) -> float:
    """λ_max of a symmetric positive semi-definite n × n operator given by its matrix–vector product
    (``matvec`` maps (n, k) blocks to (n, k) blocks), by :func:`ntkbook.eigen.extreme_eigenpairs`.

    Dense (the matrix from one block product with the identity, LAPACK) for n ≤ :data:`DENSE_FACTOR_MAX`,
    else ARPACK (which="LA", tol = 1e-12, ncv = 40) on the operator — O(n²) per product instead of O(n³).
    """
    if n <= DENSE_FACTOR_MAX:
        return float(extreme_eigenpairs(matvec(np.eye(n)), which="LA", method="dense", vectors=False).value)
    op = SymmetricOperator(lambda v: matvec(v.reshape(n, 1)).ravel(), np.zeros(n), backend="numpy")
    res = extreme_eigenpairs(op, which="LA", method="arpack", tol=1e-12, basis_size=40, max_iter=400_000)
    return float(res.value)


def largest_singular_value(a: np.ndarray) -> float:
    """Largest singular value of a (float64), as √λ_max(AᵀA) with AᵀA applied matrix-free."""
    return math.sqrt(max(_top_eig_sym(lambda v: a.T @ (a @ v), a.shape[1]), 0.0))


def layer_factors(model: MLP | ResNet, params: PyTree, x: Any) -> dict[str, np.ndarray]:
    """Every layer-wise factor of the bounds of Proposition 3.1 / Theorem 3.1 at one point, exact.

    Returns float64 arrays of length L (index l − 1 for layer l):

    * ``fan_in`` n_l, ``width`` m_l;
    * ``jw`` ‖∂α⁽ˡ⁾/∂W⁽ˡ⁾‖ = ‖α⁽ˡ⁻¹⁾‖ max|σ'(α̃⁽ˡ⁾)| / √n_l;
    * ``ja`` ‖∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾‖ (NaN for l = 1: the input x is not a variable);
    * ``tww`` ‖∂²α⁽ˡ⁾/∂W²‖₂,₂,₁, ``taw`` ‖∂²α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾∂W‖₂,₂,₁, ``taa`` ‖∂²α⁽ˡ⁾/∂(α⁽ˡ⁻¹⁾)²‖₂,₂,₁
      (``taw``, ``taa`` NaN for l = 1);
    * ``b_inf`` ‖∂f/∂α⁽ˡ⁾‖_∞, ``b_two`` ‖∂f/∂α⁽ˡ⁾‖₂;
    * ``max_s1``, ``max_s2`` max_i|σ'|, max_i|σ''| at the layer's pre-activations, ``a_norm`` ‖α⁽ˡ⁻¹⁾‖.

    The formulas are in the module docstring; all five norms are exact in float64 (``ja``, ``taw``,
    ``taa``: a dense eigensolver for n ≤ :data:`DENSE_FACTOR_MAX`, ARPACK to a relative 1e-12 above).
    """
    _check_no_bias(model)
    x = single_input(model, x)
    bp = base_pass(model, params, x)
    ins, s1, s2, b = bp.inputs, bp.s1, bp.s2, bp.b
    residual = isinstance(model, ResNet)
    depth = model.depth
    out = {k: np.full(depth, np.nan) for k in ("fan_in", "width", "jw", "ja", "tww", "taw", "taa", "b_inf", "b_two",
                                                "max_s1", "max_s2", "a_norm")}
    for i in range(depth):
        w = np.asarray(params["layers"][i]["W"], dtype=np.float64)
        m, n = w.shape
        a = np.asarray(ins[i], dtype=np.float64)
        d1 = np.asarray(s1[i], dtype=np.float64)
        d2 = np.asarray(s2[i], dtype=np.float64)
        bl = np.asarray(b[i], dtype=np.float64)
        an = float(np.linalg.norm(a))
        out["fan_in"][i], out["width"][i], out["a_norm"][i] = n, m, an
        out["max_s1"][i], out["max_s2"][i] = np.abs(d1).max(), np.abs(d2).max()
        out["jw"][i] = an * np.abs(d1).max() / math.sqrt(n)
        out["tww"][i] = an**2 * np.abs(d2).max() / n
        out["b_inf"][i], out["b_two"][i] = np.abs(bl).max(), np.linalg.norm(bl)
        if i == 0:
            continue
        ja = d1[:, None] * w / math.sqrt(n)
        if residual:
            ja = ja + np.eye(m, n)
        out["ja"][i] = largest_singular_value(ja)
        c, e = d2 / n, d1 / math.sqrt(n)
        ce, ee = w.T @ (c * e), float(e @ e)
        c2, cabs = (c**2)[:, None], np.abs(d2)[:, None]

        def m_aw(v, w=w, c2=c2, ce=ce, a=a, an=an, ee=ee):
            # M v with M = ‖a‖²Wᵀdiag(c²)W + ce aᵀ + a ceᵀ + ‖e‖² I (v: (n, k))
            return an**2 * (w.T @ (c2 * (w @ v))) + np.outer(ce, a @ v) + np.outer(a, ce @ v) + ee * v

        out["taw"][i] = math.sqrt(max(_top_eig_sym(m_aw, n), 0.0))
        out["taa"][i] = _top_eig_sym(lambda v, w=w, cabs=cabs: w.T @ (cabs * (w @ v)), n) / n
    return out


__all__ = [
    "DENSE_FACTOR_MAX",
    "largest_singular_value",
    "layer_factors",
    "layer_tensors",
]
