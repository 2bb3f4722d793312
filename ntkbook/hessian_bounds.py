"""The Hessian and layer bounds of Liu, Zhu & Belkin (2020): the a-priori bounds its proofs chain together.

* :func:`lemma_f3_bounds` — ‖α⁽ˡ⁾(W)‖ in a ball, Lemma F.3 (Eq. 66) as printed and corrected; residual layers
  (Lemma G.5) with ``skip=True``;
* :func:`a_priori_layer_jacobian` — ‖∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾‖ at a point of the ball from the initialization (Lemma F.2);
* :func:`block_bounds`, :func:`eq_17_terms`, :func:`theorem_3_1` — bounds on ‖H‖ from the layer factors: the
  chain-rule bound of every Hessian block (App. E), Prop. 3.1 (Eq. 17) and Thm 3.1 with Q_∞, Q_L, Q₂,₂,₁;
* :func:`lemma_f5_bounds`, :func:`eq_85_87_bounds` — the backward vectors b⁽ˡ⁾ = ∂f/∂α⁽ˡ⁾ in the ball (Lemma F.5,
  Eq. 80–81) and the induction of App. F.4 made explicit (Eq. 83–87).

The layer factors (exact norms of every layer's derivatives) are :func:`ntkbook.layer_norms.layer_factors`, a dict
of arrays over the layers: ``jw`` ‖J_w⁽ˡ⁾‖, ``ja`` ‖J_α⁽ˡ⁾‖, ``tww``, ``taw``, ``taa`` the (2,2,1)-norms of
T_ww⁽ˡ⁾, T_αw⁽ˡ⁾, T_αα⁽ˡ⁾, ``b_inf`` ‖b⁽ˡ⁾‖∞ and ``width``; ‖H‖ itself is :func:`ntkbook.hessian_spectral_norm`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import _validation as V
from .layer_norms import largest_singular_value
from .models.dense import MLP
from .models.resnet import ResNet

PyTree = Any


def _reach(f: Mapping[str, np.ndarray], l1: int, k: int) -> float:
    """A(l₁, k) = ‖J_w⁽ˡ¹⁾‖ Π_{l₁<l'≤k} ‖J_α⁽ˡ'⁾‖ ≥ ‖∂α⁽ᵏ⁾/∂W⁽ˡ¹⁾‖ (1-based layers, k ≥ l₁)."""
    return float(f["jw"][l1 - 1] * np.prod(f["ja"][l1:k]))


def block_bounds(factors: Mapping[str, np.ndarray], *, include_v: bool) -> np.ndarray:
    """Bounds β(l₁, l₂) ≥ ‖H⁽ˡ¹,ˡ²⁾‖ on every block of the Hessian of f at one input (proof of Thm 3.1, App. E).

    By the chain rule (Eq. 59), for hidden layers 1 ≤ l₁ ≤ l₂ ≤ L, with A(l, k) = ‖J_w⁽ˡ⁾‖Π_{l<l'≤k}‖J_α⁽ˡ'⁾‖ and
    b_l = ‖b⁽ˡ⁾‖∞ = ‖∂f/∂α⁽ˡ⁾‖∞:

        β = 1{l₁=l₂}‖T_ww⁽ˡ¹⁾‖b_{l₁} + 1{l₁<l₂}A(l₁, l₂−1)‖T_αw⁽ˡ²⁾‖b_{l₂}
            + Σ_{l=l₂+1}^{L} A(l₁, l−1)A(l₂, l−1)‖T_αα⁽ˡ⁾‖b_l,

    and with ``include_v`` (v trained) the output-layer blocks β(l, L+1) = A(l, L)/√m_L (Eq. 61–62),
    β(L+1, L+1) = 0.  Returns the symmetric (L+1) × (L+1) matrix (L × L without v).  Lemma E.1 is
    ‖H‖ ≤ Σ_{l₁,l₂} β(l₁, l₂) (``β.sum()``: every block, H⁽ˡ,ᴸ⁺¹⁾ and H⁽ᴸ⁺¹,ˡ⁾ both); the spectral norm ‖β‖₂ is a
    tighter bound (‖H‖ ≤ ‖(‖H⁽ⁱ,ʲ⁾‖)_ij‖₂ for any block matrix).
    """
    V.mapping("factors", factors, ("jw", "ja", "tww", "taw", "taa", "b_inf", "width"))
    f, depth = factors, len(factors["jw"])
    beta = np.zeros((depth + include_v,) * 2)
    for l1 in range(1, depth + 1):
        for l2 in range(l1, depth + 1):
            val = (f["tww"][l1 - 1] * f["b_inf"][l1 - 1] if l1 == l2
                   else _reach(f, l1, l2 - 1) * f["taw"][l2 - 1] * f["b_inf"][l2 - 1])
            val += sum(_reach(f, l1, k - 1) * _reach(f, l2, k - 1) * f["taa"][k - 1] * f["b_inf"][k - 1]
                       for k in range(l2 + 1, depth + 1))
            beta[l1 - 1, l2 - 1] = beta[l2 - 1, l1 - 1] = val
        if include_v:
            beta[l1 - 1, depth] = beta[depth, l1 - 1] = _reach(f, l1, depth) / math.sqrt(f["width"][-1])
    return beta


def eq_17_terms(factors: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The four terms of Eq. 17 (Prop. 3.1: L = 2, v fixed) and their sum ``eq_17``: ‖J_w⁽¹⁾‖²‖T_αα⁽²⁾‖b₂,
    2‖J_w⁽¹⁾‖‖T_αw⁽²⁾‖b₂, ‖T_ww⁽²⁾‖b₂, ‖T_ww⁽¹⁾‖b₁ (the sum of :func:`block_bounds`, off-diagonal block twice)."""
    V.mapping("factors", factors, ("jw", "tww", "taw", "taa", "b_inf"))
    if len(factors["jw"]) != 2:
        raise ValueError("Eq. 17 is the two-hidden-layer bound: factors of a network with L = 2 needed")
    jw1, (b1, b2) = factors["jw"][0], factors["b_inf"]
    terms = {"J_w1^2 T_aa2 b2": jw1**2 * factors["taa"][1] * b2, "2 J_w1 T_aw2 b2": 2 * jw1 * factors["taw"][1] * b2,
             "T_ww2 b2": factors["tww"][1] * b2, "T_ww1 b1": factors["tww"][0] * b1}
    terms = {k: float(v) for k, v in terms.items()}
    return {**terms, "eq_17": sum(terms.values())}


def theorem_3_1(factors: Mapping[str, np.ndarray], *, include_v: bool) -> dict[str, float]:
    """Thm 3.1: ‖H‖ ≤ C₁Q₂,₂,₁Q_∞ + C₂Q_L/√m (the second term only with v trained), and its quantities.

    * Q_∞ = max_l ‖b⁽ˡ⁾‖∞, Q_L = max_l ‖J_w⁽ˡ⁾‖ (Eq. 20–21);
    * Q₂,₂,₁ = max{‖T_ww⁽ˡ¹⁾‖, ‖J_w⁽ˡ¹⁾‖‖T_αw⁽ˡ²⁾‖ (l₁ < l₂), ‖J_w⁽ˡ¹⁾‖‖J_w⁽ˡ²⁾‖‖T_αα⁽ˡ³⁾‖ (l₁ ≤ l₂ < l₃)}: Eq. 21
      writes l₁ < l₂ < l₃ for all three, which is empty for L = 2 and misses the diagonal blocks; the proof needs
      these ranges;
    * 𝖫_φ = max(1, max_{l≥2}‖J_α⁽ˡ⁾‖) at this point: the proof bounds products of at most 2L − 4 layer Jacobians by
      𝖫_φ^{2L}, which needs 𝖫_φ ≥ 1;
    * C₁ = L(L²𝖫_φ^{2L} + L𝖫_φ^L + 1), C₂ = L𝖫_φ^L.  Counted by type, the hidden blocks of
      :func:`block_bounds` hold L terms in T_ww (each ≤ Q₂,₂,₁Q_∞), at most L² in T_αw (≤ 𝖫_φ^L Q₂,₂,₁Q_∞) and L³
      in T_αα (≤ 𝖫_φ^{2L} Q₂,₂,₁Q_∞); the output blocks [[0, X], [Xᵀ, 0]] have norm ‖X‖ ≤ Σ_l β(l, L+1) ≤ C₂Q_L/√m.
    """
    V.mapping("factors", factors, ("jw", "ja", "tww", "taw", "taa", "b_inf", "width"))
    f, depth = factors, len(factors["jw"])
    pairs = [f["jw"][a] * f["taw"][b] for a in range(depth) for b in range(a + 1, depth)]
    triples = [f["jw"][a] * f["jw"][b] * f["taa"][c] for a in range(depth) for b in range(a, depth)
               for c in range(b + 1, depth)]
    q = {"Q_inf": float(np.max(f["b_inf"])), "Q_L": float(np.max(f["jw"])),
         "Q_221": float(max([*f["tww"], *pairs, *triples])),
         "L_phi": float(max(1.0, np.max(f["ja"][1:]))) if depth > 1 else 1.0}
    q["C1"] = depth * (depth**2 * q["L_phi"] ** (2 * depth) + depth * q["L_phi"] ** depth + 1)
    q["C2"] = depth * q["L_phi"] ** depth
    second = q["C2"] * q["Q_L"] / math.sqrt(f["width"][-1]) if include_v else 0.0
    return {**q, "bound": q["C1"] * q["Q_221"] * q["Q_inf"] + second}


def lemma_f5_bounds(depth: int, width: int, c0: float, radius: float, lipschitz: float) -> np.ndarray:
    """Lemma F.5 (Eq. 80; Eq. 81 at R = 0): ‖b⁽ˡ⁾(W)‖ ≤ 𝖫_σ^{L−l}(c₀ + R/√m)^{L−l+1}, l = 1..L, shape (L,).

    Proof (App. I.6): ‖b⁽ᴸ⁾‖ = ‖v‖/√m ≤ (c₀√m + R)/√m, and each step back, b⁽ˡ⁻¹⁾ = W⁽ˡ⁾ᵀΣ'⁽ˡ⁾b⁽ˡ⁾/√m (Eq. 79),
    multiplies the norm by at most ‖W⁽ˡ⁾‖‖Σ'⁽ˡ⁾‖/√m ≤ (c₀ + R/√m)𝖫_σ (Lemma F.2).
    """
    depth, width = V.positive_int("depth", depth), V.positive_int("width", width)
    c0, radius = V.positive_float("c0", c0), V.positive_float("radius", radius, allow_zero=True)
    k = depth - np.arange(1, depth + 1, dtype=np.float64)  # L − l
    return V.positive_float("lipschitz", lipschitz) ** k * (c0 + radius / math.sqrt(width)) ** (k + 1)


def eq_85_87_bounds(depth: int, width: int, c0: float, radius: float, lipschitz: float, smoothness: float,
                    c_x: float, sigma0: float, b0_inf: Any) -> dict[str, np.ndarray]:
    """The induction of App. F.4 made explicit, l = 1..L, shape (L,) each (every hidden layer of width m).

    * ``delta`` — Eq. 85, ‖α̃⁽ˡ⁾(W) − α̃⁽ˡ⁾(W₀)‖ ≤ D_l, D_1 = R·C_x, D_l = c₀𝖫_σD_{l−1} + (R/√m)A_{l−1} with A the
      corrected Lemma F.3 bound on ‖α⁽ˡ⁻¹⁾(W)‖ (:func:`lemma_f3_bounds`).  The paper starts from R·C_x/√d, too small
      by √d: ‖ΔW⁽¹⁾x‖/√d ≤ R‖x‖/√d ≤ R·C_x, equal for ΔW⁽¹⁾ = R·u xᵀ/‖x‖ and every |x_i| = C_x;
    * ``diff`` — Eq. 83 and 87, ‖b⁽ˡ⁾(W) − b₀⁽ˡ⁾‖ ≤ E_l, E_L = R/√m and
      E_{l−1} = (R/√m)𝖫_σ^{L−l+1}(c₀ + R/√m)^{L−l+1} + c₀‖b₀⁽ˡ⁾‖∞β_σD_l + c₀𝖫_σE_l: Eq. 84 with Lemma F.5 for
      ‖b⁽ˡ⁾‖ and Eq. 86, ‖(Σ'⁽ˡ⁾ − Σ'₀⁽ˡ⁾)b₀⁽ˡ⁾‖ ≤ ‖b₀⁽ˡ⁾‖∞β_σ‖α̃⁽ˡ⁾(W) − α̃⁽ˡ⁾(W₀)‖.

    ``b0_inf``: the measured ‖b₀⁽ˡ⁾‖∞, shape (L,) — the only random input (Lemma F.6: Õ(1/√m)), so E_l = Õ(R/√m).
    ``smoothness`` β_σ = sup|σ''| must be finite.
    """
    depth, width = V.positive_int("depth", depth), V.positive_int("width", width)
    radius = V.positive_float("radius", radius, allow_zero=True)
    beta = V.positive_float("smoothness", smoothness, allow_zero=True)  # raises for β_σ = ∞ (Eq. 86 needs it)
    b0_inf = V.numpy_array("b0_inf", b0_inf, ndim=1)
    if b0_inf.shape != (depth,):
        raise ValueError(f"b0_inf must have shape ({depth},), got {b0_inf.shape}")
    alpha = lemma_f3_bounds(depth, width, c0, radius, lipschitz, c_x, sigma0)["corrected"]
    step, q = radius / math.sqrt(width), float(c0) + radius / math.sqrt(width)
    d = [radius * float(c_x)]
    for a in alpha[:-1]:
        d.append(c0 * lipschitz * d[-1] + step * a)
    e = [step]
    for i in range(depth - 1, 0, -1):  # 0-based i = layer l; prepends E_{l−1}
        k = depth - i  # L − l + 1
        e.insert(0, step * (lipschitz * q) ** k + c0 * b0_inf[i] * beta * d[i] + c0 * lipschitz * e[0])
    return {"delta": np.asarray(d), "diff": np.asarray(e)}


def lemma_f3_bounds(depth: int, width: int, c0: float, radius: float, lipschitz: float, c_x: float,
                    sigma0: float, *, skip: bool = False) -> dict[str, np.ndarray]:
    """The bounds on ‖α⁽ˡ⁾(W)‖, l = 1..depth, of Lemma F.3 (Eq. 66), as printed and corrected, shape (depth,),
    for every W with ‖W⁽ˡ⁾ − W₀⁽ˡ⁾‖ ≤ R, ‖W₀⁽ˡ⁾‖ ≤ c₀√m and |x_i| ≤ C_x.

    Both are the recursion B₁ = 𝖫_σq√m·C_x + o, B_l = s·B_{l−1} + o with q = c₀ + R/√m (from ‖W⁽ˡ⁾‖ ≤
    c₀√m + R) and s = 𝖫_σq:

    * ``printed``   — o = σ(0): 𝖫_σ^l q^l √m C_x + S_l·σ(0), S_l = Σ_{i=1}^{l}(𝖫_σq)^{i−1} (Eq. 66 and its proof,
      Eq. 114–115);
    * ``corrected`` — o = √m|σ(0)|, from ‖σ(z)‖ ≤ 𝖫_σ‖z‖ + √m|σ(0)| for z ∈ ℝᵐ.

    ``skip=True``: a residual layer α⁽ˡ⁾ = σ(α̃⁽ˡ⁾) + α⁽ˡ⁻¹⁾ for l ≥ 2 (Eq. 97, Lemma G.5), s = 1 + 𝖫_σq.
    The CNN bound of Lemma G.3 is the same recursion with c₀ → √K·c₀ and C_x, σ(0) → √Q·C_x, √Q·σ(0)
    (chapter 3b).
    """
    depth, width = V.positive_int("depth", depth), V.positive_int("width", width)
    q = float(c0) + float(radius) / math.sqrt(width)
    step = (1.0 if skip else 0.0) + lipschitz * q
    first = lipschitz * q * math.sqrt(width) * float(c_x)
    out = {}
    for name, offset in (("printed", float(sigma0)), ("corrected", math.sqrt(width) * abs(float(sigma0)))):
        rows = [first + offset]
        for _ in range(depth - 1):
            rows.append(step * rows[-1] + offset)
        out[name] = np.asarray(rows)
    return out


def a_priori_layer_jacobian(model: MLP | ResNet, params0: PyTree, params: PyTree) -> np.ndarray:
    """Lemma F.2-type bound on ‖∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾‖ at W from the initialization only:
    L_σ(‖W₀⁽ˡ⁾‖ + ‖W⁽ˡ⁾ − W₀⁽ˡ⁾‖_F)/√n_l (+1 for a ResNet layer), l = 2..L (NaN for l = 1).

    It uses ‖diag(σ')W‖ ≤ L_σ‖W‖ and ‖W‖ ≤ ‖W₀‖ + ‖W − W₀‖_F (Eq. 113, Lemma F.2 of Liu–Zhu–Belkin 2020), so it holds
    at every point of the ball ‖W − W₀‖ ≤ R once ‖W − W₀‖_F is replaced by R.
    """
    if getattr(model, "use_bias", False):
        raise ValueError("a_priori_layer_jacobian needs a network without biases")
    out = np.full(model.depth, np.nan)
    for i in range(1, model.depth):
        w0 = np.asarray(params0["layers"][i]["W"], dtype=np.float64)
        dw = np.asarray(params["layers"][i]["W"], dtype=np.float64) - w0
        lip = model.activations[i].lipschitz
        out[i] = lip * (largest_singular_value(w0) + np.linalg.norm(dw)) / math.sqrt(w0.shape[1])
        if isinstance(model, ResNet):
            out[i] += 1.0
    return out


def hidden_norm_bounds(architecture: str, depth: int, width: int, c0: float, radius: float, lipschitz: float,
                       c_x: float, sigma0: float, *, kernel_positions: int = 1,
                       pixels: int = 1) -> dict[str, np.ndarray]:
    """Bounds on ‖α⁽ˡ⁾(W)‖, l = 1..``depth``, of a CNN or a ResNet for ‖W − W₀‖ ≤ R (Lemmas G.3 and G.5 of
    Liu–Zhu–Belkin 2020), when every weight slice has ‖W₀‖ ≤ c₀√m and ``|x_i| ≤ C_x``; shape (depth,) each.

    Every bound is the recursion of :func:`lemma_f3_bounds` (the corrected one), B₁ = a·C_x + o,
    B_l = s·B_{l−1} + o, from ‖σ(z)‖ ≤ 𝖫_σ‖z‖ + √n|σ(0)| for z ∈ ℝⁿ and ‖W‖ ≤ ‖W₀‖ + ‖W − W₀‖_F ≤ c₀√m + R,
    with q = c₀ + R/√m:

    * ``fc`` — Lemma F.3 with the fully connected constants: a = 𝖫_σq√m, s = 𝖫_σq, o = √m|σ(0)|;
    * ``derived`` for ``"cnn"`` (Lemma G.3, convolutions divided by the fan-in √(K m_{l−1})): the K kernel
      slices W^[k] of Eq. 92 enter through Lemma G.1, ‖Σ_k W^[k]α^[k]‖_F ≤ Σ_k ‖W^[k]‖‖α‖_F ≤ (Kc₀√m + √K R)‖α‖_F,
      and the m × Q image has √(Qm) entries: Lemma F.3's bound with c₀ → √K c₀, C_x → √Q C_x, σ(0) → √Q σ(0);
    * ``derived`` for ``"resnet"`` (Lemma G.5, Eq. 97): α⁽ˡ⁾ = σ(α̃⁽ˡ⁾) + α⁽ˡ⁻¹⁾ adds the skip term,
      s = 1 + 𝖫_σq for l ≥ 2 (``lemma_f3_bounds(..., skip=True)``).

    Args:
        architecture: ``"cnn"`` or ``"resnet"``.
        depth, width: L and m.
        c0, radius, lipschitz, c_x, sigma0: c₀ > 0, R ≥ 0, 𝖫_σ > 0, C_x ≥ 0 and σ(0).
        kernel_positions, pixels: K and Q (CNN only; 1 for the ResNet).

    Returns:
        ``{"fc": (depth,), "derived": (depth,)}``.

    Raises:
        ValueError: for an unknown architecture, non-positive sizes or constants, or K, Q ≠ 1 for the ResNet.
        TypeError: for a ``sigma0`` that is not a real number.
    """
    architecture = V.choice("architecture", architecture, ("cnn", "resnet"))
    depth, width = V.positive_int("depth", depth), V.positive_int("width", width)
    kk, qq = V.positive_int("kernel_positions", kernel_positions), V.positive_int("pixels", pixels)
    if architecture == "resnet" and (kk, qq) != (1, 1):
        raise ValueError(f"kernel_positions and pixels are CNN sizes; the ResNet needs 1 and 1, got {kk} and {qq}")
    c0, radius = V.positive_float("c0", c0), V.positive_float("radius", radius, allow_zero=True)
    lip, c_x = V.positive_float("lipschitz", lipschitz), V.positive_float("c_x", c_x, allow_zero=True)
    if isinstance(sigma0, bool) or not isinstance(sigma0, (int, float, np.integer, np.floating)):
        raise TypeError(f"sigma0 must be a real number, got {sigma0!r} of type {type(sigma0).__name__}")
    if not math.isfinite(sigma0):
        raise ValueError(f"sigma0 must be finite, got {sigma0}")
    fc = lemma_f3_bounds(depth, width, c0, radius, lip, c_x, sigma0)["corrected"]
    if architecture == "cnn":
        rk, rq = math.sqrt(kk), math.sqrt(qq)
        derived = lemma_f3_bounds(depth, width, rk * c0, radius, lip, rq * c_x, rq * sigma0)["corrected"]
    else:
        derived = lemma_f3_bounds(depth, width, c0, radius, lip, c_x, sigma0, skip=True)["corrected"]
    return {"fc": fc, "derived": derived}


__all__ = ["a_priori_layer_jacobian", "block_bounds", "eq_17_terms", "eq_85_87_bounds", "hidden_norm_bounds",
           "lemma_f3_bounds", "lemma_f5_bounds", "theorem_3_1"]
