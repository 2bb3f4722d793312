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
