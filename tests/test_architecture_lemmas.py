"""Lemmas G.2–G.5 of Liu–Zhu–Belkin 2020 layer by layer (chapter 3b): the kernel slices W^[k] of Eq. 92, the spectral
norms of the weights and the hidden-layer norms of :func:`ntkbook.experiments.deep_hessian_ball.layer_norms_at`,
checked against NumPy's dense SVD, an explicit construction and hand-written float64 forward passes; the bounds of
:func:`~ntkbook.experiments.deep_hessian_ball.hidden_norm_bounds` against Lemma F.3's bound of chapter 3 and their
closed forms."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import hessian_bounds
from ntkbook.experiments import deep_hessian_ball as db
from ntkbook.models.conv import conv, conv_net
from ntkbook.models.resnet import resnet
from ntkbook.scales import CnnResnet


def _numpy_conv_layer(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Eq. 91 with "same" zero padding and the fan-in 1/√(K m_in), by explicit loops: a (H, W, m_in), w (kh, kw, m_in,
    m_out) → (H, W, m_out)."""
    kh, kw, m_in, m_out = w.shape
    h, wd, _ = a.shape
    out = np.zeros((h, wd, m_out))
    for q1 in range(h):
        for q2 in range(wd):
            for i in range(kh):
                for j in range(kw):
                    p1, p2 = q1 + i - kh // 2, q2 + j - kw // 2
                    if 0 <= p1 < h and 0 <= p2 < wd:
                        out[q1, q2] += a[p1, p2] @ w[i, j]
    return out / math.sqrt(kh * kw * m_in)


def _float64(tree):
    return jax.tree_util.tree_map(lambda a: np.asarray(a, np.float64), tree)


def test_kernel_slices_give_the_convolution_as_a_sum_of_matrix_products():
    """Eq. 92: W ∗ α = Σ_k W^[k] α^[k] with α^[k] the input shifted by kernel position k (zeros outside)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3, 2, 5))
    a = rng.standard_normal((6, 7, 2))
    slices = db.kernel_slices(w)
    assert slices.shape == (9, 5, 2)
    total = np.zeros((6, 7, 5))
    padded = np.pad(a, ((1, 1), (1, 1), (0, 0)))
    for k, (i, j) in enumerate((i, j) for i in range(3) for j in range(3)):
        shifted = padded[i:i + 6, j:j + 7]  # α^[k]: pixel q reads the input at q + (i − 1, j − 1)
        total += np.einsum("oc,hwc->hwo", slices[k], shifted)
    with jax.enable_x64(True):
        ref = np.asarray(conv(jnp.asarray(a)[None], jnp.asarray(w)))[0] * math.sqrt(9 * 2)
    np.testing.assert_allclose(total, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(total / math.sqrt(18), _numpy_conv_layer(a, w), rtol=1e-12, atol=1e-12)


def test_kernel_slices_rejects_a_matrix():
    with pytest.raises(ValueError, match="w must have shape"):
        db.kernel_slices(np.ones((3, 4)))
    with pytest.raises(TypeError, match="w must"):
        db.kernel_slices(np.ones((3, 3, 2, 2), dtype=int))


def test_cnn_weight_norms_match_a_dense_svd_and_an_explicit_construction():
    model, p = conv_net(jax.random.key(1), (4, 3), spatial=(5, 5), kernel_size=3)
    p = _float64(p)
    # an explicit construction: the slices of layer 2 are U diag(s_k) Vᵀ with known top singular value s_k
    rng = np.random.default_rng(1)
    top = np.linspace(0.5, 4.5, 9)
    w2 = np.empty((3, 3, 4, 3))
    for k, (i, j) in enumerate((i, j) for i in range(3) for j in range(3)):
        u, _ = np.linalg.qr(rng.standard_normal((3, 3)))
        v, _ = np.linalg.qr(rng.standard_normal((4, 3)))
        s = np.array([top[k], 0.3 * top[k], 0.1 * top[k]])
        w2[i, j] = (u @ np.diag(s) @ v.T).T  # the filter stores (m_in, m_out) = the transpose of W^[k]
    p["layers"][1]["W"] = w2
    got = db.layer_norms_at(model, p, np.ones((5, 5)))
    assert [g.shape for g in got["weights"]] == [(9,), (9,)]
    np.testing.assert_allclose(got["weights"][1], top, rtol=1e-12)
    dense = np.linalg.svd(np.asarray(p["layers"][0]["W"]).reshape(9, 1, 4), compute_uv=False)[:, 0]
    np.testing.assert_allclose(got["weights"][0], dense, rtol=1e-12)


def test_cnn_hidden_norms_match_a_hand_written_forward_pass():
    model, p = conv_net(jax.random.key(2), (3, 4), spatial=(5, 4), kernel_size=3, input_channels=2)
    p = _float64(p)
    x = np.random.default_rng(2).standard_normal((5, 4, 2))
    a1 = np.tanh(_numpy_conv_layer(x, p["layers"][0]["W"]))
    a2 = np.tanh(_numpy_conv_layer(a1, p["layers"][1]["W"]))
    got = db.layer_norms_at(model, p, x)
    np.testing.assert_allclose(got["hidden"], [np.linalg.norm(a1), np.linalg.norm(a2)], rtol=1e-12)


def test_resnet_norms_match_a_dense_svd_and_a_hand_written_forward_pass():
    model, p = resnet(jax.random.key(3), 6, 3, input_dim=4)
    p = _float64(p)
    x = np.random.default_rng(3).standard_normal(4)
    a1 = np.tanh(p["layers"][0]["W"] @ x / 2.0)
    a2 = np.tanh(p["layers"][1]["W"] @ a1 / math.sqrt(6)) + a1
    a3 = np.tanh(p["layers"][2]["W"] @ a2 / math.sqrt(6)) + a2
    got = db.layer_norms_at(model, p, x)
    np.testing.assert_allclose(got["hidden"], [np.linalg.norm(a) for a in (a1, a2, a3)], rtol=1e-12)
    mats = [layer["W"] for layer in p["layers"]] + [p["v"]]
    assert [g.shape for g in got["weights"]] == [(1,)] * 4
    np.testing.assert_allclose([g[0] for g in got["weights"]],
                               [np.linalg.svd(w, compute_uv=False)[0] for w in mats], rtol=1e-12)


def test_layer_norms_at_rejects_other_models_and_a_fixed_output_layer():
    from ntkbook.models import mlp

    model, p = mlp(jax.random.key(0), (4,), input_dim=2)
    with pytest.raises(TypeError, match="model must be a ConvNet or a ResNet"):
        db.layer_norms_at(model, p, np.ones(2))
    model, p = resnet(jax.random.key(0), 4, 2, input_dim=2, train_output=False)
    with pytest.raises(ValueError, match="output layer v"):
        db.layer_norms_at(model, p, np.ones(2))


def test_the_fully_connected_bound_is_lemma_f3s_corrected_bound():
    """``fc`` is chapter 3's corrected Eq. 66 (hessian_bounds.lemma_f3_bounds), for every argument."""
    for c0, r, lip, cx, s0 in ((2.1, 0.0, 1.0, 1.3, 0.0), (2.7, 4.0, 0.25, 0.7, math.log(2)), (1.9, 1.5, 1.0, 2.0, -0.5)):
        for arch, sizes in (("cnn", {"kernel_positions": 9, "pixels": 64}), ("resnet", {})):
            got = db.hidden_norm_bounds(arch, 4, 50, c0, r, lip, cx, s0, **sizes)["fc"]
            np.testing.assert_allclose(got, hessian_bounds.lemma_f3_bounds(4, 50, c0, r, lip, cx, s0)["corrected"], rtol=1e-13)


