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
(proof of Theorem 3.1, App. E), then (i) the spectral norm of the matrix of block bounds, (ii)
their sum (Lemma E.1), (iii) Theorem 3.1's C₁Q₂,₂,₁Q_∞ + C₂Q_L/√m — each an upper bound on ‖H‖,
(i) ≤ (ii) ≤ (iii).

**Inside the proof (App. F)**: the hidden-layer norms in the ball (Lemma F.3, :func:`hidden_layer_norms`), the
activations at W₀ (Lemma F.4, :func:`activation_tails`), and the backward vectors b⁽ˡ⁾ = ∂f/∂α⁽ˡ⁾ in the ball
(Lemma F.5 and the induction of App. F.4, Eq. 80–89, :func:`backward_vectors_in_ball`): b⁽ˡ⁾ by automatic
differentiation (:func:`backward_vectors`) and by the backward recursion, the gradient of ⟨r, b⁽ˡ⁾(W)⟩ written out
by hand (:func:`backward_vector_gradient`) for a projected ascent on spheres (:func:`ascend_backward_vector`), and
the explicit bounds of the induction (:func:`lemma_f5_bounds`, :func:`eq_85_87_bounds`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from matplotlib.figure import Figure

from .. import _validation as V
from .. import plotting
from ..ball import point_on_sphere
from ..data.sphere import unit_scale_input
from ..eigen import extreme_eigenpairs
from ..hessian import at_input, dense_spectral_norm, hessian_spectral_norm
from ..hessian_bounds import a_priori_layer_jacobian, lemma_f3_bounds
from ..hessian_compressed import base_pass, compressed_dimension, kernel_at_input
from ..layer_norms import largest_singular_value, layer_factors, layer_tensors
from ..models import MLP, mlp
from ..models.common import HIGHEST, dense
from ..models.resnet import resnet
from ..norms import norm_221
from ..progress import progress
from ..pytree import flat_spec
from ..random import fold_key
from ..scales import HiddenLayers, Prop31, RangeCheck, Thm31
from ..tables import Table, order_fit, show

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
      blocks' terms (l₁ = l₂); the proof (App. E) needs the ranges used here;
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


# ---------------------------------------------------------------------------------------------
# Appendix F.1 and F.4: hidden-layer norms in the ball (Lemma F.3) and bounded activations (Lemma F.4)
# ---------------------------------------------------------------------------------------------


def sigma_at_zero(activation: str) -> float:
    """|σ(0)| from the registry's NumPy σ (the ``phi_at_zero`` of :func:`ntkbook.activations.constants`, without
    computing the Hermite constants there)."""
    from ..activations import get_activation

    return abs(float(get_activation(activation).numpy(np.zeros(1), 0)[0]))


def _hidden_activations(model: MLP, params: PyTree, x: Any) -> list[np.ndarray]:
    """α⁽¹⁾, …, α⁽ᴸ⁾ at one input (float64, from the NumPy base pass of :mod:`ntkbook.hessian_compressed`)."""
    bp = base_pass(model, params, x)
    return [*bp.inputs[1:], bp.last]


_C0_MEMO: dict[tuple, float] = {}


def _initial_weight_scale(key: Array, p0: PyTree, m: int) -> float:
    """c₀ = max_{l ≤ L+1} ‖W₀⁽ˡ⁾‖/√m (v included) of the network drawn from ``key``, remembered per (key, shapes):
    the Lemma F.3 and App. F.4 experiments draw the same networks, and the dense eigensolver is their costliest
    step."""
    mats = [np.asarray(layer["W"]) for layer in p0["layers"]] + [np.asarray(p0["v"])]
    tag = (np.asarray(jax.random.key_data(key)).tobytes(), tuple(w.shape for w in mats), str(mats[0].dtype))
    if tag not in _C0_MEMO:
        if len(_C0_MEMO) > 4096:
            _C0_MEMO.clear()
        _C0_MEMO[tag] = max(largest_singular_value(w) for w in mats) / math.sqrt(m)
    return _C0_MEMO[tag]


def _ball_networks(settings: HiddenLayers, key: Array, desc: str):
    """The float64 networks of the Appendix F experiments and their points of the ball, one tuple per (L, m, seed):
    ``(L, m, s, models, p0, points, c0)`` with ``models`` activation → MLP (the weights do not depend on the
    activation: one draw, and one set of ball points, serves all), ``points`` = [(0, W₀), (R, point of the sphere
    ‖W − W₀‖ = R) for R in ``radii``, ``sphere_points`` each] and c₀ = max_{l ≤ L+1} ‖W₀⁽ˡ⁾‖/√m (v included).
    Iterate inside ``jax.enable_x64(True)``."""
    d = int(settings.input_dim)
    pieces = [(L, m, s) for L in settings.depths for m in settings.widths for s in range(settings.seeds)]
    for L, m, s in progress(pieces, desc=desc, total=len(pieces)):
        k = jax.random.fold_in(key, 100_000 * L + 1000 * s + m)
        made = {a: mlp(k, (m,) * L, input_dim=d, activation=a, dtype=jnp.float64) for a in settings.activations}
        p0 = made[settings.activations[0]][1]
        c0 = _initial_weight_scale(k, p0, m)
        points = [(0.0, p0)] + [(float(r), point_on_sphere(jax.random.fold_in(k, 31 * j + i + 1), p0, float(r)))
                                for j, r in enumerate(settings.radii) for i in range(settings.sphere_points)]
        yield L, m, s, {a: made[a][0] for a in made}, p0, points, c0


def hidden_layer_norms(settings: HiddenLayers, key: Array) -> dict[str, np.ndarray]:
    """Lemma F.3: ‖α⁽ˡ⁾(W)‖ against its bound, printed and corrected, at W₀ and on spheres ‖W − W₀‖ = R.

    Settings: ``activations``, ``depths``, ``widths``, ``seeds``, ``input_dim``, ``radii``, ``sphere_points``.
    Float64 MLPs (:func:`ntkbook.models.dense.mlp`, NTK parameterization, v trained), input x with ‖x‖ = √d
    (:func:`ntkbook.data.sphere.unit_scale_input`) and C_x = max_i|x_i|; Assumption F.1 holds with the measured
    c₀ = max_{l ≤ L+1} ‖W₀⁽ˡ⁾‖/√m (v included).  Rows ``input`` = "x": every (activation, L, m, seed, point,
    layer); rows ``input`` = "0": the input x = 0 (C_x = 0) at W₀, where α⁽¹⁾ = σ(0)𝟙 and ‖α⁽¹⁾‖ = √m|σ(0)|
    (only for activations with σ(0) ≠ 0).  The weights of one (L, m, seed) are shared by all activations.
    Returns equal-length arrays ``activation``, ``input``, ``depth``, ``width``, ``seed``, ``radius``, ``layer``,
    ``norm`` (‖α⁽ˡ⁾‖), ``printed``, ``corrected`` (:func:`~ntkbook.hessian_bounds.lemma_f3_bounds`), ``c0``, ``c_x``.
    """
    from ..activations import get_activation

    d = int(settings.input_dim)
    rows: dict[str, list] = {k: [] for k in ("activation", "input", "depth", "width", "seed", "radius", "layer",
                                             "norm", "printed", "corrected", "c0", "c_x")}

    def measure(a, L, m, s, c0, lip, sigma0, model, inputs) -> None:
        for name, xi, r, p in inputs:
            c_x = float(np.max(np.abs(xi)))
            bnd = lemma_f3_bounds(L, m, c0, r, lip, c_x, sigma0)
            for layer, alpha in enumerate(_hidden_activations(model, p, xi), start=1):
                for k_, val in (("activation", a), ("input", name), ("depth", L), ("width", m), ("seed", s),
                                ("radius", r), ("layer", layer), ("norm", float(np.linalg.norm(alpha))),
                                ("printed", bnd["printed"][layer - 1]), ("corrected", bnd["corrected"][layer - 1]),
                                ("c0", c0), ("c_x", c_x)):
                    rows[k_].append(val)

    with jax.enable_x64(True):
        x = np.asarray(unit_scale_input(jax.random.fold_in(key, 7), d, dtype=jnp.float64))
        consts = {a: (float(get_activation(a).lipschitz), sigma_at_zero(a)) for a in settings.activations}
        for L, m, s, models, p0, points, c0 in _ball_networks(settings, key, "Lemma F.3"):
            for a in settings.activations:
                model = models[a]
                lip, sigma0 = consts[a]
                inputs = [("x", x, r, p) for r, p in points]
                if sigma0 != 0:  # at x = 0 the bounds are 0 when σ(0) = 0, and so is α
                    inputs.append(("0", np.zeros(d), 0.0, p0))
                measure(a, L, m, s, c0, lip, sigma0, model, inputs)
    return {k: np.asarray(v) for k, v in rows.items()}


def activation_tail_probability(activation: str, scale: float, threshold: float) -> float:
    """P(|σ(sZ)| ≥ t) for Z ~ N(0, 1), s = ``scale`` > 0, t = ``threshold`` > 0, σ non-decreasing: the exact
    one-dimensional Gaussian integral Φ̄(b/s) + Φ(a/s) with b = inf{u: σ(u) ≥ t}, a = sup{u: σ(u) ≤ −t} (a term
    is 0 when σ never reaches ±t), the preimages by bracketing root finding on the NumPy σ of the registry."""
    from scipy import optimize
    from scipy.stats import norm

    from ..activations import get_activation

    phi = get_activation(activation).numpy
    f = lambda u: float(phi(np.array([u]), 0)[0])  # noqa: E731
    big = 60.0 * max(float(scale), float(threshold), 1.0)
    p = 0.0
    if f(big) >= threshold:
        b = optimize.brentq(lambda u: f(u) - threshold, -big, big, xtol=1e-14, rtol=1e-14) if f(-big) < threshold \
            else -np.inf
        p += float(norm.sf(b / scale))
    if f(-big) <= -threshold:
        a = optimize.brentq(lambda u: f(u) + threshold, -big, big, xtol=1e-14, rtol=1e-14)
        p += float(norm.cdf(a / scale))
    return p


def activation_tails(settings: HiddenLayers, key: Array) -> dict[str, np.ndarray]:
    """Lemma F.4 at initialization: |α_i⁽ˡ⁾| against ln m + |σ(0)|, with the exact conditional law.

    Given α⁽ˡ⁻¹⁾, the pre-activations α̃_i⁽ˡ⁾ = Σ_k W_ik⁽ˡ⁾α_k⁽ˡ⁻¹⁾/√m_{l−1} are i.i.d. 𝒩(0, s_l²) over i with
    s_l = ‖α⁽ˡ⁻¹⁾‖/√m_{l−1} (W⁽ˡ⁾ is independent of the earlier layers).  Hence, exactly,
    P(|α_i⁽ˡ⁾| ≥ t | α⁽ˡ⁻¹⁾) equals :func:`activation_tail_probability` at (σ, s_l, t), which the proof
    (App. I.5) bounds by
    P(𝖫_σ|α̃_i| ≥ ln m) ≤ 2exp(−ln²m/(2𝖫_σ²s_l²)) for t = ln m + |σ(0)|.

    Settings: ``activations``, ``depths``, ``widths``, ``seeds``, ``input_dim`` (the networks of
    :func:`hidden_layer_norms` at W₀, input with ‖x‖ = √d).  One row per (activation, L, m, seed, layer):
    ``scale`` (s_l), ``threshold`` (ln m + |σ(0)|), ``max_abs`` (max_i|α_i⁽ˡ⁾|), ``exceed`` (#i with
    |α_i⁽ˡ⁾| ≥ t), ``p_exact``, ``p_bound`` (the proof's bound), ``ks_pvalue`` (Kolmogorov–Smirnov test of
    α̃⁽ˡ⁾/s_l against 𝒩(0, 1), the exact law the proof's Gaussian step uses).
    """
    from scipy import stats

    from ..activations import get_activation

    d = int(settings.input_dim)
    rows: dict[str, list] = {k: [] for k in ("activation", "depth", "width", "seed", "layer", "scale", "threshold",
                                             "max_abs", "exceed", "p_exact", "p_bound", "ks_pvalue")}
    with jax.enable_x64(True):
        x = np.asarray(unit_scale_input(jax.random.fold_in(key, 7), d, dtype=jnp.float64))
        consts = {a: (float(get_activation(a).lipschitz), sigma_at_zero(a)) for a in settings.activations}
        pieces = [(a, L, m, s) for a in settings.activations for L in settings.depths for m in settings.widths
                  for s in range(settings.seeds)]
        for a, L, m, s in progress(pieces, desc="Lemma F.4", total=len(pieces)):
            model, p0 = mlp(jax.random.fold_in(key, 100_000 * L + 1000 * s + m), (m,) * L, input_dim=d,
                            activation=a, dtype=jnp.float64)
            bp = base_pass(model, p0, x)
            lip, sigma0 = consts[a]
            t = math.log(m) + sigma0
            for layer, (inp, pre, alpha) in enumerate(zip(bp.inputs, bp.pre, [*bp.inputs[1:], bp.last],
                                                          strict=True), start=1):
                sd = float(np.linalg.norm(inp)) / math.sqrt(inp.size)
                for k_, val in (("activation", a), ("depth", L), ("width", m), ("seed", s), ("layer", layer),
                                ("scale", sd), ("threshold", t), ("max_abs", float(np.max(np.abs(alpha)))),
                                ("exceed", int(np.sum(np.abs(alpha) >= t))),
                                ("p_exact", activation_tail_probability(a, sd, t)),
                                ("p_bound", 2.0 * math.exp(-math.log(m) ** 2 / (2.0 * lip**2 * sd**2))),
                                ("ks_pvalue", float(stats.kstest(pre / sd, "norm").pvalue))):
                    rows[k_].append(val)
    return {k: np.asarray(v) for k, v in rows.items()}


def hidden_layer_summary(rows: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """One row per activation of :func:`hidden_layer_norms`: the largest c₀, the range of ‖α⁽ˡ⁾‖/√m, the largest
    ratios ‖α⁽ˡ⁾‖/bound (corrected and printed) over the rows with the input x, and the smallest first-layer ratio
    ‖α⁽¹⁾‖/printed at x = 0 (NaN when the activation has σ(0) = 0 and no such rows)."""
    act, inp, layer = (np.asarray(rows[k]) for k in ("activation", "input", "layer"))
    scaled = rows["norm"] / np.sqrt(rows["width"])
    out = []
    for a in dict.fromkeys(act.tolist()):
        sel = (act == a) & (inp == "x")
        zero = (act == a) & (inp == "0") & (layer == 1)
        out.append({"activation": a, "c₀ (max)": float(rows["c0"][act == a].max()),
                    "‖α⁽ˡ⁾‖/√m": f"{scaled[sel].min():.3g}–{scaled[sel].max():.3g}",
                    "max ‖α‖/corrected": float((rows["norm"] / rows["corrected"])[sel].max()),
                    "max ‖α‖/printed": float((rows["norm"] / rows["printed"])[sel].max()),
                    "x = 0: min ‖α⁽¹⁾‖/printed": float((rows["norm"] / rows["printed"])[zero].min())
                    if zero.any() else math.nan})
    return out


def activation_tail_summary(rows: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """One row per activation of :func:`activation_tails`: number of layers, range of s_l, the largest
    max_i|α_i⁽ˡ⁾|/(ln m + |σ(0)|), the largest p_l/bound, Σ m·p_l (the chance that some unit of some layer exceeds
    the threshold, by a union bound) and the smallest Kolmogorov–Smirnov p-value."""
    act = np.asarray(rows["activation"])
    out = []
    for a in dict.fromkeys(act.tolist()):
        sel = act == a
        out.append({"activation": a, "layers": int(sel.sum()),
                    "s_l": f"{rows['scale'][sel].min():.3g}–{rows['scale'][sel].max():.3g}",
                    "max_i |α_i|/(ln m + |σ(0)|)": float((rows["max_abs"] / rows["threshold"])[sel].max()),
                    "max p_l/bound": float((rows["p_exact"] / rows["p_bound"])[sel].max()),
                    "Σ m·p_l": float((rows["width"] * rows["p_exact"])[sel].sum()),
                    "min KS p-value": float(rows["ks_pvalue"][sel].min())})
    return out


def exceedance_counts(rows: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """Per activation of :func:`activation_tails`: ``exceed`` = the number of units (all layers of all networks)
    with |α_i⁽ˡ⁾| ≥ ln m + |σ(0)|, ``expected`` = Σ m·p_l (exact), and what Lemma F.4 allows: each unit exceeds
    with probability at most b_l = 2exp(−ln²m/(2𝖫_σ²s_l²)), so the count has mean at most μ = Σ m·b_l;
    ``allowed`` = μ + 3√(Σ m·b_l(1 − b_l)), three standard deviations of the count as a sum of independent
    Bernoulli variables (the units of one layer are independent given the previous layer; across layers this is
    an approximation)."""
    act = np.asarray(rows["activation"])
    out = []
    for a in dict.fromkeys(act.tolist()):
        sel = act == a
        m, b = rows["width"][sel].astype(np.float64), np.minimum(rows["p_bound"][sel], 1.0)
        out.append({"activation": a, "exceed": int(rows["exceed"][sel].sum()),
                    "expected": float(np.sum(m * rows["p_exact"][sel])),
                    "allowed": float(np.sum(m * b) + 3.0 * math.sqrt(np.sum(m * b * (1.0 - b))))})
    return out


# ---------------------------------------------------------------------------------------------
# Appendix F.4: the backward vectors b⁽ˡ⁾ = ∂f/∂α⁽ˡ⁾ in the ball (Lemma F.5, Eq. 80–89)
# ---------------------------------------------------------------------------------------------


def _check_plain_mlp(model: Any) -> None:
    """Raise unless ``model`` is an NTK-parameterized :class:`~ntkbook.models.dense.MLP` without biases and one
    output (the network of Eq. 22 that App. F.4 is about)."""
    if not isinstance(model, MLP):
        raise TypeError(f"model must be an NTK-parameterized MLP, got {type(model).__name__}")
    if model.parameterization != "ntk":
        raise TypeError(f"model must be NTK-parameterized, got parameterization={model.parameterization!r}")
    if model.use_bias:
        raise ValueError("model must have no biases (Eq. 22 of Liu–Zhu–Belkin 2020)")
    if model.output_dim != 1:
        raise ValueError(f"f must be scalar; model has output_dim={model.output_dim}")


def _one_input(model: MLP, x: Any, *, numpy: bool = False) -> Any:
    """One input (d,): a JAX array, or with ``numpy`` a float64 NumPy array (no float32 round trip)."""
    x = V.numpy_array("x", x, ndim=1) if numpy else V.array("x", x, ndim=1)
    if x.shape[0] != model.input_dim:
        raise ValueError(f"x must be one input of shape ({model.input_dim},), got {tuple(x.shape)}")
    return x


def _layer_index(model: MLP, layer: Any) -> int:
    layer = V.positive_int("layer", layer)
    if layer > model.depth:
        raise ValueError(f"layer must be in 1..{model.depth}, got {layer}")
    return layer


def backward_vectors(model: MLP, params: PyTree, x: Any) -> list[Array]:
    """b⁽ˡ⁾ = ∂f/∂α⁽ˡ⁾ for l = 1..L at one input, by automatic differentiation (Eq. 79 of Liu–Zhu–Belkin 2020).

    f is written as a function of shifts s_l added to the post-activations, α⁽ˡ⁾ = σ(α̃⁽ˡ⁾) + s_l (the forward
    pass of Eq. 22), and ``jax.grad`` with respect to (s_1, …, s_L) at s = 0 gives every b⁽ˡ⁾ in one reverse
    pass.  Independent of the hand-written backward recursion b⁽ˡ⁻¹⁾ = W⁽ˡ⁾ᵀ(σ'(α̃⁽ˡ⁾) ⊙ b⁽ˡ⁾)/√m of
    :func:`ntkbook.hessian_compressed.base_pass` (the tests compare the two).

    Args:
        model: an NTK-parameterized :class:`~ntkbook.models.dense.MLP` without biases, one output.
        params: its parameters (v trained or fixed).
        x: one input, shape (d,).

    Returns:
        ``[b⁽¹⁾, …, b⁽ᴸ⁾]``, arrays of shapes (m_1,), …, (m_L,) in the parameters' dtype.
    """
    _check_plain_mlp(model)
    x = _one_input(model, x)
    v = (model.fixed_v if model.fixed_v is not None else params["v"])[:, 0]

    def output(shifts):
        a = x[None]
        for layer, act, s in zip(params["layers"], model.activations, shifts, strict=True):
            a = act(dense(a, layer["W"])) + s
        return jnp.matmul(a[0], v, precision=HIGHEST) / math.sqrt(v.shape[0])

    dtype = params["layers"][0]["W"].dtype
    return jax.grad(output)([jnp.zeros(m, dtype) for m in model.widths])


def _tree_np(tree: PyTree) -> PyTree:
    return jax.tree_util.tree_map(lambda t: np.asarray(t, dtype=np.float64), tree)


def _tree_norm_np(tree: PyTree) -> float:
    return math.sqrt(sum(float(np.sum(t * t)) for t in jax.tree_util.tree_leaves(tree)))


def backward_vector_gradient(model: MLP, params: PyTree, x: Any, layer: int, cotangent: Any
                             ) -> tuple[float, PyTree]:
    """ψ(W) = ⟨r, b⁽ˡ⁾(W)⟩ and its gradient ∇_W ψ, written out by hand in float64 NumPy (no compilation).

    With the forward and backward pass of :func:`ntkbook.hessian_compressed.base_pass` (α⁽ᵏ⁾, α̃⁽ᵏ⁾, σ', σ'',
    b⁽ᵏ⁾, g⁽ᵏ⁾ = σ'(α̃⁽ᵏ⁾) ⊙ b⁽ᵏ⁾), ψ is the derivative of f along α⁽ˡ⁾ → α⁽ˡ⁾ + t·r: a tangent sweep
    ȧ⁽ˡ⁾ = r, ż⁽ᵏ⁾ = W⁽ᵏ⁾ȧ⁽ᵏ⁻¹⁾/√n_k, ȧ⁽ᵏ⁾ = σ'(α̃⁽ᵏ⁾) ⊙ ż⁽ᵏ⁾ (k > l), ψ = vᵀȧ⁽ᴸ⁾/√m.  Its adjoints are the
    backward vectors themselves, so, with h⁽ᵏ⁾ = σ''(α̃⁽ᵏ⁾) ⊙ ż⁽ᵏ⁾ ⊙ b⁽ᵏ⁾ for k > l (0 for k ≤ l) and
    ζ⁽ᴸ⁾ = h⁽ᴸ⁾, ζ⁽ᵏ⁻¹⁾ = h⁽ᵏ⁻¹⁾ + σ'(α̃⁽ᵏ⁻¹⁾) ⊙ W⁽ᵏ⁾ᵀζ⁽ᵏ⁾/√n_k (σ' moves with every weight below):

        ∇_{W⁽ᵏ⁾} ψ = (1[k > l]·g⁽ᵏ⁾ȧ⁽ᵏ⁻¹⁾ᵀ + ζ⁽ᵏ⁾α⁽ᵏ⁻¹⁾ᵀ)/√n_k,   ∇_v ψ = ȧ⁽ᴸ⁾/√m   (rank ≤ 2 per layer).

    With r = b⁽ˡ⁾(W) − b₀⁽ˡ⁾ this is ∇_W ½‖b⁽ˡ⁾(W) − b₀⁽ˡ⁾‖² (r held fixed); with r = ±e_i, ∇_W b_i⁽ˡ⁾.

    Args:
        model: an NTK-parameterized MLP without biases, one output.
        params: its parameters.
        x: one input, shape (d,).
        layer: l ∈ 1..L.
        cotangent: r, shape (m_l,), finite.

    Returns:
        ``(ψ, gradient)``, the gradient a pytree of float64 NumPy arrays shaped like ``params``.
    """
    _check_plain_mlp(model)
    x = _one_input(model, x, numpy=True)
    layer = _layer_index(model, layer)
    r = V.numpy_array("cotangent", cotangent, ndim=1)
    if r.shape[0] != model.widths[layer - 1]:
        raise ValueError(f"cotangent must have shape ({model.widths[layer - 1]},), got {r.shape}")
    with jax.enable_x64(True):
        return _psi_gradient(base_pass(model, _tree_np(params), x), layer, r)


def _psi_gradient(bp: Any, layer: int, r: np.ndarray) -> tuple[float, PyTree]:
    """:func:`backward_vector_gradient` from a :class:`~ntkbook.hessian_compressed.BasePass` (1-based layer)."""
    psi, factors, grad_v = _psi_factors(bp, layer, r)
    out: dict[str, Any] = {"layers": [{"W": _low_rank_plus(1.0, u, w)} for u, w in factors]}
    if grad_v is not None:
        out["v"] = grad_v[:, None]
    return psi, out


def _low_rank_plus(scale: float, u: np.ndarray, w: np.ndarray, base: np.ndarray | None = None) -> np.ndarray:
    """base + scale·u wᵀ for factors with a few columns, as a sum of outer products (a BLAS product with two columns
    is several times slower)."""
    out = np.multiply.outer(scale * u[:, 0], w[:, 0])
    for k in range(1, u.shape[1]):
        out += np.multiply.outer(scale * u[:, k], w[:, k])
    if base is not None:
        out += base
    return out


def _psi_factors(bp: Any, layer: int, r: np.ndarray) -> tuple[float, list, np.ndarray | None]:
    """ψ, the gradient's factors (U_k, V_k) with ∇_{W⁽ᵏ⁾}ψ = U_k V_kᵀ (rank ≤ 2), and ∇_v ψ (None if v is fixed)."""
    ws, depth = bp.weights, len(bp.weights)
    tangent, z_dot, explicit = r, [None] * depth, [None] * depth
    for j in range(layer, depth):  # 0-based j: the layers l+1..L
        z_dot[j] = ws[j] @ tangent / math.sqrt(ws[j].shape[1])
        explicit[j] = tangent
        tangent = bp.s1[j] * z_dot[j]
    m_last = bp.v.size
    psi = float(bp.v @ tangent) / math.sqrt(m_last)
    rho, factors = np.zeros(m_last), [None] * depth
    for j in range(depth - 1, -1, -1):
        zeta = bp.s1[j] * rho
        if z_dot[j] is not None:
            zeta = zeta + bp.s2[j] * z_dot[j] * bp.b[j]
        root = math.sqrt(ws[j].shape[1])
        if explicit[j] is None:
            factors[j] = ((zeta / root)[:, None], np.asarray(bp.inputs[j], dtype=np.float64)[:, None])
        else:
            factors[j] = (np.stack([zeta, bp.g[j]], axis=1) / root, np.stack([bp.inputs[j], explicit[j]], axis=1))
        rho = ws[j].T @ zeta / root
    return psi, factors, (tangent / math.sqrt(m_last) if bp.train_v else None)


BACKWARD_ASCENT_STEPS = 10
"""Default largest number of steps of :func:`ascend_backward_vector` (a method parameter, the same at every
scale)."""
ASCENT_RTOL = 1e-6
""":func:`ascend_backward_vector` stops when a step raises the objective by less than this relative amount."""


def ascend_backward_vector(model: MLP, params0: PyTree, x: Any, start: PyTree, *, layer: int,
                           norm: str = "two", steps: int = BACKWARD_ASCENT_STEPS) -> tuple[PyTree, float]:
    """A lower estimate of the largest ‖b⁽ˡ⁾(W) − b₀⁽ˡ⁾‖₂ (``norm="two"``) or ‖b⁽ˡ⁾(W)‖∞ (``norm="inf"``) over the
    sphere ‖W − W₀‖ = R, R = ‖start − W₀‖ (Eq. 82 and 89 of Liu–Zhu–Belkin 2020): projected ascent from ``start``.

    Each step moves to the maximizer of the objective's linearization on the sphere, W ← W₀ + R·∇/‖∇‖ (the
    projected gradient step with an unbounded step size), with the gradients of
    :func:`backward_vector_gradient`: r = b⁽ˡ⁾(W) − b₀⁽ˡ⁾ for the 2-norm (for a quadratic objective this is
    the power iteration), r = sign(b_i)e_i with i = argmax_i|b_i⁽ˡ⁾(W)| for the ∞-norm.  It stops after
    ``steps`` steps, or earlier at a step that raises the objective by less than :data:`ASCENT_RTOL` (relative).
    The best point visited is returned: a point of the sphere, so its value is a lower estimate of the supremum,
    never an upper bound.  Float64 throughout.

    Args:
        model: an NTK-parameterized MLP without biases, one output.
        params0: the centre W₀.
        x: one input, shape (d,).
        start: a point with ‖start − W₀‖ = R > 0.
        layer: l ∈ 1..L.
        norm: ``"two"`` or ``"inf"``.
        steps: number of steps ≥ 0.

    Returns:
        ``(point, value)``: the best point (float64 NumPy pytree) and its objective.
    """
    _check_plain_mlp(model)
    x = _one_input(model, x, numpy=True)
    layer = _layer_index(model, layer)
    V.choice("norm", norm, ("two", "inf"))
    steps = V.positive_int("steps", steps, minimum=0)
    p0, point = _tree_np(params0), _tree_np(start)
    radius = _tree_norm_np(jax.tree_util.tree_map(np.subtract, point, p0))
    if not radius > 0:
        raise ValueError("start must differ from params0 (the sphere's radius ‖start − W₀‖ must be > 0)")
    with jax.enable_x64(True):
        return _ascend(model, p0, x, point, radius, layer, norm, steps)


def _ascend(model: MLP, p0: PyTree, x: np.ndarray, point: PyTree, radius: float, layer: int, norm: str,
            steps: int) -> tuple[PyTree, float]:
    b0 = base_pass(model, p0, x).b[layer - 1]
    best, best_value = point, -math.inf
    for step in range(steps + 1):
        bp = base_pass(model, point, x)
        b = bp.b[layer - 1]
        if norm == "two":
            r = b - b0
            value = float(np.linalg.norm(r))
        else:
            i = int(np.argmax(np.abs(b)))
            r = np.zeros_like(b)
            r[i] = 1.0 if b[i] >= 0 else -1.0
            value = float(abs(b[i]))
        if value <= best_value * (1.0 + ASCENT_RTOL):
            break  # no progress: a fixed point of the iteration (or a step that did not help)
        best, best_value = point, value
        if step == steps:
            break
        _, factors, grad_v = _psi_factors(bp, layer, r)
        norm2 = sum(float(np.sum((u.T @ u) * (w.T @ w))) for u, w in factors)  # ‖UVᵀ‖_F² = tr(UᵀU VᵀW)
        scale = radius / math.sqrt(norm2 + (float(grad_v @ grad_v) if grad_v is not None else 0.0))
        point = {"layers": [{"W": _low_rank_plus(scale, u, w, lay["W"])} for (u, w), lay in zip(
            factors, p0["layers"], strict=True)]}
        if grad_v is not None:
            point["v"] = p0["v"] + scale * grad_v[:, None]
    return best, best_value


def lemma_f5_bounds(depth: int, width: int, c0: float, radius: float, lipschitz: float) -> np.ndarray:
    """Lemma F.5 (Eq. 80; Eq. 81 at R = 0): ‖b⁽ˡ⁾(W)‖ ≤ 𝖫_σ^{L−l}(c₀ + R/√m)^{L−l+1}, l = 1..L, shape (L,).

    Proof (App. I.6): ‖b⁽ᴸ⁾‖ = ‖v‖/√m ≤ (c₀√m + R)/√m, and each step back multiplies by
    ‖W⁽ˡ⁾‖‖Σ'⁽ˡ⁾‖/√m ≤ (c₀ + R/√m)𝖫_σ (Lemma F.2).
    """
    depth, width = V.positive_int("depth", depth), V.positive_int("width", width)
    c0 = V.positive_float("c0", c0)
    radius = V.positive_float("radius", radius, allow_zero=True)
    lipschitz = V.positive_float("lipschitz", lipschitz)
    k = depth - np.arange(1, depth + 1, dtype=np.float64)  # L − l
    return lipschitz**k * (c0 + radius / math.sqrt(width)) ** (k + 1)


def eq_85_87_bounds(depth: int, width: int, c0: float, radius: float, lipschitz: float, smoothness: float,
                    c_x: float, sigma0: float, b0_inf: Any) -> dict[str, np.ndarray]:
    """The explicit bounds of the induction of App. F.4 (Liu–Zhu–Belkin 2020), l = 1..L, shape (L,) each.

    * ``delta`` — Eq. 85, ‖α̃⁽ˡ⁾(W) − α̃⁽ˡ⁾(W₀)‖ ≤ D_l with D_1 = R·C_x and
      D_l = c₀𝖫_σD_{l−1} + (R/√m)·A_{l−1}, A = the corrected Lemma F.3 bound on ‖α⁽ˡ⁻¹⁾(W)‖
      (:func:`~ntkbook.hessian_bounds.lemma_f3_bounds`).  The paper writes D_1 = R·C_x/√d: wrong by √d, since
      ‖ΔW⁽¹⁾x‖/√d ≤ R‖x‖/√d ≤ R·C_x with equality for ΔW⁽¹⁾ = R·u xᵀ/‖x‖ and x = C_x(±1, …, ±1).
    * ``diff`` — Eq. 83 and 87, ‖b⁽ˡ⁾(W) − b₀⁽ˡ⁾‖ ≤ E_l with E_L = R/√m and
      E_{l−1} = (R/√m)𝖫_σ^{L−l+1}(c₀ + R/√m)^{L−l+1} + c₀·‖b₀⁽ˡ⁾‖∞β_σD_l + c₀𝖫_σE_l — Eq. 84 with Lemma F.5
      for ‖b⁽ˡ⁾‖, Eq. 86 (‖(Σ'⁽ˡ⁾ − Σ'₀⁽ˡ⁾)b₀⁽ˡ⁾‖ ≤ ‖b₀⁽ˡ⁾‖∞β_σ‖α̃⁽ˡ⁾(W) − α̃⁽ˡ⁾(W₀)‖) and Eq. 85.

    Every hidden layer has width m; ``b0_inf`` are the measured ‖b₀⁽ˡ⁾‖∞, shape (L,) — the only random input
    (Lemma F.6: Õ(1/√m)), so that E_l = Õ(R/√m).  ``smoothness`` β_σ = sup|σ''| must be finite.
    """
    depth, width = V.positive_int("depth", depth), V.positive_int("width", width)
    radius = V.positive_float("radius", radius, allow_zero=True)
    smoothness = V.positive_float("smoothness", smoothness, allow_zero=True)
    if not math.isfinite(smoothness):
        raise ValueError("smoothness must be finite: Eq. 86 needs σ' to be β_σ-Lipschitz")
    b0_inf = V.numpy_array("b0_inf", b0_inf, ndim=1)
    if b0_inf.shape != (depth,):
        raise ValueError(f"b0_inf must have shape ({depth},), got {b0_inf.shape}")
    alpha = lemma_f3_bounds(depth, width, c0, radius, lipschitz, c_x, sigma0)["corrected"]
    q = float(c0) + radius / math.sqrt(width)
    d_ = np.zeros(depth)
    d_[0] = radius * float(c_x)
    for i in range(1, depth):
        d_[i] = c0 * lipschitz * d_[i - 1] + radius / math.sqrt(width) * alpha[i - 1]
    e_ = np.zeros(depth)
    e_[-1] = radius / math.sqrt(width)
    for i in range(depth - 1, 0, -1):  # 0-based i = layer l; fills layer l − 1
        k = depth - i  # L − l + 1
        e_[i - 1] = (radius / math.sqrt(width) * lipschitz**k * q**k + c0 * b0_inf[i] * smoothness * d_[i]
                     + c0 * lipschitz * e_[i])
    return {"delta": d_, "diff": e_}


def _first_layer_point(params0: PyTree, x: np.ndarray, radius: float) -> PyTree:
    """W₀ with the first unit's weights moved by R·xᵀ/‖x‖ (ΔW⁽¹⁾ = R·e₁xᵀ/‖x‖, every other weight unchanged): a point
    of the sphere where ‖α̃⁽¹⁾(W) − α̃⁽¹⁾(W₀)‖ = R‖x‖/√d, the largest value on the sphere."""
    p = _tree_np(params0)
    w = p["layers"][0]["W"].copy()
    w[0] += radius * x / np.linalg.norm(x)
    p["layers"][0]["W"] = w
    return p


BALL_POINTS: tuple[str, ...] = ("W₀", "random", "first layer", "ascent ‖b − b₀‖₂", "ascent ‖b‖∞")
"""The kinds of point of :func:`backward_vectors_in_ball`."""


def backward_vectors_in_ball(settings: HiddenLayers, key: Array, *, ascent_steps: int = BACKWARD_ASCENT_STEPS
                             ) -> dict[str, np.ndarray]:
    """Lemma F.5 and the induction of App. F.4 (Eq. 80–89 of Liu–Zhu–Belkin 2020): the backward vectors
    b⁽ˡ⁾ = ∂f/∂α⁽ˡ⁾ at W₀ and in the ball, against their explicit bounds.

    The networks and random sphere points are those of :func:`hidden_layer_norms` (same key, same draws).
    Points (column ``point``, :data:`BALL_POINTS`): W₀; the random points of every sphere ‖W − W₀‖ = R; on the
    largest sphere, the ``first layer`` point (ΔW⁽¹⁾ = R·e₁xᵀ/‖x‖, nothing else moved, so that
    ‖α̃⁽¹⁾ − α̃₀⁽¹⁾‖ = R‖x‖/√d, the largest value of the first step of Eq. 85); and, for activations with a
    finite β_σ, the end points of :func:`ascend_backward_vector` (``ascent_steps`` steps at most, from the first
    random point of the smallest sphere, where R/√m is smallest: Eq. 82 is a statement for a fixed R as m grows)
    for ‖b⁽¹⁾ − b₀⁽¹⁾‖₂ and ‖b⁽¹⁾‖∞ (the first layer, the end of the induction) and for ‖b⁽ᴸ⁾ − b₀⁽ᴸ⁾‖₂ (its
    start, whose supremum R/√m is known) — lower estimates of the suprema over that sphere; column ``target``
    is the layer an ascent maximizes.  The b⁽ˡ⁾ come from the backward
    recursion of :func:`ntkbook.hessian_compressed.base_pass` (float64; equal to the autodiff
    :func:`backward_vectors`, tests).

    One row per (activation, L, m, seed, point, layer): ``activation``, ``depth``, ``width``, ``seed``,
    ``point``, ``target`` (the ascent's layer, 0 for the other points), ``radius``, ``layer``, ``two``
    (‖b⁽ˡ⁾‖₂), ``diff`` (‖b⁽ˡ⁾ − b₀⁽ˡ⁾‖₂), ``inf`` (‖b⁽ˡ⁾‖∞), ``b0_inf`` (‖b₀⁽ˡ⁾‖∞), ``delta``
    (‖α̃⁽ˡ⁾ − α̃₀⁽ˡ⁾‖, Eq. 85), ``sigma_term`` (‖(Σ'⁽ˡ⁾ − Σ'₀⁽ˡ⁾)b₀⁽ˡ⁾‖, Eq. 86), ``f5_bound``
    (:func:`lemma_f5_bounds`), ``delta_bound``, ``diff_bound`` (:func:`eq_85_87_bounds`; NaN when
    β_σ = ∞), ``first_step_printed`` (the paper's R·C_x/√d, layer 1 only, else NaN), ``c0``, ``c_x``.
    """
    from ..activations import get_activation

    steps = V.positive_int("ascent_steps", ascent_steps, minimum=0)
    d = int(settings.input_dim)
    cols = ("activation", "depth", "width", "seed", "point", "target", "radius", "layer", "two", "diff", "inf",
            "b0_inf", "delta", "sigma_term", "f5_bound", "delta_bound", "diff_bound", "first_step_printed",
            "c0", "c_x")
    rows: dict[str, list] = {k: [] for k in cols}
    r_max, r_asc = float(max(settings.radii)), float(min(settings.radii))
    with jax.enable_x64(True):
        x = np.asarray(unit_scale_input(jax.random.fold_in(key, 7), d, dtype=jnp.float64))
        c_x = float(np.max(np.abs(x)))
        for L, m, s, models, p0, points, c0 in _ball_networks(settings, key, "App. F.4"):
            p0 = _tree_np(p0)
            start = next(_tree_np(p) for r, p in points if r == r_asc)
            base = [("W₀", 0, 0.0, p0)] + [("random", 0, r, _tree_np(p)) for r, p in points if r > 0]
            base.append(("first layer", 0, r_max, _first_layer_point(p0, x, r_max)))
            for a in settings.activations:
                model, act = models[a], get_activation(a)
                lip, beta, sigma0 = float(act.lipschitz), float(act.smoothness), sigma_at_zero(a)
                bp0 = base_pass(model, p0, x)
                b0_inf = np.array([np.abs(b).max() for b in bp0.b])
                pts = list(base)
                if math.isfinite(beta):  # the first layer (the end of the induction) and the last (its start)
                    for layer, norm in dict.fromkeys([(1, "two"), (1, "inf"), (L, "two")]):
                        p_best, _ = ascend_backward_vector(model, p0, x, start, layer=layer, norm=norm, steps=steps)
                        pts.append((BALL_POINTS[3 if norm == "two" else 4], layer, r_asc, p_best))
                for name, target, r, p in pts:
                    bp = base_pass(model, p, x)
                    f5 = lemma_f5_bounds(L, m, c0, r, lip)
                    ind = (eq_85_87_bounds(L, m, c0, r, lip, beta, c_x, sigma0, b0_inf) if math.isfinite(beta)
                           else {"delta": np.full(L, np.nan), "diff": np.full(L, np.nan)})
                    for i in range(L):
                        vals = {"activation": a, "depth": L, "width": m, "seed": s, "point": name, "target": target,
                                "radius": r, "layer": i + 1, "two": float(np.linalg.norm(bp.b[i])),
                                "diff": float(np.linalg.norm(bp.b[i] - bp0.b[i])),
                                "inf": float(np.abs(bp.b[i]).max()), "b0_inf": float(b0_inf[i]),
                                "delta": float(np.linalg.norm(bp.pre[i] - bp0.pre[i])),
                                "sigma_term": float(np.linalg.norm((bp.s1[i] - bp0.s1[i]) * bp0.b[i])),
                                "f5_bound": float(f5[i]), "delta_bound": float(ind["delta"][i]),
                                "diff_bound": float(ind["diff"][i]),
                                "first_step_printed": r * c_x / math.sqrt(d) if i == 0 else math.nan,
                                "c0": c0, "c_x": c_x}
                        for k_, val in vals.items():
                            rows[k_].append(val)
    return {k: np.asarray(v) for k, v in rows.items()}


# ---------------------------------------------------------------------------------------------
# The chapter's tables, figure and the groupings of its checks
# ---------------------------------------------------------------------------------------------


def compression_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """The rows of :func:`compression_check` (network, P, N, reference, compressed, method), 12 digits.

    Raises:
        TypeError: if ``rows`` is not a list of row dicts.
        ValueError: if a row lacks a key of :func:`compression_check`.
    """
    keys = ("network", "P", "N", "reference", "compressed", "method")
    V.records("rows", rows, keys)
    return show([{k: r[k] for k in keys} for r in rows],
                caption="‖H‖ at one input: references on all P parameters (dense eigvalsh "
                "in float64 for the small networks, an iterative eigensolver on "
                "Hessian-vector products for the large one) against the N-dimensional "
                "compressed Hessian.", digits=12)


def split_by_precision(rows: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """``(small, large)``: the ``compressed`` and ``reference`` values of :func:`compression_check`, as lists
    in row order, for the float64 networks (dense references) and for the float32 one (iterative
    reference on all P parameters).

    Raises:
        TypeError: if ``rows`` is not a list of row dicts.
        ValueError: if a row lacks ``network``, ``compressed`` or ``reference``.
    """
    V.records("rows", rows, ("network", "compressed", "reference"))

    def pick(tag: str) -> dict[str, list[float]]:
        sel = [r for r in rows if tag in r["network"]]
        return {"compressed": [r["compressed"] for r in sel], "reference": [r["reference"] for r in sel]}

    return pick("float64"), pick("float32")


def structured_norms_table(rows: Sequence[Mapping[str, Any]], width: int) -> Table:
    """The rows of :func:`structured_norms_check` (at ``width``): closed form against the autodiff
    reference, 12 digits; the first layer of the ResNet (the same as the MLP's) is left out.

    Raises:
        TypeError: if ``rows`` is not a list of row dicts or ``width`` not an integer.
        ValueError: if a row lacks a key of :func:`structured_norms_check` or ``width`` < 1.
    """
    V.records("rows", rows, ("model", "layer", "quantity", "formula", "reference"))
    width = V.positive_int("width", width)
    return show([{"model": r["model"], "layer": r["layer"], "quantity": r["quantity"], "closed form": r["formula"],
                  "autodiff + enumeration": r["reference"]}
                 for r in rows if r["layer"] >= 2 or r["model"] == "MLP"],
                caption=f"Closed forms of the layer norms against autodiff tensors (float64, width {width}; "
                "(2,2,1)-norms by exact sign-vector enumeration).", digits=12)


LAYER_NORM_EQUATIONS: dict[str, str] = {
    "‖∂α/∂α⁻‖": "Eq. 69",
    "‖∂α/∂W‖": "Eq. 71",
    "‖∂²α/∂α⁻²‖₂₂₁": "Eq. 73",
    "‖∂²α/∂α⁻∂W‖₂₂₁": "Eq. 74",
    "‖∂²α/∂W²‖₂₂₁": "Eq. 75",
}
"""The paper's equation (Liu–Zhu–Belkin 2020, App. F) of each quantity of a fully connected layer; the
residual layer's closed forms are Eq. 101."""


def layer_norm_groups(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, list[float], list[float]]]:
    """The rows of :func:`structured_norms_check` grouped by the paper's equation, one check each:
    ``(model, equation, formulas, references)`` for every MLP quantity of :data:`LAYER_NORM_EQUATIONS`
    (in that order), then the ResNet's rows (all quantities, Eq. 101).  Only rows whose reference
    :func:`ntkbook.norm_221` certified exact.

    Raises:
        TypeError: if ``rows`` is not a list of row dicts.
        ValueError: if a row lacks a key of :func:`structured_norms_check`.
    """
    V.records("rows", rows, ("model", "quantity", "formula", "reference", "exact"))
    groups = [("MLP", q, e) for q, e in LAYER_NORM_EQUATIONS.items()] + [("ResNet", None, "Eq. 101")]
    out = []
    for model, quantity, eq in groups:
        sel = [r for r in rows if r["model"] == model and quantity in (None, r["quantity"]) and r["exact"]]
        out.append((model, eq, [r["formula"] for r in sel], [r["reference"] for r in sel]))
    return out


PROP_3_1_FACTORS: dict[str, str] = {
    "jw1": "‖J_w⁽¹⁾‖",
    "tww1": "‖T_ww⁽¹⁾‖₂₂₁",
    "taa2": "‖T_αα⁽²⁾‖₂₂₁",
    "taw2": "‖T_αw⁽²⁾‖₂₂₁",
    "tww2": "‖T_ww⁽²⁾‖₂₂₁",
    "b_two2": "‖b⁽²⁾‖₂",
    "b_inf1": "‖b⁽¹⁾‖∞",
    "b_inf2": "‖b⁽²⁾‖∞",
    "eq_17": "Eq. 17 bound",
    "blockwise": "blockwise bound",
    "hessian": "‖H‖",
}
"""Column of :func:`proposition_3_1` → the factor of Eq. (17) it holds (and the two bounds and ‖H‖)."""

PROP_3_1_ORDERS: tuple[tuple[str, str, str, str], ...] = (
    *((k, PROP_3_1_FACTORS[k], "constant", "Prop. 3.1") for k in ("jw1", "tww1", "taa2", "taw2", "tww2")),
    ("b_two2", PROP_3_1_FACTORS["b_two2"], "constant", "Sec. 3.2"),
    ("kernel", "K(x,x)", "constant", "Sec. 3.2"),
    ("b_inf1", PROP_3_1_FACTORS["b_inf1"], "decay", "Lemma F.6"),
    ("b_inf2", PROP_3_1_FACTORS["b_inf2"], "decay", "Lemma F.6"),
    *((k, PROP_3_1_FACTORS[k], "decay", "Prop. 3.1") for k in ("eq_17", "blockwise", "hessian")),
)
"""The order of every quantity of :func:`proposition_3_1` in the width, ``(column, name, expect, where)``:
the (2,2,1)-norms, the first-layer Jacobian, ‖b⁽²⁾‖₂ and the kernel are Θ(1) (Prop. 3.1, Sec. 3.2); the
∞-norms of the backward vectors (Lemma F.6, per layer at W₀), the two bounds and ‖H‖ decay."""


def proposition_3_1_table(p31: Mapping[str, np.ndarray], settings: Prop31) -> Table:
    """Per width of :func:`proposition_3_1`: the median over initializations of every factor of Eq. (17)
    (:data:`PROP_3_1_FACTORS`).

    Raises:
        TypeError: if ``p31`` is not a mapping or ``settings`` not a ``Prop31``.
        ValueError: if ``p31`` lacks a column of :func:`proposition_3_1`.
    """
    V.instance("settings", settings, Prop31)
    V.mapping("p31", p31, ("width", *PROP_3_1_FACTORS))
    widths = np.unique(p31["width"])
    data = {"width m": widths, **{label: [np.median(p31[k][p31["width"] == w]) for w in widths]
                                  for k, label in PROP_3_1_FACTORS.items()}}
    return show(data, caption=f"Median over {settings.seeds} initializations of every factor of "
                f"Eq. (17), tanh, d = {settings.input_dim}.")


def proposition_3_1_fits_table(p31: Mapping[str, np.ndarray]) -> Table:
    """The fitted exponent in the width of every quantity of :data:`PROP_3_1_ORDERS` next to the window
    of its order claim (:func:`ntkbook.tables.order_fit`).

    Raises:
        TypeError: if ``p31`` is not a mapping.
        ValueError: if it lacks a column of :data:`PROP_3_1_ORDERS`.
    """
    V.mapping("p31", p31, ("width", *(k for k, *_ in PROP_3_1_ORDERS)))
    return show([{"quantity": name, **order_fit(p31["width"], p31[k], expect)}
                 for k, name, expect, _ in PROP_3_1_ORDERS],
                caption="Log–log slopes against the width: O(1) factors (exponent 0) and "
                "Õ(1/√m) ones (exponent −1/2); the windows are explained below.")


def proposition_3_1_figure(p31: Mapping[str, np.ndarray]) -> Figure:
    """The factors of Eq. (17) of :func:`proposition_3_1` against the width.  Left: medians of the Θ(1)
    factors; right: the decaying ones, the two bounds and ‖H‖ on log–log axes with their fitted power
    laws (:func:`ntkbook.plotting.power_law`) and the slope −1/2 drawn at Eq. 17.  Returns the figure.

    Raises:
        TypeError: if ``p31`` is not a mapping.
        ValueError: if it lacks a column of :func:`proposition_3_1`.
    """
    V.mapping("p31", p31, ("width", *PROP_3_1_FACTORS))
    widths = np.unique(p31["width"])
    fig, (ax_o, ax_s) = plotting.subplots(2, width=5.0, height=4.0)
    for k, color in zip(("jw1", "tww1", "taa2", "taw2", "tww2", "b_two2"), plotting.PALETTE, strict=False):
        med = [np.median(p31[k][p31["width"] == w]) for w in widths]
        ax_o.plot(widths, med, "o-", color=color, label=PROP_3_1_FACTORS[k])
    ax_o.set_xscale("log")
    ax_o.set_yscale("log")
    ax_o.set_xlabel("width $m$")
    ax_o.set_ylabel("factor")
    ax_o.legend(fontsize=8)
    for k, color in zip(("hessian", "blockwise", "eq_17", "b_inf1", "b_inf2"), plotting.PALETTE, strict=False):
        plotting.power_law(ax_s, p31["width"], p31[k], label=PROP_3_1_FACTORS[k], color=color,
                           reference_slope=-0.5 if k == "eq_17" else None)
    ax_s.set_xlabel("width $m$")
    ax_s.set_ylabel("value")
    ax_s.legend(fontsize=8)
    fig.tight_layout()
    return fig


def theorem_3_1_table(t31: Mapping[str, np.ndarray], settings: Thm31) -> Table:
    """Per depth of :func:`theorem_3_1`: samples, the range of ‖H‖, the largest ratio of ‖H‖ to each of the
    three bounds (blockwise, Lemma E.1, Theorem 3.1) and the medians of 𝖫_φ and C₁.

    Raises:
        TypeError: if ``t31`` is not a mapping or ``settings`` not a ``Thm31``.
        ValueError: if ``t31`` lacks a column of :func:`theorem_3_1`.
    """
    V.instance("settings", settings, Thm31)
    V.mapping("t31", t31, ("depth", "hessian", "blockwise", "lemma_e1", "theorem_3_1", "L_phi", "C1"))
    rows = []
    for depth in settings.depths:
        sel = t31["depth"] == depth
        rows.append({"L": depth, "samples": int(sel.sum()),
                     "‖H‖ range": f"{t31['hessian'][sel].min():.3g}–{t31['hessian'][sel].max():.3g}",
                     "max ‖H‖/blockwise": (t31["hessian"] / t31["blockwise"])[sel].max(),
                     "max ‖H‖/Lemma E.1": (t31["hessian"] / t31["lemma_e1"])[sel].max(),
                     "max ‖H‖/Thm 3.1": (t31["hessian"] / t31["theorem_3_1"])[sel].max(),
                     "L_φ (median)": np.median(t31["L_phi"][sel]), "C₁ (median)": np.median(t31["C1"][sel])})
    return show(rows, caption=f"Theorem 3.1 at W₀ and on spheres of radius {settings.radii}, "
                f"widths {settings.widths}, {settings.seeds} initialization(s) each.")


def hidden_layer_table(f3: Mapping[str, np.ndarray], settings: HiddenLayers) -> Table:
    """:func:`hidden_layer_summary` of :func:`hidden_layer_norms`, with the sizes in the caption.

    Raises:
        TypeError: if ``f3`` is not a mapping or ``settings`` not a ``HiddenLayers``.
    """
    V.instance("settings", settings, HiddenLayers)
    V.mapping("f3", f3)
    return show(hidden_layer_summary(f3),
                caption=f"Lemma F.3 at W₀ and on spheres of radius {settings.radii}: L ∈ {settings.depths}, "
                f"m ∈ {settings.widths}, {settings.seeds} seed(s). Ratios ≤ 1 mean the bound holds; x = 0 is "
                "the counterexample (softplus).")


def activation_tail_table(f4: Mapping[str, np.ndarray]) -> Table:
    """:func:`activation_tail_summary` of :func:`activation_tails`.

    Raises:
        TypeError: if ``f4`` is not a mapping.
    """
    V.mapping("f4", f4)
    return show(activation_tail_summary(f4),
                caption="Lemma F.4 at W₀: every hidden layer of every network. p_l is the exact conditional "
                "probability that one unit exceeds ln m + |σ(0)|; bound = 2exp(−ln²m/(2𝖫_σ²s_l²)), the proof's.")


def backward_vector_networks(rows: Mapping[str, np.ndarray], activation: str) -> dict[str, np.ndarray]:
    """One row per network (L, m, seed) of one activation of :func:`backward_vectors_in_ball`, with the quantities
    of the chapter's claims on App. F.4 (each the largest over the network's points of the ball, which are not
    independent samples):

    * ``b0_two_1`` — ‖b₀⁽¹⁾‖₂ at W₀ (the longest product of Eq. 79; Eq. 81);
    * ``diff_<l>`` — ‖b⁽ˡ⁾(W) − b₀⁽ˡ⁾‖₂ at the end point of the ascent of that norm (a lower estimate of its
      supremum over the ascent's sphere, Eq. 82; NaN for l > L or without an ascent), and ``diff_random_<l>``
      the largest over the random points of the same sphere;
    * ``inf_ball`` — max over the points of ‖b⁽¹⁾(W)‖∞, the ∞-norm ascent included (Eq. 89), ``inf_0`` =
      ‖b₀⁽¹⁾‖∞;
    * ``sigma_first`` — max over the layers of ‖(Σ'⁽ˡ⁾ − Σ'₀⁽ˡ⁾)b₀⁽ˡ⁾‖ at the ``first layer`` point (Eq. 86), and
      ``delta_first`` of ‖α̃⁽ˡ⁾ − α̃₀⁽ˡ⁾‖ there (Eq. 85).

    Raises:
        TypeError: if ``rows`` is not a mapping.
        ValueError: if it lacks a column of :func:`backward_vectors_in_ball` or has no row of ``activation``.
    """
    V.mapping("rows", rows, ("activation", "depth", "width", "seed", "point", "layer", "two", "diff", "inf",
                             "sigma_term", "delta"))
    act = np.asarray(rows["activation"])
    if not np.any(act == activation):
        raise ValueError(f"activation: no rows of {activation!r}; the rows have {sorted(set(act.tolist()))}")
    sel = act == activation
    r = {k: np.asarray(v)[sel] for k, v in rows.items()}
    ids = sorted({(int(L), int(m), int(s)) for L, m, s in zip(r["depth"], r["width"], r["seed"], strict=True)})
    depth_max = max(L for L, _, _ in ids)
    out: dict[str, list] = {k: [] for k in ("depth", "width", "seed", "b0_two_1", "inf_ball", "inf_0",
                                            "sigma_first", "delta_first")}
    for layer in range(1, depth_max + 1):
        out[f"diff_{layer}"], out[f"diff_random_{layer}"] = [], []
    for L, m, s in ids:
        net = (r["depth"] == L) & (r["width"] == m) & (r["seed"] == s)
        at0, first, rand = (net & (r["point"] == p) for p in ("W₀", "first layer", "random"))
        for k_, val in (("depth", L), ("width", m), ("seed", s),
                        ("b0_two_1", float(r["two"][at0 & (r["layer"] == 1)][0])),
                        ("inf_ball", float(r["inf"][net & (r["layer"] == 1)].max())),
                        ("inf_0", float(r["inf"][at0 & (r["layer"] == 1)][0])),
                        ("sigma_first", float(r["sigma_term"][first].max())),
                        ("delta_first", float(r["delta"][first].max()))):
            out[k_].append(val)
        asc = net & (r["point"] == "ascent ‖b − b₀‖₂")
        r_asc = float(r["radius"][asc].max()) if asc.any() else float(r["radius"][rand].min())
        for layer in range(1, depth_max + 1):
            here = r["layer"] == layer
            hit = asc & here & (r["target"] == layer)
            out[f"diff_{layer}"].append(float(r["diff"][hit][0]) if hit.any() else math.nan)
            same = rand & here & (r["radius"] == r_asc)
            out[f"diff_random_{layer}"].append(float(r["diff"][same].max()) if same.any() else math.nan)
    return {k: np.asarray(v) for k, v in out.items()}


def backward_vector_table(rows: Mapping[str, np.ndarray], settings: HiddenLayers) -> Table:
    """Per (activation, L, m) of :func:`backward_vectors_in_ball`, largest over the seeds: ‖b₀⁽¹⁾‖₂; the largest
    ratio ‖b⁽ˡ⁾‖/Eq. 80; ‖b⁽¹⁾ − b₀⁽¹⁾‖₂ at the random points of the ascent's sphere and at the ascent's end point
    (and the latter times √m/R); the largest ratio to the chained bound of Eq. 87 over the layers l < L (at l = L
    it is attained); ‖b₀⁽¹⁾‖∞ and the largest ‖b⁽¹⁾‖∞ found in the ball; the Eq. 86 term at the first-layer point.

    Raises:
        TypeError: if ``rows`` is not a mapping or ``settings`` not a ``HiddenLayers``.
        ValueError: if ``rows`` lacks a column of :func:`backward_vectors_in_ball`.
    """
    V.instance("settings", settings, HiddenLayers)
    V.mapping("rows", rows, ("activation", "depth", "width", "seed", "point", "target", "layer", "radius", "two",
                             "diff", "inf", "f5_bound", "diff_bound", "sigma_term", "delta"))
    act = np.asarray(rows["activation"])
    with np.errstate(invalid="ignore", divide="ignore"):
        f5_ratio = rows["two"] / rows["f5_bound"]
        e87_ratio = np.where((rows["radius"] > 0) & (rows["layer"] < rows["depth"]), rows["diff"] / rows["diff_bound"],
                             np.nan)
    r_asc = float(min(settings.radii))
    out = []
    for a in dict.fromkeys(act.tolist()):
        nets = backward_vector_networks(rows, a)
        for L in settings.depths:
            for m in settings.widths:
                net = (act == a) & (rows["depth"] == L) & (rows["width"] == m)
                sel = (nets["depth"] == L) & (nets["width"] == m)
                if not sel.any():
                    continue
                best = float(nets["diff_1"][sel].max())
                e87 = e87_ratio[net]
                out.append({"activation": a, "L": L, "m": m, "‖b₀⁽¹⁾‖₂": float(nets["b0_two_1"][sel].max()),
                            "max ‖b⁽ˡ⁾‖₂/Eq. 80": float(f5_ratio[net].max()),
                            "‖b⁽¹⁾−b₀⁽¹⁾‖₂: random": float(nets["diff_random_1"][sel].max()),
                            "ascent": best, "ascent·√m/R": best * math.sqrt(m) / r_asc,
                            "max_{l<L} ratio to Eq. 87": float(np.nanmax(e87)) if np.any(np.isfinite(e87))
                            else math.nan,
                            "‖b₀⁽¹⁾‖∞": float(nets["inf_0"][sel].max()),
                            "‖b⁽¹⁾‖∞ in the ball": float(nets["inf_ball"][sel].max()),
                            "Eq. 86 term, first-layer point": float(nets["sigma_first"][sel].max())})
    return show(out, caption=f"The backward vectors b⁽ˡ⁾ = ∂f/∂α⁽ˡ⁾ at W₀ and on spheres of radius {settings.radii} "
                f"(random points on each, the ascents on R = {r_asc:g}, the first-layer point on the largest): "
                f"L ∈ {settings.depths}, m ∈ {settings.widths}, {settings.seeds} seed(s), largest over the seeds. "
                "No ascent where β_σ = ∞ (ReLU).")


def backward_vector_figure(rows: Mapping[str, np.ndarray], activation: str) -> Figure:
    """Eq. 82 for one activation of :func:`backward_vectors_in_ball` (:func:`backward_vector_networks`): per
    network, ‖b⁽¹⁾(W) − b₀⁽¹⁾‖₂ at the random points of the ascent's sphere (open markers) and at the ascent's end
    point (filled), one colour per depth, log–log against the width, with the slopes −1/2 (through the ascent's
    values) and −1 (through the random points') drawn.  Returns the figure.

    Raises:
        TypeError: if ``rows`` is not a mapping.
        ValueError: if it lacks a column or a row of ``activation``, or has no ascent for it.
    """
    nets = backward_vector_networks(rows, activation)
    if not np.all(np.isfinite(nets["diff_1"])):
        raise ValueError(f"rows: no ascent for {activation!r} (β_σ = ∞?)")
    fig, ax = plotting.subplots(width=5.4, height=3.9)
    w_all = np.unique(nets["width"]).astype(np.float64)
    small = nets["width"] == w_all.min()
    for L, color in zip(sorted({int(L) for L in nets["depth"]}), plotting.PALETTE, strict=False):
        sel = nets["depth"] == L
        ax.plot(nets["width"][sel], nets["diff_1"][sel], "o", color=color, label=f"ascent, L = {L}")
        ax.plot(nets["width"][sel], nets["diff_random_1"][sel], "o", mfc="none", color=color,
                label=f"random points, L = {L}")
    grid = np.geomspace(w_all.min(), w_all.max(), 20)
    for name, slope, style in (("diff_1", -0.5, ":"), ("diff_random_1", -1.0, "--")):
        ax.plot(grid, float(np.median(nets[name][small])) * (grid / grid[0]) ** slope, style, color="0.4",
                label=f"slope {slope:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("width $m$")
    plotting.label_ticks(ax, w_all)
    ax.set_ylabel(r"$\|b^{(1)}(W)-b_0^{(1)}\|_2$")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


LEMMA_3_1_ORDERS: dict[str, str] = {"Q_inf": "decay", "Q_L": "constant", "Q_221": "constant", "blockwise": "decay"}
"""The order in the width of each quantity of Lemma 3.1 (Q_∞ = Õ(1/√m); Q_L, Q₂,₂,₁ = O(1), Eq. 23) and of the
blockwise bound (shown, not asserted)."""


def lemma_3_1_table(worst: Mapping[str, np.ndarray], depths: Sequence[int]) -> Table:
    """Per depth and quantity of :data:`LEMMA_3_1_ORDERS`: the fitted exponent in the width of
    :func:`worst_per_network` (one value per network) next to the order claim's window.

    Raises:
        TypeError: if ``worst`` is not a mapping or ``depths`` not a sequence of integers.
        ValueError: if ``worst`` lacks a column of :data:`LEMMA_3_1_ORDERS` (or ``depth``, ``width``).
    """
    V.mapping("worst", worst, ("depth", "width", *LEMMA_3_1_ORDERS))
    depths = V.int_tuple("depths", depths)
    rows = []
    for depth in depths:
        sel = worst["depth"] == depth
        for q, expect in LEMMA_3_1_ORDERS.items():
            cells = order_fit(worst["width"][sel], worst[q][sel], expect)
            rows.append({"L": depth, "quantity": q, "predicted": cells.pop("predicted exponent"), **cells})
    return show(rows, caption="Exponents of the quantities of Lemma 3.1 (and of the blockwise bound) against the "
                "width; each network contributes its largest value over the sampled points (W₀ and the spheres).")


__all__ = [
    "ASCENT_RTOL",
    "BACKWARD_ASCENT_STEPS",
    "BALL_POINTS",
    "LAYER_NORM_EQUATIONS",
    "LEMMA_3_1_ORDERS",
    "PROP_3_1_FACTORS",
    "PROP_3_1_ORDERS",
    "activation_tail_probability",
    "activation_tail_summary",
    "activation_tail_table",
    "activation_tails",
    "ascend_backward_vector",
    "backward_vector_figure",
    "backward_vector_gradient",
    "backward_vector_networks",
    "backward_vector_table",
    "backward_vectors",
    "backward_vectors_in_ball",
    "block_bounds",
    "compression_check",
    "compression_table",
    "eq_17_terms",
    "eq_85_87_bounds",
    "exceedance_counts",
    "hessian_bounds",
    "hidden_layer_norms",
    "hidden_layer_summary",
    "hidden_layer_table",
    "layer_norm_groups",
    "lemma_3_1_table",
    "lemma_f5_bounds",
    "proposition_3_1",
    "proposition_3_1_figure",
    "proposition_3_1_fits_table",
    "proposition_3_1_table",
    "split_by_precision",
    "structured_norms_check",
    "structured_norms_table",
    "theorem_3_1",
    "theorem_3_1_quantities",
    "theorem_3_1_table",
    "worst_per_network",
]
