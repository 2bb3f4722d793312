"""Chapter 7, Section 3 and Appendices B, E: neuron-gradient Gram matrices, Figure 3, the DenseNet, and the
``orthogonality`` reproduction."""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import reproduce, scales, sweep
from ntkbook.data import digits
from ntkbook.experiments import orthogonality as eo
from ntkbook.models import mlp
from ntkbook.models.densenet import DenseNet, densenet

SETTINGS = scales.get("orthogonality", "ci").replace(
    n_per_class=3, widths=(6, 12), bottleneck_widths=(3, 6), bottleneck_outer=12, runs=1, sampled_neurons=64,
    gd_steps=5)
GEOMETRY = scales.get("neuron_geometry", "ci").replace(n_per_class=3, widths=(6, 12), depth=2, gd_steps=5, radius=1.0,
                                                       neurons=1, directions=1, tol=1e-4, ascent_steps=3)
DENSENET = scales.get("densenet", "ci").replace(n_per_class=3, widths=(6, 12), depth=2, gd_steps=5, radius=1.0,
                                                tol=1e-4)


# ---------------------------------------------------------------------------------------------
# the DenseNet
# ---------------------------------------------------------------------------------------------


def test_densenet_forward_matches_numpy(x64):
    model, params = densenet(jax.random.key(0), (4, 3, 5), input_dim=6, dtype=jnp.float64)
    x = np.random.default_rng(0).normal(size=(7, 6))
    c = x.copy()
    for layer in params["layers"]:
        w = np.asarray(layer["W"])
        a = np.tanh(c @ w.T / math.sqrt(w.shape[1]))
        c = np.concatenate([a, c], axis=1)  # [α⁽ˡ⁾, α⁽ˡ⁻¹⁾, …, α⁽¹⁾, x]
    f = c @ np.asarray(params["v"]) / math.sqrt(c.shape[1])
    np.testing.assert_allclose(np.asarray(model.apply(params, x)), f, rtol=1e-12)
    assert [model.fan_in(i) for i in (1, 2, 3, 4)] == [6, 10, 13, 18]
    assert model.column_slice(3, 2) == slice(0, 3) and model.column_slice(3, 1) == slice(3, 7)
    assert model.column_slice(3, 0) == slice(7, 13)
    with pytest.raises(ValueError, match="source"):
        model.column_slice(2, 2)
    with pytest.raises(ValueError, match="widths"):
        densenet(jax.random.key(0), (4, 0), input_dim=3)


# ---------------------------------------------------------------------------------------------
# Gram matrices of neuron gradients
# ---------------------------------------------------------------------------------------------


def _brute_force_grams(model, params, x):
    """G⁽ˡ⁾ from the full autodiff Jacobians of every layer's pre-activations (one compiled function)."""

    @jax.jit
    def jacobians(p):
        return jax.jacrev(lambda q: model.forward(q, x).pre[: len(model.widths)])(p)

    out = []
    for jac in jacobians(params):  # per layer: pytree of (n, m, *param shape)
        flat = np.concatenate([np.asarray(t).reshape(t.shape[0], t.shape[1], -1)
                               for t in jax.tree_util.tree_leaves(jac)], axis=2)
        out.append(np.einsum("nip,njp->nij", flat, flat))
    return out


@pytest.mark.parametrize("kind", ["fc", "bottleneck", "densenet", "bias"])
def test_grams_match_jacobians(x64, kind):
    x = jnp.asarray(np.random.default_rng(1).normal(size=(3, 5)))
    if kind == "densenet":
        model, params = densenet(jax.random.key(2), (4, 6, 5), input_dim=5, dtype=jnp.float64)
    else:
        widths = {"fc": (6, 6, 6), "bottleneck": (7, 2, 7), "bias": (5, 4, 3)}[kind]
        model, params = mlp(jax.random.key(2), widths, input_dim=5, use_bias=kind == "bias", dtype=jnp.float64)
    fast = eo.neuron_gradient_grams(model, params, x)
    ref = _brute_force_grams(model, params, x)
    for a, b in zip(fast, ref, strict=True):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-11, atol=1e-12)
    sub = eo.neuron_gradient_grams(model, params, x, neurons=3)
    for a, b in zip(sub, ref, strict=True):
        k = min(3, b.shape[1])
        np.testing.assert_allclose(np.asarray(a), b[:, :k, :k], rtol=1e-11, atol=1e-12)
    picked = eo.neuron_gradient_grams(model, params, x, layers=(3, 2))  # only the layers asked for
    for a, layer in zip(picked, (3, 2), strict=True):
        np.testing.assert_allclose(np.asarray(a), ref[layer - 1], rtol=1e-11, atol=1e-12)