def test_the_architecture_bounds_in_closed_form():
    m, c0, r, lip, cx, s0, depth = 16, 2.2, 3.0, 1.0, 1.7, 0.4, 4
    q = c0 + r / 4.0
    # ResNet: B_l = p^{l−1}·𝖫q√m C_x + √m|σ(0)| Σ_{i<l} p^i, p = 1 + 𝖫q
    p = 1 + lip * q
    want = [p ** (k - 1) * lip * q * 4.0 * cx + 4.0 * s0 * sum(p**i for i in range(k)) for k in range(1, depth + 1)]
    got = db.hidden_norm_bounds("resnet", depth, m, c0, r, lip, cx, s0)["derived"]
    np.testing.assert_allclose(got, want, rtol=1e-13)
    # CNN: Lemma F.3's form with c₀ → √K c₀, C_x → √Q C_x, |σ(0)| → √Q |σ(0)|
    got = db.hidden_norm_bounds("cnn", depth, m, c0, r, lip, cx, -s0, kernel_positions=9, pixels=25)["derived"]
    np.testing.assert_allclose(got, hessian_bounds.lemma_f3_bounds(depth, m, 3 * c0, r, lip, 5 * cx, 5 * s0)["corrected"],
                               rtol=1e-13)
    # K = Q = 1: the CNN bound is the fully connected one
    one = db.hidden_norm_bounds("cnn", depth, m, c0, r, lip, cx, s0)
    np.testing.assert_allclose(one["derived"], one["fc"], rtol=1e-15)


def test_hidden_norm_bounds_validation():
    with pytest.raises(ValueError, match="architecture"):
        db.hidden_norm_bounds("mlp", 2, 4, 2.0, 1.0, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="kernel_positions and pixels"):
        db.hidden_norm_bounds("resnet", 2, 4, 2.0, 1.0, 1.0, 1.0, 0.0, pixels=4)
    with pytest.raises(ValueError, match="radius"):
        db.hidden_norm_bounds("cnn", 2, 4, 2.0, -1.0, 1.0, 1.0, 0.0)
    with pytest.raises(TypeError, match="sigma0"):
        db.hidden_norm_bounds("cnn", 2, 4, 2.0, 1.0, 1.0, 1.0, None)


