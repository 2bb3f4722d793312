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
from ..data.sphere import unit_scale_input
from ..eigen import extreme_eigenpairs
from ..hessian import at_input, dense_spectral_norm, hessian_spectral_norm
from ..hessian_compressed import base_pass, compressed_dimension, kernel_at_input
from ..layer_norms import a_priori_layer_jacobian, largest_singular_value, layer_factors, layer_tensors
from ..models import MLP, mlp
from ..models.resnet import resnet
from ..norms import norm_221
from ..progress import progress
from ..pytree import flat_spec, point_on_sphere
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


def lemma_f3_bounds(depth: int, width: int, c0: float, radius: float, lipschitz: float, c_x: float,
                    sigma0: float) -> dict[str, np.ndarray]:
    """The bounds on ‖α⁽ˡ⁾(W)‖, l = 1..depth, of Lemma F.3 (Eq. 66), as printed and corrected, shape (depth,).

    With q = c₀ + R/√m and geometric sums S_l = Σ_{i=1}^{l} (𝖫_σq)^{i−1}:

    * ``printed``   = 𝖫_σ^l q^l √m C_x + S_l·σ(0)        (Eq. 66 and its proof, Eq. 114–115);
    * ``corrected`` = 𝖫_σ^l q^l √m C_x + S_l·√m|σ(0)|    (‖σ(z)‖ ≤ 𝖫_σ‖z‖ + √m|σ(0)| for z ∈ ℝᵐ).
    """
    layers = np.arange(1, int(depth) + 1, dtype=np.float64)
    q = float(c0) + float(radius) / math.sqrt(width)
    first = (lipschitz * q) ** layers * math.sqrt(width) * float(c_x)
    sums = np.cumsum((lipschitz * q) ** (layers - 1))
    return {"printed": first + sums * float(sigma0), "corrected": first + sums * math.sqrt(width) * abs(sigma0)}


def sigma_at_zero(activation: str) -> float:
    """|σ(0)| from the registry's NumPy σ (the ``phi_at_zero`` of :func:`ntkbook.activations.constants`, without
    computing the Hermite constants there)."""
    from ..activations import get_activation

    return abs(float(get_activation(activation).numpy(np.zeros(1), 0)[0]))


def _hidden_activations(model: MLP, params: PyTree, x: Any) -> list[np.ndarray]:
    """α⁽¹⁾, …, α⁽ᴸ⁾ at one input (float64, from the NumPy base pass of :mod:`ntkbook.hessian_compressed`)."""
    bp = base_pass(model, params, x)
    return [*bp.inputs[1:], bp.last]


def hidden_layer_norms(settings: HiddenLayers, key: Array) -> dict[str, np.ndarray]:
    """Lemma F.3: ‖α⁽ˡ⁾(W)‖ against its bound, printed and corrected, at W₀ and on spheres ‖W − W₀‖ = R.

    Settings: ``activations``, ``depths``, ``widths``, ``seeds``, ``input_dim``, ``radii``, ``sphere_points``.
    Float64 MLPs (:func:`ntkbook.models.dense.mlp`, NTK parameterization, v trained), input x with ‖x‖ = √d
    (:func:`ntkbook.data.sphere.unit_scale_input`) and C_x = max_i|x_i|; Assumption F.1 holds with the measured
    c₀ = max_{l ≤ L+1} ‖W₀⁽ˡ⁾‖/√m (v included).  Rows ``input`` = "x": every (activation, L, m, seed, point,
    layer); rows ``input`` = "0": the input x = 0 (C_x = 0) at W₀, where α⁽¹⁾ = σ(0)𝟙 and ‖α⁽¹⁾‖ = √m|σ(0)|
    (only for activations with σ(0) ≠ 0).  The weights of one (L, m, seed) are shared by all activations.
    Returns equal-length arrays ``activation``, ``input``, ``depth``, ``width``, ``seed``, ``radius``, ``layer``,
    ``norm`` (‖α⁽ˡ⁾‖), ``printed``, ``corrected`` (:func:`lemma_f3_bounds`), ``c0``, ``c_x``.
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
        pieces = [(L, m, s) for L in settings.depths for m in settings.widths for s in range(settings.seeds)]
        for L, m, s in progress(pieces, desc="Lemma F.3", total=len(pieces)):
            k = jax.random.fold_in(key, 100_000 * L + 1000 * s + m)
            # the weights do not depend on the activation: one draw (and one set of ball points) serves all
            models = {a: mlp(k, (m,) * L, input_dim=d, activation=a, dtype=jnp.float64) for a in settings.activations}
            p0 = models[settings.activations[0]][1]
            mats = [np.asarray(layer["W"]) for layer in p0["layers"]] + [np.asarray(p0["v"])]
            c0 = max(largest_singular_value(w) for w in mats) / math.sqrt(m)
            points = [(0.0, p0)] + [(float(r), point_on_sphere(jax.random.fold_in(k, 31 * j + i + 1), p0, float(r)))
                                    for j, r in enumerate(settings.radii) for i in range(settings.sphere_points)]
            for a in settings.activations:
                model = models[a][0]
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
    "LAYER_NORM_EQUATIONS",
    "LEMMA_3_1_ORDERS",
    "PROP_3_1_FACTORS",
    "PROP_3_1_ORDERS",
    "activation_tail_probability",
    "activation_tail_summary",
    "activation_tail_table",
    "activation_tails",
    "block_bounds",
    "compression_check",
    "compression_table",
    "eq_17_terms",
    "exceedance_counts",
    "hessian_bounds",
    "hidden_layer_norms",
    "hidden_layer_summary",
    "hidden_layer_table",
    "layer_norm_groups",
    "lemma_3_1_table",
    "lemma_f3_bounds",
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
