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


__all__ = ["a_priori_layer_jacobian", "lemma_f3_bounds"]