TINY = CnnResnet(cnn_widths=(3,), cnn_depth=2, resnet_widths=(5,), resnet_depth=2, seeds=1, radius=2.0, image=0,
                 input_dim=4, tol=1e-4)


@pytest.fixture(scope="module")
def tiny_rows():
    return db.architecture_layer_norms(TINY, jax.random.key(0), sphere_points=2)


def test_architecture_layer_norms_rows(tiny_rows):
    ln = tiny_rows
    assert set(ln) == {"architecture", "input", "width", "seed", "point", "radius", "quantity", "layer", "slice",
                       "norm", "scaled", "bound", "fc", "c0", "c_x"}
    n = {k: v.size for k, v in ln.items()}
    assert len(set(n.values())) == 1
    cnn_w = (ln["architecture"] == "cnn") & (ln["quantity"] == "weight")
    assert cnn_w.sum() == 3 * 2 * 9  # points × layers × kernel slices
    res_w = (ln["architecture"] == "resnet") & (ln["quantity"] == "weight")
    assert res_w.sum() == 3 * 3  # points × (L + 1) layers
    ones = ln["input"] == "ones"
    assert set(ln["architecture"][ones]) == {"cnn"} and set(ln["point"][ones]) == {0}
    np.testing.assert_array_equal(ln["radius"][ln["point"] == 0], 0.0)
    np.testing.assert_allclose(ln["radius"][ln["point"] > 0], 2.0, rtol=1e-5)
    np.testing.assert_allclose(ln["scaled"], ln["norm"] / np.sqrt(ln["width"]), rtol=1e-15)
    # c₀ is the largest scaled weight norm of the network at W₀
    for a, m in (("cnn", 3), ("resnet", 5)):
        sel = (ln["architecture"] == a) & (ln["width"] == m)
        w0 = sel & (ln["quantity"] == "weight") & (ln["point"] == 0)
        np.testing.assert_allclose(ln["c0"][sel], ln["scaled"][w0].max(), rtol=1e-15)
    # the derived bounds hold (a consequence of the triangle inequality, Lemma G.1 and ‖σ(z)‖ ≤ 𝖫‖z‖ + √n|σ(0)|)
    hidden = ln["quantity"] == "hidden"
    assert np.all(ln["norm"][hidden] <= ln["bound"][hidden])
    assert np.all(np.isnan(ln["fc"][~hidden]))


def test_architecture_layer_norms_at_w0_are_those_of_the_network(tiny_rows):
    """The W₀ rows are layer_norms_at of the ResNet that architecture_sweep builds (same key)."""
    ln = tiny_rows
    k = jax.random.fold_in(jax.random.key(0), 1000 * 0 + 5 + 500_000)
    model, p = resnet(k, 5, 2, input_dim=4)
    from ntkbook.data.sphere import unit_scale_input

    x = unit_scale_input(jax.random.fold_in(jax.random.key(0), 7), 4)
    got = db.layer_norms_at(model, p, x)
    sel = (ln["architecture"] == "resnet") & (ln["width"] == 5) & (ln["point"] == 0)
    np.testing.assert_allclose(ln["norm"][sel & (ln["quantity"] == "hidden")], got["hidden"], rtol=1e-15)
    np.testing.assert_allclose(ln["norm"][sel & (ln["quantity"] == "weight")],
                               np.concatenate(got["weights"]), rtol=1e-15)


def test_layer_norm_series_groups_and_table(tiny_rows):
    ln = tiny_rows
    assert db.layer_norm_groups(ln) == [("cnn", "weight", 1), ("cnn", "weight", 2), ("cnn", "hidden", 1),
                                        ("cnn", "hidden", 2), ("resnet", "weight", 1), ("resnet", "weight", 2),
                                        ("resnet", "weight", 3), ("resnet", "hidden", 1), ("resnet", "hidden", 2)]
    m, y = db.layer_norm_series(ln, "resnet", "weight", 3)
    np.testing.assert_array_equal(m, [5.0])
    sel = (ln["architecture"] == "resnet") & (ln["quantity"] == "weight") & (ln["layer"] == 3)
    assert y[0] == ln["scaled"][sel & (ln["width"] == 5)].max()
    with pytest.raises(ValueError, match="no rows"):
        db.layer_norm_series(ln, "cnn", "hidden", 3)
    assert db.layer_norm_name("resnet", "weight", 3, 2) == "‖v‖/√m"
    assert db.layer_norm_name("cnn", "hidden", 2, 2) == "‖α⁽²⁾‖_F/√m"
    with pytest.raises(ValueError, match=r"layer must be in 1\.\.2"):
        db.layer_norm_name("cnn", "weight", 3, 2)
    table = db.layer_norms_table(ln, "resnet")
    assert "‖v‖/√m" in repr(table) and "m=5" in list(table.frame.columns)
    with pytest.raises(ValueError, match="architecture"):
        db.layer_norms_table(ln, "densenet")