def test_grams_validation():
    model, params = mlp(jax.random.key(0), (3, 3), input_dim=2)
    with pytest.raises(TypeError, match="MLP or a DenseNet"):
        eo.neuron_gradient_grams(object(), params, jnp.ones((1, 2)))
    with pytest.raises(ValueError, match="x must have 2 dimensions"):
        eo.neuron_gradient_grams(model, params, jnp.ones(2))
    with pytest.raises(ValueError, match="neurons"):
        eo.neuron_gradient_grams(model, params, jnp.ones((1, 2)), neurons=0)
    with pytest.raises(ValueError, match=r"layers must lie in 1\.\.2"):
        eo.neuron_gradient_grams(model, params, jnp.ones((1, 2)), layers=(3,))
    with pytest.raises(TypeError, match="layers must be a non-empty tuple"):
        eo.neuron_gradient_grams(model, params, jnp.ones((1, 2)), layers=())


def test_cosines_and_frame_constant():
    g = np.array([[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 9.0]])
    c = np.asarray(eo.cosine_matrix(g))
    np.testing.assert_allclose(c, [[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    assert float(eo.mean_abs_cos(g)) == pytest.approx(2 / 6)
    assert float(eo.frame_constant(g)) == pytest.approx(2.0)
    assert bool(jnp.isnan(eo.mean_abs_cos(np.ones((1, 1)))))


def test_first_layer_neurons_are_exactly_orthogonal():
    model, params = mlp(jax.random.key(0), (8, 8), input_dim=4)
    g = eo.neuron_gradient_grams(model, params, jnp.ones((2, 4)))
    assert float(jnp.max(eo.mean_abs_cos(g[0]))) == 0.0  # disjoint supports (Remark 4)
    assert float(jnp.min(eo.mean_abs_cos(g[1]))) > 0.0


def test_clt_prediction_against_a_wide_network():
    """√m E|cos| for layer-2 neurons at initialization approaches the Gaussian constant of Lemma 1."""
    c = eo.clt_prediction()
    assert 0.5 < c < 0.6
    x = jnp.asarray(np.random.default_rng(3).normal(size=(4, 64)))
    x = x * 8.0 / jnp.linalg.norm(x, axis=1, keepdims=True)
    vals = []
    for seed in range(3):
        model, params = mlp(jax.random.key(seed), (1024, 256), input_dim=64)
        vals.append(float(jnp.mean(eo.mean_abs_cos(eo.neuron_gradient_grams(model, params, x, 128)[1]))))
    assert np.mean(vals) * math.sqrt(1024) == pytest.approx(c, rel=0.05)


# ---------------------------------------------------------------------------------------------
# data, networks, training, pieces
# ---------------------------------------------------------------------------------------------


def test_load_data_and_networks():
    x, y = eo.load_data(SETTINGS)
    assert x.shape == (6, 64) and set(np.unique(np.asarray(y))) == {-1.0, 1.0}
    xg, _ = eo.load_data(SETTINGS.replace(dataset="gaussian"))
    np.testing.assert_allclose(np.linalg.norm(np.asarray(xg), axis=1), 8.0, rtol=1e-6)
    with pytest.raises(ValueError, match="unknown dataset"):
        eo.load_data(SETTINGS.replace(dataset="cifar"))
    fc, _ = eo.make_network("fc", 5, 0, SETTINGS, 64)
    bn, _ = eo.make_network("bottleneck", 2, 0, SETTINGS, 64)
    dn, _ = eo.make_network("densenet", 4, 0, SETTINGS, 64)
    assert fc.widths == (5, 5, 5) and bn.widths == (12, 2, 12) and isinstance(dn, DenseNet)
    # one model object per architecture (the static key of the compiled training loop), different draws
    fc1, p1 = eo.make_network("fc", 5, 1, SETTINGS, 64)
    _, p0 = eo.make_network("fc", 5, 0, SETTINGS, 64)
    assert fc1 is fc and not np.allclose(p1["layers"][0]["W"], p0["layers"][0]["W"])
    with pytest.raises(ValueError, match="unknown kind"):
        eo.make_network("cnn", 5, 0, SETTINGS, 64)


def test_quadratic_and_densenet_pieces():
    """Depth 2: the structure of the pieces' output, Lemma 3's norm against autodiff.  (turn_piece is checked
    by the chapter's claims at ci: thm-2/first-layer-normal-is-constant, thm-2/normal-turns-less-as-width-grows/*,
    cor-2/normal-turns-less-along-gd/*.)"""
    quad = eo.quadratic_term_piece({"width": 8, "run": 0}, GEOMETRY)
    assert quad["target_layer"] == [3]  # the output f, assembled from the layer-2 neurons
    assert np.all(np.asarray(quad["worst"]) > 0) and np.all(np.asarray(quad["frame"]) >= 1.0 - 1e-6)
    np.testing.assert_allclose(quad["bound_with_frame"], np.asarray(quad["bound"]) * np.asarray(quad["frame"]))
    # Lemma 3's ‖∇α⁽²⁾(∇α⁽²⁾)ᵀ‖ against autodiff Jacobians of the post-activations of layer 2
    x, _ = eo.load_data(GEOMETRY)
    model, params = eo.make_network("fc", 8, 0, GEOMETRY, x.shape[1])
    jac = jax.jacobian(lambda p: model.forward(p, x[:1]).post[2][0])(params)
    flat = jnp.concatenate([j.reshape(8, -1) for j in jax.tree_util.tree_leaves(jac)], axis=1)
    ref = np.linalg.eigvalsh(np.asarray(flat @ flat.T, np.float64)).max()
    assert quad["gram_norm"][0] == pytest.approx(ref, rel=1e-4)
    # β over the segment includes θ₀; Eq. 36 with √C on the segment is at least twice the cross term's maximum
    # (σ_max at θ₀ by power iteration, Lemma 3's column by a dense eigensolver)
    assert quad["beta_segment"][0] >= quad["beta"][0] * (1 - 1e-6) and quad["segment_resolution"][0] >= 0
    np.testing.assert_allclose(quad["bound_segment"], np.asarray(quad["bound"]) * np.asarray(quad["beta_segment"])
                               / np.asarray(quad["beta"]), rtol=1e-6)
    assert quad["cross_term_max"][0] == pytest.approx(GEOMETRY.radius**2 * math.sqrt(ref) / (2 * math.sqrt(8)),
                                                      rel=1e-4)
    assert 2 * quad["cross_term_max"][0] <= quad["eq_36"][0] * (1 + 1e-6) and 0 < quad["cross_term"][0]
    # the piece's fused program gives what the public functions give
    cross = eo.cross_term(model, params, x[0], 2, GEOMETRY.radius)
    assert quad["cross_term_max"][0] == pytest.approx(cross.maximum, rel=1e-5)
    assert quad["cross_term"][0] == pytest.approx(abs(cross.mixed), rel=1e-5)
    prof = eo.segment_profile(model, params, x[0], cross.delta_theta, 2)
    assert quad["eq_36"][0] == pytest.approx(GEOMETRY.radius**2 * math.sqrt(prof.gram_norm.max() / 8), rel=1e-5)
    hess = eo.densenet_hessian_piece({"width": 8, "run": 0}, DENSENET)
    assert hess["hessian_norm"] > 0 and hess["residual"] < 1e-2


def test_worst_remainder_of_a_quadratic():
    """For f(w) = ½ wᵀAw the remainder is ½ΔᵀAΔ, maximal at R·(top eigenvector): ½R²λ_max."""
    from ntkbook.hessian import hessian_spectral_norm

    a = jnp.diag(jnp.array([3.0, -1.0, 0.5]))

    def fn(w, scale):
        return 0.5 * scale * w @ a @ w

    w0 = jnp.array([0.3, -0.2, 1.0])
    res = hessian_spectral_norm(fn, w0, args=(1.0,), tol=1e-8)
    worst, delta = eo.worst_remainder(fn, w0, (1.0,), res, 2.0, jax.random.key(0), 5)
    assert worst == pytest.approx(0.5 * 4.0 * 3.0, rel=1e-6)
    np.testing.assert_allclose(np.abs(np.asarray(delta)), [2.0, 0.0, 0.0], atol=1e-3)


# ---------------------------------------------------------------------------------------------
# Theorem 4's β over the segment, Appendix D's cross term
# ---------------------------------------------------------------------------------------------


def _dense_jacobian(fn, tree):
    """The full Jacobian (k, p) of a vector function of a pytree, by autodiff (jacrev), flattened."""
    jac = jax.jit(jax.jacrev(fn))(tree)
    leaves = jax.tree_util.tree_leaves(jac)
    return np.concatenate([np.asarray(t).reshape(t.shape[0], -1) for t in leaves], axis=1)


def _shifted_pre(model, params, delta, x, layer, t):
    p = {**params, "layers": [jax.tree_util.tree_map(lambda a, d: a + t * d, lay, dl)
                              for lay, dl in zip(params["layers"], delta)] + params["layers"][len(delta):]}
    return model.forward(p, x[None]).pre[layer - 1][0]


def _tiny_network(dtype=jnp.float64):
    model, params = mlp(jax.random.key(4), (5, 6, 4), input_dim=3, dtype=dtype)
    x = jnp.asarray(np.random.default_rng(5).normal(size=3), dtype)
    return model, params, x


@pytest.mark.parametrize("layer, moved", [(2, 2), (3, 3), (2, 3)])
def test_segment_profile_against_dense_jacobians(x64, layer, moved):
    """maxᵢ‖∇α̃ᵢ⁽ˡ⁾‖² and σ_max(∇α⁽ˡ⁾)² along θ₀ + tΔ equal those of the full autodiff Jacobians (per-neuron
    gradient norms, SVD) at every grid point."""
    model, params, x = _tiny_network()
    keys = jax.random.split(jax.random.key(6), moved)
    delta = tuple(jax.tree_util.tree_map(lambda a, k=k: jax.random.normal(k, a.shape, a.dtype), params["layers"][i])
                  for i, k in enumerate(keys))
    prof = eo.segment_profile(model, params, x, delta, layer, points=5)
    np.testing.assert_allclose(prof.t, [0.0, 0.25, 0.5, 0.75, 1.0])

    @jax.jit
    def jacobians(t):  # of the pre- and post-activations of the layer at θ₀ + tΔ, all parameters
        p = {**params, "layers": [jax.tree_util.tree_map(lambda a, d: a + t * d, lay, dl)
                                  for lay, dl in zip(params["layers"], delta)] + params["layers"][moved:]}
        return jax.jacrev(lambda q: model.forward(q, x[None]).pre[layer - 1][0])(p)

    for k, t in enumerate(prof.t):
        leaves = jax.tree_util.tree_leaves(jacobians(t))
        pre = np.concatenate([np.asarray(j).reshape(j.shape[0], -1) for j in leaves], axis=1)
        z = np.asarray(_shifted_pre(model, params, delta, x, layer, t))
        post = (1 - np.tanh(z) ** 2)[:, None] * pre  # ∇αᵢ = σ'(α̃ᵢ)∇α̃ᵢ
        assert prof.max_sq_grad_norm[k] == pytest.approx(np.max(np.sum(pre**2, axis=1)), rel=1e-10)
        assert prof.gram_norm[k] == pytest.approx(np.linalg.svd(post, compute_uv=False)[0] ** 2, rel=1e-10)


def test_segment_profile_and_grid_resolution_validation():
    model, params, x = _tiny_network(jnp.float32)
    delta = tuple(params["layers"][:2])
    assert eo.grid_resolution([1.0, 2.0, 1.5]) == pytest.approx(1.0)  # |2 − 1|/1 > |1.5 − 2|/1.5
    assert eo.grid_resolution([-2.0, -2.2]) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="at least two"):
        eo.grid_resolution([1.0])
    with pytest.raises(ValueError, match="non-zero"):
        eo.grid_resolution([1.0, 0.0])
    with pytest.raises(TypeError, match="model must be an MLP"):
        eo.segment_profile(object(), params, x, delta, 2)
    with pytest.raises(ValueError, match="x must have 1 dimensions"):
        eo.segment_profile(model, params, x[None], delta, 2)
    with pytest.raises(ValueError, match=r"layer must lie in 1\.\.3"):
        eo.segment_profile(model, params, x, delta, 4)
    with pytest.raises(ValueError, match=r"delta must displace layers 1\.\.k"):
        eo.segment_profile(model, params, x, delta, 3)
    with pytest.raises(TypeError, match="delta must be a non-empty tuple"):
        eo.segment_profile(model, params, x, params["layers"][0]["W"], 2)
    with pytest.raises(ValueError, match="structure and shapes"):
        eo.segment_profile(model, params, x, (params["layers"][1], params["layers"][0]), 2)
    with pytest.raises(ValueError, match="points must be an integer >= 2"):
        eo.segment_profile(model, params, x, delta, 2, points=1)


def test_cross_term_against_brute_force_maximization(x64):
    """max of |Δwᵀ∇α⁽ˡ⁾(θ₀)Δθ|/√m over ‖Δw‖² + ‖Δθ‖² = R²: the closed form R²σ_max/(2√m) against a multi-start
    BFGS maximization on the sphere with the dense autodiff Jacobian; the added remainder against NumPy forward
    passes."""
    import scipy.optimize

    model, params, x = _tiny_network()
    radius, layer = 1.5, 2
    m = model.widths[layer - 1]
    moving = tuple(params["layers"][:layer])

    def post(mv):
        return jnp.tanh(model.forward({**params, "layers": list(mv) + params["layers"][layer:]}, x[None])
                        .pre[layer - 1][0])

    a = _dense_jacobian(post, moving)  # (m, p)

    def neg(z):  # −𝒞 at R·z/‖z‖ and its gradient in z
        n2, bil = z @ z, z[:m] @ a @ z[m:]
        grad = np.concatenate([a @ z[m:], z[:m] @ a])
        return -radius**2 * bil / (n2 * math.sqrt(m)), -radius**2 * (grad / n2 - 2 * bil * z / n2**2) / math.sqrt(m)

    rng = np.random.default_rng(7)
    brute = max(-scipy.optimize.minimize(neg, rng.normal(size=m + a.shape[1]), jac=True, method="BFGS",
                                         options={"gtol": 1e-10}).fun for _ in range(8))
    cross = eo.cross_term(model, params, x, layer, radius)
    assert cross.maximum == pytest.approx(brute, rel=1e-8)
    assert cross.sigma_max == pytest.approx(np.linalg.svd(a, compute_uv=False)[0], rel=1e-10)
    dtheta = np.concatenate([np.ravel(t) for t in jax.tree_util.tree_leaves(cross.delta_theta)])
    assert np.linalg.norm(dtheta) == pytest.approx(radius / math.sqrt(2), rel=1e-12)
    assert np.linalg.norm(cross.delta_w) == pytest.approx(radius / math.sqrt(2), rel=1e-12)
    # the linear part of the remainder at (Δw, Δθ) ... and the exact added remainder, from NumPy forward passes
    w1, w2 = (np.asarray(lay["W"]) for lay in params["layers"][:2])
    d1, d2 = (np.asarray(lay["W"]) for lay in cross.delta_theta)

    def alpha2(w1, w2):
        h = np.tanh(w1 @ np.asarray(x) / math.sqrt(3))
        return np.tanh(w2 @ h / math.sqrt(5))

    added = cross.delta_w @ (alpha2(w1 + d1, w2 + d2) - alpha2(w1, w2)) / math.sqrt(m)
    assert cross.mixed == pytest.approx(added, rel=1e-10)
    assert abs(cross.mixed) <= cross.maximum * (1 + 0.5)  # same order at R = 1.5
    # R → 0: the added remainder is the cross term at θ₀, 𝒞 = maximum·(1 + O(R))
    small = eo.cross_term(model, params, x, layer, 1e-4)
    assert small.mixed == pytest.approx(small.maximum, rel=1e-3)
    assert eo.cross_term(model, params, x, layer, radius, gram=eo.neuron_gradient_grams(
        model, params, x[None], layers=(2,))[0][0]).maximum == pytest.approx(cross.maximum, rel=1e-12)
    with pytest.raises(ValueError, match="radius must be a finite number > 0"):
        eo.cross_term(model, params, x, layer, 0.0)
    with pytest.raises(ValueError, match=r"gram must be the \(6, 6\) Gram matrix"):
        eo.cross_term(model, params, x, layer, radius, gram=np.eye(5))


# ---------------------------------------------------------------------------------------------
# the reproduction
# ---------------------------------------------------------------------------------------------


def test_orthogonality_reproduction(tmp_path, monkeypatch):
    """The registered reproduction, on the tiny SETTINGS in place of the ci row (the ci row itself runs in
    the notebook and through ``python -m ntkbook reproduce orthogonality --scale ci``): JSON keys, shapes,
    internal consistency, figure, resume from the cache."""
    # two widths each: the figure fits power laws
    monkeypatch.setitem(scales.TABLE["orthogonality"], "ci", SETTINGS)
    result = reproduce.run("orthogonality", "ci", tmp_path)
    on_disk = json.loads((tmp_path / "orthogonality.json").read_text())
    assert on_disk == result
    for key in ("widths", "mean_abs_cos", "bottleneck_widths", "bottleneck_mean_abs_cos", "dataset", "settings",
                "seconds", "name", "scale", "backend", "devices"):
        assert key in on_disk, key
    assert on_disk["widths"] == [6, 12] and on_disk["bottleneck_widths"] == [3, 6]
    assert np.asarray(on_disk["mean_abs_cos"]).shape == (2, 1)
    assert np.asarray(on_disk["mean_abs_cos_by_layer"]).shape == (2, 1, 3)
    assert np.asarray(on_disk["bottleneck_mean_abs_cos"]).shape == (2, 1)
    layers = np.asarray(on_disk["bottleneck_mean_abs_cos_by_layer"])
    np.testing.assert_array_equal(layers[:, :, 1], np.asarray(on_disk["bottleneck_mean_abs_cos"]))
    np.testing.assert_array_equal(layers[:, :, 2], np.asarray(on_disk["bottleneck_assembled_mean_abs_cos"]))
    np.testing.assert_allclose(np.asarray(on_disk["mean_abs_cos"]),
                               np.asarray(on_disk["mean_abs_cos_by_layer"]).mean(axis=2), rtol=1e-6)
    assert np.all(np.asarray(on_disk["loss_final"]) < np.asarray(on_disk["loss_init"]))
    assert on_disk["dataset"] == "digits" and on_disk["settings"]["bottleneck_outer"] == 12
    assert (tmp_path / "orthogonality.png").stat().st_size > 0
    again = reproduce.run("orthogonality", "ci", tmp_path)
    assert again["cached_pieces"] == again["pieces"] and again["mean_abs_cos"] == result["mean_abs_cos"]


def test_frame_limit_piece_against_autodiff_cosines():
    """The FRAME_LIMIT piece equals λ_max of the cosines of autodiff gradients of the layer-2 pre-activations."""
    settings = scales.FrameLimit(upper_width=6, lower_widths=(10,), runs=1)
    table = sweep.run(eo.FRAME_LIMIT, settings)
    assert list(table["lower_width"]) == [10] and table.shape[0] == 1
    key = sweep.piece_key("frame_limit", {"lower_width": 10, "run": 0})
    x, _ = digits.two_classes()
    model, params = mlp(key, (10, 6), input_dim=x.shape[1], activation="tanh")

    def pre2(p):
        return model.forward(p, x[:1]).pre[1][0]

    jac = jax.jacobian(pre2)(params)
    flat = jnp.concatenate([j.reshape(6, -1) for j in jax.tree_util.tree_leaves(jac)], axis=1)
    g = np.asarray(flat @ flat.T, np.float64)
    d = np.sqrt(np.diag(g))
    ref = np.linalg.eigvalsh(g / d[:, None] / d[None, :]).max()
    assert float(table["λ_max(C)"].iloc[0]) == pytest.approx(ref, rel=1e-4)



def test_clt_predictions_vectorize_clt_prediction():
    widths = np.array([128, 256, 10**6])
    pred = eo.clt_predictions(widths, extra_inputs=64)
    assert pred.shape == (3,) and pred.dtype == np.float64
    np.testing.assert_array_equal(pred, [eo.clt_prediction(int(m), extra_inputs=64) for m in widths])
    # without extra inputs √m·E|cos| is the constant c at every width; the input only dilutes it
    np.testing.assert_allclose(eo.clt_predictions(widths) * np.sqrt(widths), eo.clt_prediction(), rtol=1e-12)
    assert np.all(pred < eo.clt_predictions(widths))


def test_layer_cosines_reads_each_network_kind():
    # a synthetic assembled result: 2 widths × 3 runs × 4 layers, value = width + run/10 + layer/100
    def grid(widths, offset=0.0):
        return [[[m + r / 10 + layer / 100 + offset for layer in range(4)] for r in range(3)] for m in widths]

    result = {"widths": [8, 16], "mean_abs_cos_by_layer": grid([8, 16]),
              "mean_abs_cos_init_by_layer": grid([8, 16], 0.5),
              "bottleneck_widths": [2, 4], "bottleneck_mean_abs_cos_by_layer": grid([2, 4]),
              "bottleneck_mean_abs_cos_init_by_layer": grid([2, 4], 0.5)}
    fc = eo.layer_cosines(result)
    assert fc.after.shape == fc.init.shape == (2, 3, 4)
    np.testing.assert_array_equal(fc.widths, [8, 16])
    np.testing.assert_array_equal(fc.m, [8, 8, 8, 16, 16, 16])  # pairs with after[:, :, l].ravel()
    assert fc.after[1, 2, 3] == pytest.approx(16.23) and fc.init[0, 0, 0] == pytest.approx(8.5)
    np.testing.assert_array_equal(np.floor(fc.after[:, :, 1].ravel()), fc.m)
    bott = eo.layer_cosines(result, "bottleneck")
    np.testing.assert_array_equal(bott.m, [2, 2, 2, 4, 4, 4])
    with pytest.raises(ValueError):
        eo.layer_cosines(result, "resnet")


def test_layer_cosines_of_a_sweep():
    result = eo.orthogonality_sweep(SETTINGS, kinds=("fc",))
    cos = eo.layer_cosines(result)
    assert cos.after.shape == (len(SETTINGS.widths), SETTINGS.runs, 3)
    np.testing.assert_array_equal(cos.after[:, :, 0], 0.0)  # first-layer neurons: disjoint supports (Remark 4)
    np.testing.assert_allclose(cos.after.mean(axis=2), np.asarray(result["mean_abs_cos"]), rtol=1e-6)


def test_clt_predictions_and_layer_cosines_reject_bad_input():
    with pytest.raises(ValueError, match="non-empty one-dimensional"):
        eo.clt_predictions([])
    with pytest.raises(ValueError, match="non-empty one-dimensional"):
        eo.clt_predictions([[8, 16]])
    with pytest.raises(ValueError, match=r"widths\[0\] must be an integer >= 1"):
        eo.clt_predictions([0, 8])
    with pytest.raises(TypeError, match=r"widths\[0\] must be an integer"):
        eo.clt_predictions([8.5])
    with pytest.raises(ValueError, match=r"result lacks the field.*'bottleneck_widths'"):
        eo.layer_cosines({"widths": [8]}, "bottleneck")
    with pytest.raises(TypeError, match="result must be a mapping"):
        eo.layer_cosines([1, 2])
