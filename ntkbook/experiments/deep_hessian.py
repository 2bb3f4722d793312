"""Chapter 3 — the Hessian of wide networks with a linear output layer (Liu, Zhu & Belkin 2020,
Sections 3.2–3.3, Apps. E–G of Liu–Zhu–Belkin 2020; supp. Apps. F–H).

Everything here is about one scalar function w ↦ f(W; x) at one input x, for the fully connected
network of Eq. (22) (:class:`~ntkbook.models.dense.MLP`, NTK parameterization) and the residual
network of Eq. 97 (:class:`~ntkbook.models.resnet.ResNet`).

**‖H‖ itself** comes from :func:`ntkbook.hessian_spectral_norm` with ``operator="auto"``: for
MLPs/ResNets ARPACK on the Hessian compressed to its exact range (N ≈ 2Lm coordinates instead of
P ≈ (L − 1)m², module :mod:`ntkbook.hessian_compressed`), for CNNs Hessian-vector products over all
parameters.  :func:`compression_check` compares the compressed operator with references on all P
parameters.

**The layer factors** — the exact norms of every layer's first and second derivatives (Eq. 73–75 of
Liu–Zhu–Belkin 2020) — come from :func:`ntkbook.layer_norms.layer_factors`;
:func:`structured_norms_check` compares them with :func:`ntkbook.norm_221` on the autodiff tensors.

**Bounds on ‖H‖** (:func:`hessian_bounds`): per block H⁽ˡ¹,ˡ²⁾ an upper bound from the chain rule
(proof of Theorem 3.1, Appendix F), then (i) the spectral norm of the matrix of block bounds, (ii)
their sum (Lemma E.1), (iii) Theorem 3.1's C₁Q₂,₂,₁Q_∞ + C₂Q_L/√m — each an upper bound on ‖H‖,
(i) ≤ (ii) ≤ (iii).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validation as V
from ..data.sphere import unit_scale_input
from ..eigen import extreme_eigenpairs
from ..hessian import at_input, dense_spectral_norm, hessian_spectral_norm
from ..hessian_compressed import compressed_dimension, kernel_at_input
from ..layer_norms import a_priori_layer_jacobian, layer_factors, layer_tensors
from ..models import mlp
from ..models.resnet import resnet
from ..norms import norm_221
from ..progress import progress
from ..pytree import flat_spec, point_on_sphere
from ..random import fold_key
from ..scales import Prop31, RangeCheck, Thm31

Array = jax.Array
PyTree = Any


# ---------------------------------------------------------------------------------------------
# From layer factors to bounds on ‖H‖ (Proposition 3.1, Lemma E.1, Theorem 3.1)
# ---------------------------------------------------------------------------------------------


def _reach(f: Mapping[str, np.ndarray], l1: int, k: int) -> float:
    """Upper bound on ‖∂α⁽ᵏ⁾/∂W⁽ˡ¹⁾‖ (1-based layers, k ≥ l1): ‖J_w⁽ˡ¹⁾‖ Π_{l'=l1+1}^{k} ‖J_α⁽ˡ'⁾‖."""
    out = f["jw"][l1 - 1]
    for lp in range(l1 + 1, k + 1):
        out *= f["ja"][lp - 1]
    return float(out)


def block_bounds(factors: Mapping[str, np.ndarray], *, include_v: bool) -> np.ndarray:
    """Upper bounds β(l₁, l₂) on the block norms ‖H⁽ˡ¹,ˡ²⁾‖ (chain rule, proof of Theorem 3.1).

    For 1 ≤ l₁ ≤ l₂ ≤ L (A(l, k) := ‖J_w⁽ˡ⁾‖Π_{l<l'≤k}‖J_α⁽ˡ'⁾‖ ≥ ‖∂α⁽ᵏ⁾/∂W⁽ˡ⁾‖, b_l := ‖∂f/∂α⁽ˡ⁾‖_∞):

    β = 1{l₁=l₂}‖T_ww⁽ˡ¹⁾‖b_{l₁} + 1{l₁<l₂} A(l₁, l₂−1)‖T_αw⁽ˡ²⁾‖ b_{l₂}
        + Σ_{l=l₂+1}^{L} A(l₁, l−1) A(l₂, l−1) ‖T_αα⁽ˡ⁾‖ b_l,

    and for the output layer (``include_v``) β(l, L+1) = A(l, L)/√m_L, β(L+1, L+1) = 0.  Returns the
    symmetric (L+1) × (L+1) (or L × L) matrix.
    """
    depth = len(factors["jw"])
    size = depth + (1 if include_v else 0)
    beta = np.zeros((size, size))
    for l1 in range(1, depth + 1):
        for l2 in range(l1, depth + 1):
            val = 0.0
            if l1 == l2:
                val += factors["tww"][l1 - 1] * factors["b_inf"][l1 - 1]
            else:
                val += _reach(factors, l1, l2 - 1) * factors["taw"][l2 - 1] * factors["b_inf"][l2 - 1]
            for l3 in range(l2 + 1, depth + 1):
                val += (_reach(factors, l1, l3 - 1) * _reach(factors, l2, l3 - 1) * factors["taa"][l3 - 1]
                        * factors["b_inf"][l3 - 1])
            beta[l1 - 1, l2 - 1] = beta[l2 - 1, l1 - 1] = val
    if include_v:
        m_last = factors["width"][-1]
        for l1 in range(1, depth + 1):
            beta[l1 - 1, depth] = beta[depth, l1 - 1] = _reach(factors, l1, depth) / math.sqrt(m_last)
    return beta


def theorem_3_1_quantities(factors: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Q_∞, Q_L, Q₂,₂,₁ (Eq. 20–21), L_φ, C₁, C₂ of Theorem 3.1 from the layer factors.

    * Q_∞ = max_l ‖∂f/∂α⁽ˡ⁾‖_∞, Q_L = max_l ‖∂α⁽ˡ⁾/∂w⁽ˡ⁾‖;
    * Q₂,₂,₁ = max{ ‖T_ww⁽ˡ¹⁾‖, ‖J_w⁽ˡ¹⁾‖‖T_αw⁽ˡ²⁾‖ (l₁ < l₂), ‖J_w⁽ˡ¹⁾‖‖J_w⁽ˡ²⁾‖‖T_αα⁽ˡ³⁾‖ (l₁ ≤ l₂ < l₃) }.
      Eq. (21) writes l₁ < l₂ < l₃ for all three, which is empty for L = 2 and misses the diagonal
      blocks' terms (l₁ = l₂); the proof (Appendix F) needs the ranges used here;
    * L_φ = max(1, max_{l≥2} ‖∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾‖): the proof bounds products of k ≤ 2L layer Jacobians by
      L_φ^{2L}, which needs L_φ ≥ 1 (for L_φ < 1 the products are ≤ 1);
    * C₁ = L(L²L_φ^{2L} + L L_φ^L + 1), C₂ = L L_φ^L.
    """
    depth = len(factors["jw"])
    q_inf = float(np.max(factors["b_inf"]))
    q_l = float(np.max(factors["jw"]))
    cands = [float(t) for t in factors["tww"]]
    for l1 in range(1, depth + 1):
        for l2 in range(l1 + 1, depth + 1):
            cands.append(factors["jw"][l1 - 1] * factors["taw"][l2 - 1])
        for l2 in range(l1, depth + 1):
            for l3 in range(l2 + 1, depth + 1):
                cands.append(factors["jw"][l1 - 1] * factors["jw"][l2 - 1] * factors["taa"][l3 - 1])
    q221 = float(max(cands))
    ja = factors["ja"][1:]
    l_phi = float(max(1.0, np.max(ja))) if ja.size else 1.0
    c1 = depth * (depth**2 * l_phi ** (2 * depth) + depth * l_phi**depth + 1)
    c2 = depth * l_phi**depth
    return {"Q_inf": q_inf, "Q_L": q_l, "Q_221": q221, "L_phi": l_phi, "C1": float(c1), "C2": float(c2)}


def hessian_bounds(factors: Mapping[str, np.ndarray], *, include_v: bool) -> dict[str, float]:
    """Three upper bounds on ‖H‖, tightest first, plus Theorem 3.1's quantities.

    * ``blockwise`` — ‖(β(l₁, l₂))‖₂, the spectral norm of the matrix of block bounds (for a block
      matrix, ‖H‖ ≤ ‖(‖H_ij‖)_ij‖₂);
    * ``lemma_e1`` — Σ_{l₁,l₂} β(l₁, l₂) (Lemma E.1 of Liu–Zhu–Belkin 2020; for L = 2 with v fixed this is
      exactly the right-hand side of Eq. 17);
    * ``theorem_3_1`` — C₁Q₂,₂,₁Q_∞ + C₂Q_L/√m (the second term only with a trained v); it dominates
      the sum because every term of β is ≤ Q₂,₂,₁Q_∞ times a power of L_φ ≤ L_φ^{2L}, and the v-blocks
      enter once (‖[[0, X], [Xᵀ, 0]]‖ = ‖X‖ ≤ Σ_l ‖H⁽ˡ,ᴸ⁺¹⁾‖).
    """
    beta = block_bounds(factors, include_v=include_v)
    q = theorem_3_1_quantities(factors)
    depth = len(factors["jw"])
    thm = q["C1"] * q["Q_221"] * q["Q_inf"]
    if include_v:
        thm += q["C2"] * q["Q_L"] / math.sqrt(factors["width"][-1])
    ww = beta[:depth, :depth]
    lemma = float(ww.sum() + (beta[:depth, depth].sum() if include_v else 0.0))
    blockwise = extreme_eigenpairs(beta, which="LA", method="dense", vectors=False).value
    return {"blockwise": float(blockwise), "lemma_e1": lemma, "theorem_3_1": float(thm), **q}


def eq_17_terms(factors: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The four terms of Eq. (17) (Proposition 3.1, L = 2, v fixed) and their sum."""
    if len(factors["jw"]) != 2:
        raise ValueError("Eq. (17) is the two-hidden-layer bound: factors of a network with L = 2 needed")
    jw1 = factors["jw"][0]
    b1, b2 = factors["b_inf"]
    terms = {
        "J_w1^2 T_aa2 b2": jw1**2 * factors["taa"][1] * b2,
        "2 J_w1 T_aw2 b2": 2 * jw1 * factors["taw"][1] * b2,
        "T_ww2 b2": factors["tww"][1] * b2,
        "T_ww1 b1": factors["tww"][0] * b1,
    }
    terms = {k: float(v) for k, v in terms.items()}
    terms["eq_17"] = float(sum(terms.values()))
    return terms


# ---------------------------------------------------------------------------------------------
# The chapter's sweeps (Proposition 3.1, Theorem 3.1, Lemma 3.1)
# ---------------------------------------------------------------------------------------------


def structured_norms_check(key: Array, *, width: int = 10, depth: int = 3, input_dim: int = 4,
                           activation: str = "tanh", models: Sequence[str] = ("MLP", "ResNet")
                           ) -> list[dict[str, Any]]:
    """The closed forms of :func:`ntkbook.layer_norms.layer_factors` against autodiff tensors and
    :func:`ntkbook.norm_221`.

    For a small MLP and/or a small ResNet (``models``; float64, every layer of width ``width`` ≤ 16 so that the
    (2,2,1)-norms are computed by exact enumeration of sign vectors), one row per (model, layer,
    quantity) with ``formula``, ``reference`` (spectral norm or exact (2,2,1)-norm of the autodiff
    tensor) and ``exact`` (whether :func:`ntkbook.norm_221` certified its value).
    """
    width = V.positive_int("width", width)
    for name in models:
        V.choice("models", name, ("MLP", "ResNet"))
    if width > 16:
        raise ValueError(f"width must be <= 16 for exact (2,2,1)-norms by enumeration, got {width}")
    rows = []
    with jax.enable_x64(True):
        k1, k2, kx = jax.random.split(key, 3)
        x = unit_scale_input(kx, input_dim, jnp.float64)
        make = {"MLP": lambda: mlp(k1, (width,) * depth, input_dim=input_dim, activation=activation,
                                   dtype=jnp.float64),
                "ResNet": lambda: resnet(k2, width, depth, input_dim=input_dim, activation=activation,
                                         dtype=jnp.float64)}
        for name in models:
            model, params = make[name]()
            f = layer_factors(model, params, x)
            for layer in range(1, depth + 1):
                t = layer_tensors(model, params, x, layer)
                checks = [("‖∂α/∂W‖", f["jw"][layer - 1], np.linalg.norm(t["jw"], 2), True)]
                checks.append(("‖∂²α/∂W²‖₂₂₁", f["tww"][layer - 1], *_n221(norm_221, t["ww"])))
                if layer > 1:
                    checks.append(("‖∂α/∂α⁻‖", f["ja"][layer - 1], np.linalg.norm(t["ja"], 2), True))
                    checks.append(("‖∂²α/∂α⁻∂W‖₂₂₁", f["taw"][layer - 1], *_n221(norm_221, t["aw"])))
                    checks.append(("‖∂²α/∂α⁻²‖₂₂₁", f["taa"][layer - 1], *_n221(norm_221, t["aa"])))
                for q, formula, ref, exact in checks:
                    rows.append({"model": name, "layer": layer, "quantity": q, "formula": float(formula),
                                 "reference": float(ref), "exact": bool(exact)})
    return rows


def _n221(norm_221, t: np.ndarray) -> tuple[float, bool]:
    r = norm_221(t)
    return (r.lower, True) if r.exact else (0.5 * (r.lower + r.upper), False)


def compression_check(settings: RangeCheck, key: Array) -> list[dict[str, Any]]:
    """‖H‖ from the compressed operator against references that do not use the range argument.

    * small networks (``small_width``, float64): the dense P × P autodiff Hessian (LAPACK) against the
      dense compressed matrix QᵀHQ (autodiff) and ARPACK on the hand-written compressed product —
      ``small_models`` among "MLP", "ResNet";
    * one larger network (``large_width``, float32): an eigensolver on all P parameters
      (``reference_method``: ``"full"`` ARPACK, or ``"full-lanczos"`` Krylov–Schur Lanczos) against
      ARPACK on the compressed operator — all through :func:`ntkbook.hessian_spectral_norm`.

    Rows: ``network``, ``P``, ``N``, ``reference``, ``compressed``, ``method``, ``products``.
    """
    d, depth = settings.input_dim, settings.depth
    rows = []
    with jax.enable_x64(True):
        m = settings.small_width
        x = unit_scale_input(jax.random.fold_in(key, 1), d, jnp.float64)
        make = {"MLP": lambda: mlp(jax.random.fold_in(key, 2), (m,) * depth, input_dim=d, dtype=jnp.float64),
                "ResNet": lambda: resnet(jax.random.fold_in(key, 4), m, depth, input_dim=d, dtype=jnp.float64)}
        for name in settings.small_models:
            model, params = make[name]()
            ref = dense_spectral_norm(at_input(model.apply, x), params)
            p_size, n_size = flat_spec(params).size, compressed_dimension(model, params)
            for operator, method in (("compressed", "dense"), ("compressed-numpy", "arpack")):
                h = hessian_spectral_norm(at_input(model.apply, x), params, operator=operator, method=method,
                                          tol=1e-12)
                rows.append({"network": f"{name}, m = {m} (float64)", "P": p_size, "N": n_size, "reference": ref,
                             "compressed": h.value, "method": f"{h.method}-compressed", "products": h.products})
    m = settings.large_width
    model, params = mlp(jax.random.fold_in(key, 5), (m,) * depth, input_dim=d)
    x = unit_scale_input(jax.random.fold_in(key, 1), d)
    solver = {"full": "arpack", "full-lanczos": "lanczos"}[settings.reference_method]
    full = hessian_spectral_norm(at_input(model.apply, x), params, operator="full", method=solver, tol=settings.tol)
    comp = hessian_spectral_norm(at_input(model.apply, x), params, operator="compressed-numpy", method="arpack",
                                 tol=settings.tol)
    rows.append({"network": f"MLP, m = {m} (float32)", "P": flat_spec(params).size,
                 "N": compressed_dimension(model, params), "reference": full.value, "compressed": comp.value,
                 "method": f"{comp.method}-compressed", "products": comp.products,
                 "reference_products": full.products})
    return rows


def _network(key: Array, widths: Sequence[int], d: int, activation: str, train_output: bool):
    return mlp(key, tuple(widths), input_dim=d, activation=activation, train_output=train_output)


def proposition_3_1(settings: Prop31, key: Array) -> dict[str, np.ndarray]:
    """Every factor of Eq. (17) for two-hidden-layer networks (v fixed, Eq. 16) across widths and seeds.

    Settings: ``widths``, ``seeds``, ``input_dim``, ``activation``.  One row per (width, seed) at W₀:
    the factors ``jw1``, ``taa2``, ``taw2``, ``tww2``, ``tww1``, ``b_inf1``, ``b_inf2``, ``b_two1``,
    ``b_two2``, the four terms and the total ``eq_17``, the tighter ``blockwise`` bound, and ``hessian``
    (‖H‖ with respect to (W₁, W₂)).
    """
    d, act = settings.input_dim, settings.activation
    rows: dict[str, list] = {}
    pieces = [(m, s) for m in settings.widths for s in range(settings.seeds)]
    for m, s in progress(pieces, desc="Prop. 3.1", total=len(pieces)):
        k = jax.random.fold_in(key, 1000 * s + m)
        model, params = _network(k, (m, m), d, act, train_output=False)
        x = unit_scale_input(jax.random.fold_in(key, 7), d)
        f = layer_factors(model, params, x)
        terms = eq_17_terms(f)
        bnd = hessian_bounds(f, include_v=False)
        h = hessian_spectral_norm(at_input(model.apply, x), params, operator="auto", method="arpack", tol=1e-6)
        row = {"width": m, "seed": s, "jw1": f["jw"][0], "taa2": f["taa"][1], "taw2": f["taw"][1],
               "tww2": f["tww"][1], "tww1": f["tww"][0], "b_inf1": f["b_inf"][0], "b_inf2": f["b_inf"][1],
               "b_two1": f["b_two"][0], "b_two2": f["b_two"][1], "ja2": f["ja"][1], **terms,
               "blockwise": bnd["blockwise"], "lemma_e1": bnd["lemma_e1"], "hessian": h.value,
               "kernel": kernel_at_input(model, params, x)}
        for key_, val in row.items():
            rows.setdefault(key_, []).append(val)
    return {k: np.asarray(v) for k, v in rows.items()}


def theorem_3_1(settings: Thm31, key: Array) -> dict[str, np.ndarray]:
    """‖H‖ against the bounds of Theorem 3.1 for L ∈ ``depths`` over ``widths`` × ``seeds``, at W₀ and at
    ``sphere_points`` random points of each sphere ‖W − W₀‖ = R, R ∈ ``radii`` (v trained).

    Returns one row per sample: ``depth``, ``width``, ``seed``, ``radius`` (0 at W₀), ``hessian``,
    ``blockwise``, ``lemma_e1``, ``theorem_3_1``, ``Q_inf``, ``Q_L``, ``Q_221``, ``L_phi``, ``C1``,
    ``C2``, ``L_phi_a_priori`` (Lemma F.2 bound on max_l ‖J_α⁽ˡ⁾‖), ``ja_max`` and ``kernel``.
    """
    d, act = settings.input_dim, settings.activation
    pieces = [(L, m, s) for L in settings.depths for m in settings.widths for s in range(settings.seeds)]
    rows: dict[str, list] = {}
    for L, m, s in progress(pieces, desc="Thm. 3.1", total=len(pieces)):
        k = jax.random.fold_in(key, 100_000 * L + 1000 * s + m)
        model, p0 = _network(k, (m,) * L, d, act, train_output=True)
        x = unit_scale_input(jax.random.fold_in(key, 7), d)
        points = [(0.0, p0)]
        for r in settings.radii:
            for i in range(settings.sphere_points):
                points.append((float(r), point_on_sphere(fold_key(k, float(r), i), p0, float(r))))
        for r, p in points:
            f = layer_factors(model, p, x)
            bnd = hessian_bounds(f, include_v=True)
            h = hessian_spectral_norm(at_input(model.apply, x), p, operator="auto", method="arpack", tol=settings.tol)
            prior = a_priori_layer_jacobian(model, p0, p)
            row = {"depth": L, "width": m, "seed": s, "radius": r, "hessian": h.value,
                   "kernel": kernel_at_input(model, p, x),
                   "ja_max": float(np.nanmax(f["ja"])), "L_phi_a_priori": float(np.nanmax(prior)), **bnd}
            for key_, val in row.items():
                rows.setdefault(key_, []).append(val)
    return {k: np.asarray(v) for k, v in rows.items()}


def worst_per_network(rows: Mapping[str, np.ndarray], keys: Sequence[str],
                      by: Sequence[str] = ("depth", "width", "seed")) -> dict[str, np.ndarray]:
    """One row per network (the columns ``by``) with the largest value of each of ``keys`` over its points.

    Points of one network (W₀ and points of the ball) are not independent samples; fits of exponents
    use one value per network.
    """
    ids = np.stack([np.asarray(rows[b], dtype=np.float64) for b in by], axis=1)
    uniq = np.unique(ids, axis=0)
    out: dict[str, list] = {k: [] for k in (*by, *keys)}
    for u in uniq:
        sel = np.all(ids == u, axis=1)
        for b, val in zip(by, u, strict=True):
            out[b].append(val)
        for k in keys:
            out[k].append(float(np.max(np.asarray(rows[k])[sel])))
    return {k: np.asarray(v) for k, v in out.items()}


__all__ = [
    "block_bounds",
    "compression_check",
    "eq_17_terms",
    "hessian_bounds",
    "proposition_3_1",
    "structured_norms_check",
    "theorem_3_1",
    "theorem_3_1_quantities",
    "worst_per_network",
]
