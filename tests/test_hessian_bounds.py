"""The papers' Hessian and layer bounds (ntkbook.hessian_bounds), checked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ntkbook import hessian_bounds


def test_lemma_f3_bounds_by_hand():
    b = hessian_bounds.lemma_f3_bounds(3, 16, 2.0, 4.0, 1.5, 0.5, math.log(2))
    q = 2.0 + 4.0 / 4.0  # c₀ + R/√m
    first = [(1.5 * q) ** layer * 4.0 * 0.5 for layer in (1, 2, 3)]
    sums = [1.0, 1.0 + 1.5 * q, 1.0 + 1.5 * q + (1.5 * q) ** 2]
    np.testing.assert_allclose(b["printed"], [f + s * math.log(2) for f, s in zip(first, sums)], rtol=1e-14)
    np.testing.assert_allclose(b["corrected"], [f + s * 4.0 * math.log(2) for f, s in zip(first, sums)], rtol=1e-14)
    # residual layers (Lemma G.5): B₁ as above, then B_l = (1 + 𝖫_σq)·B_{l−1} + √m|σ(0)|
    r = hessian_bounds.lemma_f3_bounds(3, 16, 2.0, 4.0, 1.5, 0.5, -math.log(2), skip=True)["corrected"]
    o = 4.0 * math.log(2)
    b1 = 1.5 * q * 4.0 * 0.5 + o
    np.testing.assert_allclose(r, [b1, (1 + 1.5 * q) * b1 + o, (1 + 1.5 * q) ** 2 * b1 + (2 + 1.5 * q) * o], rtol=1e-14)
    with pytest.raises(ValueError, match="depth"):
        hessian_bounds.lemma_f3_bounds(0, 16, 2.0, 4.0, 1.5, 0.5, 0.0)


def test_hidden_norm_bounds_fc_is_lemma_f3s_corrected_bound():
    """``fc`` is the corrected Eq. 66 (lemma_f3_bounds) for both architectures and every argument."""
    for c0, r, lip, cx, s0 in ((2.1, 0.0, 1.0, 1.3, 0.0), (2.7, 4.0, 0.25, 0.7, math.log(2)), (1.9, 1.5, 1.0, 2.0, -0.5)):
        want = hessian_bounds.lemma_f3_bounds(4, 50, c0, r, lip, cx, s0)["corrected"]
        for arch, sizes in (("cnn", {"kernel_positions": 9, "pixels": 64}), ("resnet", {})):
            got = hessian_bounds.hidden_norm_bounds(arch, 4, 50, c0, r, lip, cx, s0, **sizes)["fc"]
            np.testing.assert_allclose(got, want, rtol=1e-13)


def test_hidden_norm_bounds_in_closed_form():
    m, c0, r, lip, cx, s0, depth = 16, 2.2, 3.0, 1.0, 1.7, 0.4, 4
    q = c0 + r / 4.0
    # ResNet (Lemma G.5): B_l = p^{l−1}·𝖫q√m C_x + √m|σ(0)| Σ_{i<l} p^i with p = 1 + 𝖫q
    p = 1 + lip * q
    want = [p ** (k - 1) * lip * q * 4.0 * cx + 4.0 * s0 * sum(p**i for i in range(k)) for k in range(1, depth + 1)]
    got = hessian_bounds.hidden_norm_bounds("resnet", depth, m, c0, r, lip, cx, s0)["derived"]
    np.testing.assert_allclose(got, want, rtol=1e-13)
    # CNN (Lemma G.3), K = 9, Q = 25: B_l = (𝖫q_K)^l √(Qm) C_x + √(Qm)|σ(0)| Σ_{i<l} (𝖫q_K)^i, q_K = 3c₀ + R/√m
    qk = 3 * c0 + r / 4.0
    want = [(lip * qk) ** k * 20.0 * cx + 20.0 * s0 * sum((lip * qk) ** i for i in range(k)) for k in range(1, depth + 1)]
    got = hessian_bounds.hidden_norm_bounds("cnn", depth, m, c0, r, lip, cx, -s0, kernel_positions=9, pixels=25)
    np.testing.assert_allclose(got["derived"], want, rtol=1e-13)
    # K = Q = 1: the CNN bound is the fully connected one
    one = hessian_bounds.hidden_norm_bounds("cnn", depth, m, c0, r, lip, cx, s0)
    np.testing.assert_allclose(one["derived"], one["fc"], rtol=1e-15)


def test_hidden_norm_bounds_validation():
    with pytest.raises(ValueError, match="architecture"):
        hessian_bounds.hidden_norm_bounds("mlp", 2, 4, 2.0, 1.0, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="kernel_positions and pixels"):
        hessian_bounds.hidden_norm_bounds("resnet", 2, 4, 2.0, 1.0, 1.0, 1.0, 0.0, pixels=4)
    with pytest.raises(ValueError, match="radius"):
        hessian_bounds.hidden_norm_bounds("cnn", 2, 4, 2.0, -1.0, 1.0, 1.0, 0.0)
    with pytest.raises(TypeError, match="sigma0"):
        hessian_bounds.hidden_norm_bounds("cnn", 2, 4, 2.0, 1.0, 1.0, 1.0, None)
