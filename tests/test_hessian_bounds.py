"""The papers' Hessian and layer bounds (ntkbook.hessian_bounds), checked by hand and against dense autodiff
Hessian blocks."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from conftest import small_network
from ntkbook import hessian, hessian_bounds, layer_norms
from ntkbook.ball import point_on_sphere


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


def _blocks(model, params, x):
    """The dense autodiff Hessian of f at x, cut into its (L+1) × (L+1) blocks (layers, then v)."""
    full = np.asarray(hessian.dense_hessian(lambda p: model.apply(p, x[None])[0], params), dtype=np.float64)
    sizes = [layer["W"].size for layer in params["layers"]] + ([params["v"].size] if "v" in params else [])
    edges = np.cumsum([0, *sizes])
    return full, [[full[edges[i]:edges[i + 1], edges[j]:edges[j + 1]] for j in range(len(sizes))]
                  for i in range(len(sizes))]


@pytest.mark.parametrize("depth,train", [(2, False), (3, True), (4, True)])
def test_block_bounds_dominate_the_dense_blocks_and_the_theorem_dominates_their_sum(x64, depth, train):
    model, p0, x = small_network("mlp", seed=9, width=6, depth=depth, train_output=train)
    for p in (p0, point_on_sphere(jax.random.key(3), p0, 3.0)):
        f = layer_norms.layer_factors(model, p, x)
        beta = hessian_bounds.block_bounds(f, include_v=train)
        full, blocks = _blocks(model, p, x)
        assert beta.shape == (depth + train,) * 2
        for i, row in enumerate(blocks):
            for j, blk in enumerate(row):
                assert np.linalg.norm(blk, 2) <= beta[i, j] * (1 + 1e-10) + 1e-14
        h = np.abs(np.linalg.eigvalsh(full)).max()
        assert h <= np.linalg.norm(beta, 2) * (1 + 1e-10) <= beta.sum() * (1 + 1e-10)  # blockwise, Lemma E.1
        thm = hessian_bounds.theorem_3_1(f, include_v=train)
        hidden = beta[:depth, :depth].sum()  # the first term dominates the hidden blocks, term by term
        assert hidden <= thm["C1"] * thm["Q_221"] * thm["Q_inf"] * (1 + 1e-12)
        if train:  # the output blocks enter once: ‖[[0, X], [Xᵀ, 0]]‖ = ‖X‖ ≤ Σ_l β(l, L+1)
            assert beta[:depth, depth].sum() <= thm["C2"] * thm["Q_L"] / math.sqrt(6) * (1 + 1e-12)
        assert h <= thm["bound"]
        if depth == 2 and not train:
            assert hessian_bounds.eq_17_terms(f)["eq_17"] == pytest.approx(beta.sum(), rel=1e-12)
        prior = hessian_bounds.a_priori_layer_jacobian(model, p0, p)  # Lemma F.2 dominates the exact norms
        assert np.all(f["ja"][1:] <= prior[1:] * (1 + 1e-12))


def test_theorem_3_1_and_eq_17_by_hand():
    f = {"jw": np.array([2.0, 1.0]), "ja": np.array([np.nan, 0.5]), "tww": np.array([0.1, 0.2]),
         "taw": np.array([np.nan, 0.3]), "taa": np.array([np.nan, 0.4]), "b_inf": np.array([0.05, 0.02]),
         "width": np.array([4.0, 4.0])}
    q = hessian_bounds.theorem_3_1(f, include_v=True)
    assert q["Q_inf"] == 0.05 and q["Q_L"] == 2.0 and q["L_phi"] == 1.0
    # candidates: tww 0.1, 0.2; jw1·taw2 = 0.6; jw1·jw1·taa2 = 1.6, jw1·jw2·taa2 = 0.8, jw2·jw2·taa2 = 0.4
    assert q["Q_221"] == pytest.approx(1.6)
    assert q["C1"] == 2 * (4 + 2 + 1) and q["C2"] == 2
    assert q["bound"] == pytest.approx(14 * 1.6 * 0.05 + 2 * 2.0 / 2)
    assert hessian_bounds.theorem_3_1(f, include_v=False)["bound"] == pytest.approx(14 * 1.6 * 0.05)
    beta = hessian_bounds.block_bounds(f, include_v=True)
    np.testing.assert_allclose(beta, [[0.1 * 0.05 + 4 * 0.4 * 0.02, 2 * 0.3 * 0.02, 2 * 0.5 / 2],
                                      [2 * 0.3 * 0.02, 0.2 * 0.02, 1 / 2], [0.5, 0.5, 0.0]], rtol=1e-14)
    terms = hessian_bounds.eq_17_terms(f)
    assert terms["eq_17"] == pytest.approx(4 * 0.4 * 0.02 + 2 * 2 * 0.3 * 0.02 + 0.2 * 0.02 + 0.1 * 0.05)
    with pytest.raises(ValueError, match="L = 2"):
        hessian_bounds.eq_17_terms({k: np.append(v, 1.0) for k, v in f.items()})


def test_lemma_f5_and_eq_85_87_bounds_by_hand():
    np.testing.assert_allclose(hessian_bounds.lemma_f5_bounds(3, 16, 2.0, 4.0, 1.5),
                               [1.5**2 * 3.0**3, 1.5 * 3.0**2, 3.0], rtol=1e-14)
    np.testing.assert_allclose(hessian_bounds.lemma_f5_bounds(2, 9, 2.0, 0.0, 1.0), [4.0, 2.0], rtol=1e-14)  # Eq. 81
    c0, r, lip, beta, c_x, s0, m = 2.0, 4.0, 1.5, 0.25, 0.5, math.log(2), 16
    b0 = np.array([0.1, 0.2, 0.3])
    out = hessian_bounds.eq_85_87_bounds(3, m, c0, r, lip, beta, c_x, s0, b0)
    a = hessian_bounds.lemma_f3_bounds(3, m, c0, r, lip, c_x, s0)["corrected"]
    d1 = r * c_x
    d2 = c0 * lip * d1 + r / 4 * a[0]
    d3 = c0 * lip * d2 + r / 4 * a[1]
    np.testing.assert_allclose(out["delta"], [d1, d2, d3], rtol=1e-14)
    q = c0 + r / 4
    e3 = r / 4
    e2 = r / 4 * lip * q + c0 * b0[2] * beta * d3 + c0 * lip * e3
    e1 = r / 4 * lip**2 * q**2 + c0 * b0[1] * beta * d2 + c0 * lip * e2
    np.testing.assert_allclose(out["diff"], [e1, e2, e3], rtol=1e-14)
    with pytest.raises(ValueError, match="smoothness"):
        hessian_bounds.eq_85_87_bounds(3, m, c0, r, lip, math.inf, c_x, s0, b0)
    with pytest.raises(ValueError, match="b0_inf"):
        hessian_bounds.eq_85_87_bounds(2, m, c0, r, lip, beta, c_x, s0, b0)


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
