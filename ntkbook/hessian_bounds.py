"""The Hessian and layer bounds of Liu, Zhu & Belkin (2020): the a-priori bounds its proofs chain together.

* :func:`lemma_f3_bounds` — ‖α⁽ˡ⁾(W)‖ in a ball, Lemma F.3 (Eq. 66) as printed and corrected; residual layers
  (Lemma G.5) with ``skip=True``;
* :func:`a_priori_layer_jacobian` — ‖∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾‖ at a point of the ball from the initialization (Lemma F.2).

The exact norms these bounds are compared with are in :mod:`ntkbook.layer_norms` (the layer factors) and
:mod:`ntkbook.hessian` (‖H‖).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _validation as V
from .layer_norms import largest_singular_value
from .models.dense import MLP
from .models.resnet import ResNet

PyTree = Any


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


__all__ = ["a_priori_layer_jacobian", "hidden_norm_bounds", "lemma_f3_bounds"]
