"""Chapter 3: the compressed Hessian, the structured layer norms, the bounds of Theorem 3.1, the ball
experiments of Theorem 3.2, and the CNN / ResNet models — against dense autodiff references."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbook as nb
from ntkbook import hessian, layer_norms, models, scales
from ntkbook import hessian_compressed as hc
from ntkbook.ball import point_on_sphere
from ntkbook.ball import project as project_to_ball
from ntkbook.data import digits
from ntkbook.data.sphere import unit_scale_input
from ntkbook.experiments import deep_hessian as dh
from ntkbook.experiments import deep_hessian_ball as db
from ntkbook.models.conv import conv, conv_net
from ntkbook.models.resnet import resnet
from ntkbook.pytree import flat_spec, tree_dot, tree_norm, tree_sub


def _net(kind, seed=0, width=5, depth=3, d=3, activation="tanh", **kw):
    key = jax.random.key(seed)
    if kind == "resnet":
        model, params = resnet(key, width, depth, input_dim=d, activation=activation, dtype=jnp.float64, **kw)
    else:
        widths = width if isinstance(width, tuple) else (width,) * depth
        model, params = models.mlp(key, widths, input_dim=d, activation=activation, dtype=jnp.float64, **kw)
    x = unit_scale_input(jax.random.key(seed + 50), d, jnp.float64)
    return model, params, x


def _full_fn(model, x):
    return lambda p: model.apply(p, x[None])[0]


def _nonzero_sorted(eigs, tol):
    e = np.sort(np.asarray(eigs))
    return e[np.abs(e) > tol]


# ---------------------------------------------------------------------------------------------
# Compression of the Hessian to its range
# ---------------------------------------------------------------------------------------------

CASES = [("mlp", {}), ("mlp", {"train_output": False}), ("mlp", {"use_bias": True}), ("resnet", {})]


@pytest.mark.parametrize("kind,kw", CASES)
def test_compressed_hessian_has_the_nonzero_spectrum_of_the_dense_hessian(x64, kind, kw):
    model, params, x = _net(kind, seed=1, **kw)
    full = np.asarray(hessian.dense_hessian(_full_fn(model, x), params), dtype=np.float64)
    comp = hc.compressed_hessian(model, params, x)
    assert comp.shape == (hc.compressed_dimension(model, params),) * 2
    assert comp.shape[0] < full.shape[0]
    scale = np.abs(np.linalg.eigvalsh(full)).max()
    a = _nonzero_sorted(np.linalg.eigvalsh(0.5 * (full + full.T)), 1e-9 * scale)
    b = _nonzero_sorted(np.linalg.eigvalsh(comp), 1e-9 * scale)
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12 * scale)


@pytest.mark.parametrize("kind,kw", CASES)
def test_handwritten_hvp_equals_autodiff_compressed_hessian(x64, kind, kw):
    model, params, x = _net(kind, seed=2, **kw)
    comp = hc.compressed_hessian(model, params, x)
    bp = hc.base_pass(model, params, x)
    t = np.random.default_rng(0).standard_normal(comp.shape[0])
    np.testing.assert_allclose(hc.compressed_hvp(bp, t), comp @ t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind,kw", CASES)
def test_frames_and_base_pass_kernel_is_squared_gradient_norm(x64, kind, kw):
    model, params, x = _net(kind, seed=3, **kw)
    g = jax.grad(_full_fn(model, x))(params)
    k = float(tree_norm(g) ** 2)
    assert float(hc.frames(model, params, x).kernel) == pytest.approx(k, rel=1e-12)
    assert hc.base_pass(model, params, x).kernel == pytest.approx(k, rel=1e-12)
    # the layer inputs are those of the model's own forward pass
    post = model.forward(params, x[None]).post
    for a, ref in zip(hc.layer_inputs(model, params, x), post[:-1], strict=True):
        np.testing.assert_allclose(a, ref[0], rtol=1e-12)


def test_lift_and_compress_are_adjoint_and_lift_is_an_isometry_on_pz(x64):
    model, params, x = _net("mlp", seed=4, use_bias=True)
    fr = hc.frames(model, params, x)
    spec_y = flat_spec(hc.compressed_zero(model, params))
    spec_p = flat_spec(params)
    rng = np.random.default_rng(1)
    y = spec_y.unravel(jnp.asarray(rng.standard_normal(spec_y.size)))
    u = spec_p.unravel(jnp.asarray(rng.standard_normal(spec_p.size)))
    lhs = float(tree_dot(hc.lift(y, model, params, fr), u))
    rhs = float(tree_dot(y, hc.compress(u, model, params, fr)))
    assert lhs == pytest.approx(rhs, rel=1e-12)
    # the gradient lies in the range: compress ∘ lift reproduces its coordinates exactly
    g = jax.grad(_full_fn(model, x))(params)
    back = hc.lift(hc.compress(g, model, params, fr), model, params, fr)
    assert float(tree_norm(tree_sub(back, g))) <= 1e-12 * float(tree_norm(g))


def test_compressed_output_at_zero_is_the_network_output(x64):
    model, params, x = _net("resnet", seed=5)
    fr = hc.frames(model, params, x)
    y0 = hc.compressed_zero(model, params)
    assert float(hc.compressed_output(y0, model, params, x, fr)) == pytest.approx(float(model.apply(params, x[None])[0]))


METHODS = [("compressed-numpy", "arpack"), ("compressed", "arpack"), ("compressed", "dense"), ("compressed", "lanczos"),
           ("full", "arpack"), ("full", "lanczos")]


@pytest.mark.parametrize("operator,method", METHODS)
def test_hessian_norm_methods_match_dense_eigvalsh(x64, operator, method):
    model, params, x = _net("mlp", seed=6, width=6)
    ref = hessian.dense_spectral_norm(_full_fn(model, x), params)
    h = nb.hessian_spectral_norm(hessian.at_input(model.apply, x), params, operator=operator, method=method, tol=1e-10,
                                 key=jax.random.key(0))
    assert h.value == pytest.approx(ref, rel=1e-7)
    assert h.converged
    # the eigenvector is a unit eigenvector of the full Hessian
    u = h.eigenvector
    assert float(tree_norm(u)) == pytest.approx(1.0, rel=1e-6)
    hu = hessian.hvp(_full_fn(model, x), params, u)
    assert float(tree_dot(u, hu)) == pytest.approx(h.eigenvalue, rel=1e-6)
    assert hc.kernel_at_input(model, params, x) == pytest.approx(
        float(tree_norm(jax.grad(_full_fn(model, x))(params)) ** 2), rel=1e-10)


def test_hessian_norm_warm_start_and_cnn_fallback(x64):
    model, params, x = _net("resnet", seed=7)
    h = nb.hessian_spectral_norm(hessian.at_input(model.apply, x), params, operator="auto", method="arpack", tol=1e-10)
    warm = nb.hessian_spectral_norm(hessian.at_input(model.apply, x), params, operator="auto", method="arpack",
                                    tol=1e-10, start=h.eigenvector)
    assert warm.value == pytest.approx(h.value, rel=1e-8)
    cmodel, cparams = conv_net(jax.random.key(1), (2, 3), spatial=(4, 4), dtype=jnp.float64)
    img = jax.random.normal(jax.random.key(2), (4, 4), jnp.float64)
    ref = hessian.dense_spectral_norm(lambda p: cmodel.apply(p, img[None])[0], cparams)
    hc_ = nb.hessian_spectral_norm(hessian.at_input(cmodel.apply, img), cparams, operator="auto", method="arpack",
                                   tol=1e-10)
    assert hc_.method == "arpack" and hc_.value == pytest.approx(ref, rel=1e-7)
    with pytest.raises(ValueError, match="operator='compressed'"):
        nb.hessian_spectral_norm(hessian.at_input(cmodel.apply, img), cparams, operator="compressed")


def test_hessian_norm_validation():
    model, params = models.mlp(jax.random.key(0), (4, 4), input_dim=2)
    with pytest.raises(ValueError, match="method"):
        nb.hessian_spectral_norm(hessian.at_input(model.apply, jnp.ones(2)), params, operator="auto", method="eig")
    with pytest.raises(ValueError, match="x"):
        nb.hessian_spectral_norm(hessian.at_input(model.apply, jnp.ones(3)), params, operator="auto")
    with pytest.raises(TypeError, match="model"):
        hc.frames(object(), params, jnp.ones(2))
    two, p2 = models.mlp(jax.random.key(0), (4,), input_dim=2, output_dim=2)
    with pytest.raises(ValueError, match="scalar output"):
        nb.hessian_spectral_norm(hessian.at_input(two.apply, jnp.ones(2), output=0), p2, operator="compressed")


def test_unit_scale_input_norm():
    x = unit_scale_input(jax.random.key(0), 7)
    assert float(jnp.linalg.norm(x)) == pytest.approx(math.sqrt(7), rel=1e-6)
    with pytest.raises(ValueError, match="d"):
        unit_scale_input(jax.random.key(0), 0)


# ---------------------------------------------------------------------------------------------
# Structured layer norms, bounds
# ---------------------------------------------------------------------------------------------


def test_structured_norms_match_autodiff_tensors_and_norm_221(x64):
    rows = dh.structured_norms_check(jax.random.key(0), width=5, depth=3, input_dim=3)
    assert {r["model"] for r in rows} == {"MLP", "ResNet"}
    for r in rows:
        assert r["exact"]
        assert r["formula"] == pytest.approx(r["reference"], rel=1e-9, abs=1e-12), r


@pytest.mark.parametrize("kind", ["mlp", "resnet"])
def test_layer_factors_against_layer_tensors(x64, kind):
    model, params, x = _net(kind, seed=8, width=6)
    f = layer_norms.layer_factors(model, params, x)
    t = layer_norms.layer_tensors(model, params, x, 2)
    assert f["jw"][1] == pytest.approx(np.linalg.norm(t["jw"], 2), rel=1e-10)
    assert f["ja"][1] == pytest.approx(np.linalg.norm(t["ja"], 2), rel=1e-10)
    assert np.isnan(f["ja"][0]) and np.isnan(f["taw"][0])
    # b_inf is ‖∂f/∂α⁽ˡ⁾‖_∞ by autodiff through the shifts of the layer outputs
    bp = hc.base_pass(model, params, x)
    assert f["b_inf"][2] == pytest.approx(np.abs(np.asarray(model.fixed_v if model.fixed_v is not None
                                                             else params["v"])[:, 0]).max() / math.sqrt(6))
    np.testing.assert_allclose(f["b_two"], [np.linalg.norm(b) for b in bp.b], rtol=1e-12)
    with pytest.raises(ValueError, match="layer"):
        layer_norms.layer_tensors(model, params, x, 4)


def test_top_eigenvalue_dense_and_arpack_paths_agree(x64):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((600, 600))
    ref = np.linalg.norm(a, 2)
    assert layer_norms.largest_singular_value(a) == pytest.approx(ref, rel=1e-10)  # ARPACK path (n > 512)
    assert layer_norms.largest_singular_value(a[:100, :100]) == pytest.approx(np.linalg.norm(a[:100, :100], 2), rel=1e-12)


@pytest.mark.parametrize("depth,train", [(2, False), (3, True), (4, True)])
def test_bounds_dominate_hessian_and_are_ordered(x64, depth, train):
    model, p0, x = _net("mlp", seed=9, width=6, depth=depth, train_output=train)
    for p in (p0, point_on_sphere(jax.random.key(3), p0, 3.0)):
        f = layer_norms.layer_factors(model, p, x)
        b = dh.hessian_bounds(f, include_v=train)
        h = hessian.dense_spectral_norm(_full_fn(model, x), p)
        assert h <= b["blockwise"] * (1 + 1e-10)
        assert b["blockwise"] <= b["lemma_e1"] * (1 + 1e-12)
        assert b["lemma_e1"] <= b["theorem_3_1"] * (1 + 1e-12)
        # the a-priori layer-Jacobian bound (Lemma G.2) dominates the exact norms
        prior = layer_norms.a_priori_layer_jacobian(model, p0, p)
        assert np.all(f["ja"][1:] <= prior[1:] * (1 + 1e-12))
        if depth == 2 and not train:
            assert dh.eq_17_terms(f)["eq_17"] == pytest.approx(b["lemma_e1"], rel=1e-12)


def test_block_bounds_dominate_each_dense_block(x64):
    model, params, x = _net("mlp", seed=10, width=5, depth=3)
    f = layer_norms.layer_factors(model, params, x)
    beta = dh.block_bounds(f, include_v=True)
    full = np.asarray(hessian.dense_hessian(_full_fn(model, x), params), dtype=np.float64)
    sizes = [params["layers"][i]["W"].size for i in range(3)] + [params["v"].size]  # leaf order: layers, v
    edges = np.cumsum([0, *sizes])
    for i in range(4):
        for j in range(4):
            blk = full[edges[i]:edges[i + 1], edges[j]:edges[j + 1]]
            assert np.linalg.norm(blk, 2) <= beta[i, j] * (1 + 1e-10) + 1e-14


def test_theorem_3_1_quantities_closed_form():
    f = {"jw": np.array([2.0, 1.0]), "ja": np.array([np.nan, 0.5]), "tww": np.array([0.1, 0.2]),
         "taw": np.array([np.nan, 0.3]), "taa": np.array([np.nan, 0.4]), "b_inf": np.array([0.05, 0.02]),
         "width": np.array([4.0, 4.0])}
    q = dh.theorem_3_1_quantities(f)
    assert q["Q_inf"] == 0.05 and q["Q_L"] == 2.0 and q["L_phi"] == 1.0
    # candidates: tww 0.1, 0.2; jw1·taw2 = 0.6; jw1·jw1·taa2 = 1.6, jw1·jw2·taa2 = 0.8, jw2 jw2 taa2 = 0.4
    assert q["Q_221"] == pytest.approx(1.6)
    assert q["C1"] == 2 * (4 + 2 + 1) and q["C2"] == 2
    terms = dh.eq_17_terms(f)
    assert terms["eq_17"] == pytest.approx(4 * 0.4 * 0.02 + 2 * 2 * 0.3 * 0.02 + 0.2 * 0.02 + 0.1 * 0.05)
    with pytest.raises(ValueError, match="L = 2"):
        dh.eq_17_terms({k: np.append(v, 1.0) for k, v in f.items()})


def test_worst_per_network():
    rows = {"depth": np.array([2, 2, 2, 3]), "width": np.array([8, 8, 16, 8]), "seed": np.zeros(4),
            "hessian": np.array([1.0, 3.0, 2.0, 5.0])}
    w = dh.worst_per_network(rows, ["hessian"])
    assert sorted(w["hessian"].tolist()) == [2.0, 3.0, 5.0]


# ---------------------------------------------------------------------------------------------
# Ascent in the ball, projection, gradient descent
# ---------------------------------------------------------------------------------------------


def test_eigenvalue_gradient_is_the_derivative_of_the_rayleigh_quotient(x64):
    model, params, x = _net("mlp", seed=11, width=4)
    spec = flat_spec(params)
    rng = np.random.default_rng(2)
    u = spec.unravel(jnp.asarray(rng.standard_normal(spec.size)))
    d = spec.unravel(jnp.asarray(rng.standard_normal(spec.size)))
    fn = _full_fn(model, x)
    value, grad = hessian.eigenvalue_gradient(model, params, x, u)
    assert value == pytest.approx(float(tree_dot(u, hessian.hvp(fn, params, u))), rel=1e-12)
    eps = 1e-5

    @jax.jit
    def rq_jit(p):
        return tree_dot(u, jax.jvp(jax.grad(fn), (p,), (u,))[1])

    def rq(p):
        return float(rq_jit(p))

    fd = (rq(jax.tree_util.tree_map(lambda a, b: a + eps * b, params, d))
          - rq(jax.tree_util.tree_map(lambda a, b: a - eps * b, params, d))) / (2 * eps)
    assert float(tree_dot(grad, d)) == pytest.approx(fd, rel=1e-6)


def test_project_to_ball(x64):
    _, params, _ = _net("mlp", seed=12, width=4)
    far = point_on_sphere(jax.random.key(0), params, 5.0)
    proj = project_to_ball(far, params, 2.0)
    assert float(tree_norm(tree_sub(proj, params))) == pytest.approx(2.0, rel=1e-12)
    # the projection is along the ray: proj − W0 = (2/5)(far − W0)
    diff = tree_sub(tree_sub(proj, params), jax.tree_util.tree_map(lambda a: 0.4 * a, tree_sub(far, params)))
    assert float(tree_norm(diff)) <= 1e-12
    inside = point_on_sphere(jax.random.key(1), params, 1.0)
    assert float(tree_norm(tree_sub(project_to_ball(inside, params, 2.0), inside))) == 0.0
    with pytest.raises(ValueError, match="radius"):
        project_to_ball(far, params, -1.0)


def test_ascend_hessian_norm_increases_within_the_ball(x64):
    model, params, x = _net("mlp", seed=13, width=6)
    res = hessian.ascend_hessian_norm(model, params, x, 2.0, steps=3, tol=1e-10)
    assert res["distance"] <= 2.0 * (1 + 1e-12)
    assert res["value"] >= res["start_value"]
    assert all(b > a for a, b in zip([res["start_value"], *res["history"]], res["history"], strict=False))
    ref = hessian.dense_spectral_norm(_full_fn(model, x), res["params"])
    assert res["value"] == pytest.approx(ref, rel=1e-7)
    assert res["evaluations"] >= 1 + len(res["history"])


def test_gd_checkpoints_match_a_plain_loop(x64):
    model, params, _ = _net("mlp", seed=14, width=4, d=2)
    xs = jax.random.normal(jax.random.key(1), (5, 2), jnp.float64)
    ys = jnp.sin(xs[:, 0])
    lr = 0.3
    out = db.gd_checkpoints(model, params, xs, ys, lr=lr, steps=6, checkpoints=3)

    def loss(p):
        return 0.5 * jnp.mean((model.apply(p, xs) - ys) ** 2)

    step = jax.jit(lambda p: jax.tree_util.tree_map(lambda a, g: a - lr * g, p, jax.grad(loss)(p)))
    p, losses = params, []
    for _ in range(6):
        losses.append(float(loss(p)))
        p = step(p)
    np.testing.assert_allclose(out["losses"], losses, rtol=1e-12)
    assert out["times"] == [2, 4, 6] and len(out["points"]) == 3
    assert float(tree_norm(tree_sub(out["points"][-1], p))) <= 1e-12
    assert out["distances"][-1] == pytest.approx(float(tree_norm(tree_sub(p, params))), rel=1e-12)
    assert out["final_loss"] == pytest.approx(float(loss(p)), rel=1e-12)
    with pytest.raises(ValueError, match="multiple"):
        db.gd_checkpoints(model, params, xs, ys, lr=lr, steps=5, checkpoints=3)


# ---------------------------------------------------------------------------------------------
# The chapter's sweeps at tiny sizes (they run, have the documented columns, and their invariants hold)
# ---------------------------------------------------------------------------------------------


def test_proposition_3_1_rows_are_ordered():
    # (compression_check is the chapter's claims lemma-3-range/compressed-equals-dense-hessian and
    # .../compressed-equals-full-lanczos at ci; the compressed Hessian is tested against dense references above)
    p31 = dh.proposition_3_1(scales.get("prop_3_1", "ci").replace(widths=(8,), seeds=1, input_dim=3, activation="tanh"), jax.random.key(1))
    assert np.all(p31["hessian"] <= p31["blockwise"] * (1 + 1e-5))
    assert np.all(p31["blockwise"] <= p31["eq_17"] * (1 + 1e-9))


# ---------------------------------------------------------------------------------------------
# deep_hessian_ball
# ---------------------------------------------------------------------------------------------


# one network: the invariants below hold row by row (the chapter sweeps the widths)
BALL = scales.get("thm_3_2", "ci").replace(depth=2, widths=(8,), seeds=1, radii=(0.5, 2.0), sphere_points=1,
                                         ascent_steps=1, num_train=4, gd_steps=4, gd_checkpoints=2, input_dim=3,
                                         activation="tanh", tol=1e-6)


def test_ball_sweep_and_table():
    rows = db.ball_sweep(BALL, jax.random.key(0))
    assert [r["width"] for r in rows] == [8]
    tab = db.ball_table(rows)
    for r in BALL.radii:
        ball = tab[f"ball_max[{r:g}]"]
        assert np.all(ball >= tab["h0"]) and np.all(ball >= tab[f"sphere_max[{r:g}]"])
        assert np.all(ball >= tab[f"ascent[{r:g}]"])
        assert np.all(tab[f"ascent_distance[{r:g}]"] <= r * (1 + 1e-5))
    # nested balls: the ascent in the larger ball starts at the maximizer of the smaller one
    assert np.all(tab["ascent[2]"] >= tab["ascent[0.5]"] * (1 - 1e-5))
    assert np.all(tab["gd_loss_ratio"] < 1)  # lr = n/λ_max(K): the loss decreases
    with pytest.raises(ValueError, match="radii"):
        db.ball_sweep(BALL.replace(widths=(8,), radii=(2.0, 1.0)), jax.random.key(0))


def test_ball_table_on_synthetic_rows():
    row = {"radii": [1.0], "width": 8, "seed": 0, "h0": 1.0, "k0": 2.0, "gd_hessian": [1.5, 4.0],
           "gd_distance": [0.5, 3.0], "gd_max_distance": 3.0, "gd_loss": [1.0, 0.25], "gd_kernel": [2.2, 1.8],
           "ascent_kernel": [3.0], "sphere": [[1.2]], "ascent": [1.4], "ascent_distance": [1.0]}
    tab = db.ball_table([row])
    assert tab["ball_max[1]"][0] == 1.5  # the GD point at distance 3 is outside the ball of radius 1
    assert tab["gd_max"][0] == 4.0 and tab["gd_loss_ratio"][0] == 0.25
    assert tab["k_max_rel_change"][0] == pytest.approx(0.5)
    assert tab["gd_k_rel_change"][0] == pytest.approx(0.1)  # GD checkpoints only: |2.2/2 − 1|
    assert tab["k_min"][0] == 1.8


def test_min_width_sweep_rows():
    out = db.min_width_sweep(scales.get("thm_3_3", "ci").replace(depth=2, base=16, narrow=(4, 8), seeds=1, input_dim=3,
                                                             activation="tanh", tol=1e-6), jax.random.key(0))
    assert out["layer"].tolist() == [0, 0, 1, 1, 2, 2]
    assert out["min_width"].tolist() == [4, 8] * 3
    assert np.all(out["hessian"] > 0) and np.all(out["kernel"] > 0)


def test_digit_image_standardized():
    img = digits.image(3)
    assert img.shape == (8, 8) and img.dtype == np.float32
    assert abs(float(img.mean())) < 1e-6 and float(img.std()) == pytest.approx(1.0, rel=1e-5)
    with pytest.raises(ValueError, match="index"):
        digits.image(-1)


def test_architecture_and_activation_sweeps():
    arch = db.architecture_sweep(scales.get("cnn_resnet", "ci").replace(
        cnn_widths=(2,), cnn_depth=1, resnet_widths=(8,), resnet_depth=2, seeds=1, radius=1.0, image=0, input_dim=3,
        tol=1e-6), jax.random.key(0))
    assert arch["architecture"].tolist() == ["cnn", "resnet"]
    assert arch["params"].tolist() == [9 * 2 + 64 * 2, 8 * 3 + 64 + 8]
    assert np.isnan(arch["kernel"][0]) and arch["kernel"][1] > 0
    act = db.activation_sweep(scales.get("activations_3", "ci").replace(
        activations=("tanh", "softplus"), widths=(8,), depth=2, seeds=1, radius=1.0, ascent_steps=1, input_dim=3,
        tol=1e-6, factor_max_width=8), jax.random.key(0))
    assert np.all(act["ascent"] >= act["h0"] * (1 - 1e-6)) and np.all(act["L_phi"] > 0)


def test_segment_defect_smooth_vs_relu(x64):
    model, p0, x = _net("mlp", seed=16, width=8)
    p1 = point_on_sphere(jax.random.key(0), p0, 2.0)
    smooth = db.segment_defect(model, p0, p1, x, nodes=24)
    assert smooth["defect"] < 1e-8  # Gauss–Legendre on an analytic integrand
    g0 = jax.grad(_full_fn(model, x))(p0)
    g1 = jax.grad(_full_fn(model, x))(p1)
    assert smooth["gradient_change"] == pytest.approx(float(tree_norm(tree_sub(g1, g0))), rel=1e-10)
    k0, k1 = float(tree_norm(g0) ** 2), float(tree_norm(g1) ** 2)
    assert smooth["kernel_change"] == pytest.approx(abs(k1 - k0) / k0, rel=1e-10)
    rmodel, rp0, _ = _net("mlp", seed=16, width=8, activation="relu")
    rp1 = point_on_sphere(jax.random.key(0), rp0, 2.0)
    assert db.segment_defect(rmodel, rp0, rp1, x, nodes=24)["defect"] > 0.05


# ---------------------------------------------------------------------------------------------
# Models: CNN (Eq. 90–93) and ResNet (Eq. 97) against NumPy forward passes
# ---------------------------------------------------------------------------------------------


def _numpy_conv(a, w):
    """'same' convolution (cross-correlation) of (n, H, W, c) images with (kh, kw, c, o) filters / √(K c)."""
    kh, kw, c, o = w.shape
    n, hh, ww, _ = a.shape
    pad = np.zeros((n, hh + kh - 1, ww + kw - 1, c))
    pad[:, kh // 2:kh // 2 + hh, kw // 2:kw // 2 + ww] = a
    out = np.zeros((n, hh, ww, o))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nhwc,co->nhwo", pad[:, i:i + hh, j:j + ww], w[i, j])
    return out / math.sqrt(kh * kw * c)


def test_conv_net_matches_numpy(x64):
    model, params = conv_net(jax.random.key(0), (3, 4), spatial=(5, 6), kernel_size=(3, 1), input_channels=2,
                             dtype=jnp.float64)
    x = np.asarray(jax.random.normal(jax.random.key(1), (2, 5, 6, 2), jnp.float64))
    a = x
    for layer in params["layers"]:
        a = np.tanh(_numpy_conv(a, np.asarray(layer["W"])))
    flat = a.reshape(2, -1)
    ref = flat @ np.asarray(params["v"])[:, 0] / math.sqrt(flat.shape[1])
    np.testing.assert_allclose(model.apply(params, x), ref, rtol=1e-12)
    np.testing.assert_allclose(conv(jnp.asarray(x), params["layers"][0]["W"]),
                               _numpy_conv(x, np.asarray(params["layers"][0]["W"])), rtol=1e-12)
    assert model.pixels == 30 and model.depth == 2
    # one input channel: (n, H, W) inputs are accepted
    m1, p1 = conv_net(jax.random.key(0), 2, spatial=(4,), dtype=jnp.float64)
    assert m1.apply(p1, np.ones((3, 4))).shape == (3,)


def test_conv_net_validation():
    with pytest.raises(ValueError, match="odd"):
        conv_net(jax.random.key(0), 2, kernel_size=2)
    with pytest.raises(ValueError, match="kernel_size"):
        conv_net(jax.random.key(0), 2, spatial=(4, 4), kernel_size=(3,))
    model, params = conv_net(jax.random.key(0), 2, spatial=(4, 4))
    with pytest.raises(ValueError, match="x"):
        model.apply(params, np.ones((1, 5, 4)))
    fixed, pf = conv_net(jax.random.key(0), 2, spatial=(4, 4), train_output=False)
    assert "v" not in pf and fixed.fixed_v.shape == (32, 1)


def test_resnet_matches_numpy(x64):
    model, params = resnet(jax.random.key(0), 5, 3, input_dim=2, dtype=jnp.float64)
    x = np.asarray(jax.random.normal(jax.random.key(1), (4, 2), jnp.float64))
    ws = [np.asarray(layer["W"]) for layer in params["layers"]]
    a = np.tanh(x @ ws[0].T / math.sqrt(2))
    for w in ws[1:]:
        a = np.tanh(a @ w.T / math.sqrt(5)) + a
    ref = a @ np.asarray(params["v"])[:, 0] / math.sqrt(5)
    np.testing.assert_allclose(model.apply(params, x), ref, rtol=1e-12)
    assert model.width == 5 and model.depth == 3 and model.widths == (5, 5, 5)
    with pytest.raises(ValueError, match="width"):
        resnet(jax.random.key(0), 0, 2)


def test_lemma_f3_bounds_by_hand():
    b = layer_norms.lemma_f3_bounds(3, 16, 2.0, 4.0, 1.5, 0.5, math.log(2))
    q = 2.0 + 4.0 / 4.0  # c₀ + R/√m
    first = [(1.5 * q) ** layer * 4.0 * 0.5 for layer in (1, 2, 3)]
    sums = [1.0, 1.0 + 1.5 * q, 1.0 + 1.5 * q + (1.5 * q) ** 2]
    np.testing.assert_allclose(b["printed"], [f + s * math.log(2) for f, s in zip(first, sums)], rtol=1e-14)
    np.testing.assert_allclose(b["corrected"], [f + s * 4.0 * math.log(2) for f, s in zip(first, sums)], rtol=1e-14)
    # residual layers (Lemma G.5): B₁ as above, then B_l = (1 + 𝖫_σq)·B_{l−1} + √m|σ(0)|
    r = layer_norms.lemma_f3_bounds(3, 16, 2.0, 4.0, 1.5, 0.5, -math.log(2), skip=True)["corrected"]
    o = 4.0 * math.log(2)
    b1 = 1.5 * q * 4.0 * 0.5 + o
    np.testing.assert_allclose(r, [b1, (1 + 1.5 * q) * b1 + o, (1 + 1.5 * q) ** 2 * b1 + (2 + 1.5 * q) * o], rtol=1e-14)
    with pytest.raises(ValueError, match="depth"):
        layer_norms.lemma_f3_bounds(0, 16, 2.0, 4.0, 1.5, 0.5, 0.0)


def test_activation_tail_probability_closed_forms():
    from scipy.stats import norm

    for s, t in ((1.0, 3.0), (0.4, 2.5), (2.0, 1.0)):
        assert dh.activation_tail_probability("relu", s, t) == pytest.approx(norm.sf(t / s), rel=1e-10)
        b = math.log(math.expm1(t))  # softplus(b) = t
        assert dh.activation_tail_probability("softplus", s, t) == pytest.approx(norm.sf(b / s), rel=1e-9)
        # tanh: |tanh| < 1, so no unit reaches t ≥ 1; below 1 both tails count
    assert dh.activation_tail_probability("tanh", 1.0, 1.0) == 0.0
    assert dh.activation_tail_probability("tanh", 1.0, 0.5) == pytest.approx(2 * norm.sf(math.atanh(0.5)), rel=1e-9)


def _forward_by_hand(params, x, act):
    """α⁽¹⁾, …, α⁽ᴸ⁾ of the NTK-parameterized MLP without biases, written out in NumPy."""
    a, out = np.asarray(x, dtype=np.float64), []
    for layer in params["layers"]:
        w = np.asarray(layer["W"], dtype=np.float64)
        a = act(w @ a / math.sqrt(w.shape[1]))
        out.append(a)
    return out


def test_hidden_layer_norms_against_a_hand_written_forward_pass():
    from ntkbook.activations import get_activation
    from ntkbook.models import mlp

    cfg = scales.get("hidden_layers", "ci").replace(activations=("softplus",), depths=(2,), widths=(8,), seeds=1,
                                                    input_dim=3, radii=(1.0,), sphere_points=1)
    key = jax.random.key(4)
    rows = dh.hidden_layer_norms(cfg, key)
    with jax.enable_x64(True):
        _, p0 = mlp(jax.random.fold_in(key, 100_000 * 2 + 8), (8, 8), input_dim=3, activation="softplus",
                    dtype=jax.numpy.float64)
        x = np.asarray(dh.unit_scale_input(jax.random.fold_in(key, 7), 3, dtype=jax.numpy.float64))
    soft = lambda z: get_activation("softplus").numpy(z, 0)  # noqa: E731
    at_w0 = (rows["input"] == "x") & (rows["radius"] == 0)
    np.testing.assert_allclose(rows["norm"][at_w0], [np.linalg.norm(a) for a in _forward_by_hand(p0, x, soft)],
                               rtol=1e-12)
    zero = (rows["input"] == "0") & (rows["layer"] == 1)
    assert rows["norm"][zero][0] == pytest.approx(math.sqrt(8) * math.log(2), rel=1e-14)
    assert rows["corrected"][zero][0] == pytest.approx(math.sqrt(8) * math.log(2), rel=1e-14)
    assert rows["printed"][zero][0] == pytest.approx(math.log(2), rel=1e-14)
    assert np.all(rows["norm"] <= rows["corrected"] * (1 + 1e-12))
    c0 = max(np.linalg.norm(np.asarray(w), 2) for w in [*(lay["W"] for lay in p0["layers"]), p0["v"]]) / math.sqrt(8)
    np.testing.assert_allclose(rows["c0"], c0, rtol=1e-12)


def test_activation_tails_scales_and_probabilities():
    cfg = scales.get("hidden_layers", "ci").replace(activations=("relu",), depths=(3,), widths=(64,), seeds=1)
    rows = dh.activation_tails(cfg, jax.random.key(5))
    assert rows["layer"].tolist() == [1, 2, 3]
    assert rows["scale"][0] == pytest.approx(1.0, rel=1e-12)  # ‖x‖ = √d: the first pre-activation is N(0, 1)
    assert np.all(rows["p_exact"] <= rows["p_bound"])
    assert np.all(rows["threshold"] == math.log(64))  # ReLU: σ(0) = 0
    assert np.all((rows["ks_pvalue"] > 0) & (rows["ks_pvalue"] <= 1))


def test_exceedance_counts_formula():
    rows = {"activation": np.array(["relu", "relu", "tanh"]), "width": np.array([10, 20, 10]),
            "exceed": np.array([1, 2, 0]), "p_exact": np.array([0.01, 0.02, 0.0]),
            "p_bound": np.array([0.1, 0.05, 2.5])}
    out = {r["activation"]: r for r in dh.exceedance_counts(rows)}
    assert out["relu"]["exceed"] == 3
    assert out["relu"]["expected"] == pytest.approx(10 * 0.01 + 20 * 0.02)
    mean = 10 * 0.1 + 20 * 0.05
    assert out["relu"]["allowed"] == pytest.approx(mean + 3 * math.sqrt(10 * 0.1 * 0.9 + 20 * 0.05 * 0.95))
    assert out["tanh"]["allowed"] == pytest.approx(10.0)  # a bound above 1 is capped at probability 1


def test_ball_quantities_and_chapter_tables_on_synthetic_sweeps():
    """The quantities the chapter's checks assert, against values computed by hand on a tiny table."""
    ball = {"width": np.array([16, 64]), "h0": np.array([0.5, 0.25]), "k_min": np.array([2.0, 4.0]),
            "ball_max[1]": np.array([1.0, 0.5])}
    ratio, excess = db.ratio_and_excess(ball, 1.0)
    np.testing.assert_array_equal(ratio, [0.5, 0.125])
    np.testing.assert_array_equal(excess, [0.5, 0.25])
    with pytest.raises(ValueError, match="ball_max\\[2\\]"):
        db.ratio_and_excess(ball, 2.0)
    with pytest.raises(TypeError, match="mapping"):
        db.ratio_and_excess([1.0], 1.0)
    arch = {"h0": np.array([1.0, 3.0]), "h_sphere": np.array([2.0, 1.0])}
    np.testing.assert_array_equal(db.architecture_hessian(arch), [2.0, 3.0])
    np.testing.assert_array_equal(db.activation_hessian({"h0": arch["h0"], "ascent": arch["h_sphere"]}), [2.0, 3.0])
    with pytest.raises(ValueError, match="h_sphere"):
        db.architecture_hessian({"h0": arch["h0"]})
    assert db.narrowed_labels(2) == {0: "all layers (uniform)", 1: "layer 1 only", 2: "layer 2 only"}
    with pytest.raises(ValueError, match="depth"):
        db.narrowed_labels(0)
    # min-width table: medians per (layer, m_j), exponent of an exact power law ‖H‖ = m_j^(−1/2)
    cfg = scales.get("thm_3_3", "ci")
    mw = {"layer": np.repeat(np.arange(cfg.depth + 1), len(cfg.narrow)),
          "narrow": np.tile(np.asarray(cfg.narrow, float), cfg.depth + 1)}
    mw["hessian"] = mw["narrow"] ** -0.5
    frame = db.min_width_table(mw, cfg).frame
    assert len(frame) == cfg.depth + 1
    np.testing.assert_allclose(frame["fitted exponent"].astype(float), -0.5, atol=1e-12)
    with pytest.raises(TypeError, match="Thm33"):
        db.min_width_table(mw, scales.get("thm_3_2", "ci"))


def test_compression_and_layer_norm_groupings():
    rows = [{"network": "MLP (float64)", "compressed": 1.0, "reference": 1.1},
            {"network": "MLP (float32)", "compressed": 2.0, "reference": 2.2},
            {"network": "ResNet (float64)", "compressed": 3.0, "reference": 3.3}]
    small, large = dh.split_by_precision(rows)
    assert small == {"compressed": [1.0, 3.0], "reference": [1.1, 3.3]}
    assert large == {"compressed": [2.0], "reference": [2.2]}
    with pytest.raises(ValueError, match=r"rows\[0\] lacks the field\(s\) 'reference'"):
        dh.split_by_precision([{"network": "x", "compressed": 1.0}])
    with pytest.raises(TypeError, match="sequence of rows"):
        dh.split_by_precision(rows[0])
    q71, q73 = "‖∂α/∂W‖", "‖∂²α/∂α⁻²‖₂₂₁"
    norm_rows = [{"model": "MLP", "quantity": q71, "formula": 1.0, "reference": 1.0, "exact": True},
                 {"model": "MLP", "quantity": q73, "formula": 2.0, "reference": 2.0, "exact": True},
                 {"model": "MLP", "quantity": q73, "formula": 5.0, "reference": 9.0, "exact": False},
                 {"model": "ResNet", "quantity": q71, "formula": 3.0, "reference": 3.0, "exact": True}]
    groups = {(model, eq): (f, r) for model, eq, f, r in dh.layer_norm_groups(norm_rows)}
    assert [g[:2] for g in dh.layer_norm_groups(norm_rows)] == [
        ("MLP", "Eq. 69"), ("MLP", "Eq. 71"), ("MLP", "Eq. 73"), ("MLP", "Eq. 74"), ("MLP", "Eq. 75"),
        ("ResNet", "Eq. 101")]
    assert groups["MLP", "Eq. 71"] == ([1.0], [1.0])
    assert groups["MLP", "Eq. 73"] == ([2.0], [2.0])  # the row not certified exact is left out
    assert groups["ResNet", "Eq. 101"] == ([3.0], [3.0])
    assert groups["MLP", "Eq. 69"] == ([], [])


def test_lemma_3_1_table_windows_and_exponents():
    widths = np.array([16.0, 64.0, 256.0])
    worst = {"depth": np.full(3, 2), "width": widths, "Q_inf": widths**-0.5, "Q_L": np.ones(3),
             "Q_221": 2 * np.ones(3), "blockwise": widths**-0.4}
    frame = dh.lemma_3_1_table(worst, (2,)).frame
    assert list(frame["quantity"]) == list(dh.LEMMA_3_1_ORDERS)
    np.testing.assert_allclose(frame["fitted exponent"].astype(float), [-0.5, 0.0, 0.0, -0.4], atol=1e-12)
    assert list(frame["window"]) == ["[-2, -0.25)", "[-0.25, 0.25)", "[-0.25, 0.25)", "[-2, -0.25)"]
    with pytest.raises(ValueError, match="Q_221"):
        dh.lemma_3_1_table({k: v for k, v in worst.items() if k != "Q_221"}, (2,))


# ---------------------------------------------------------------------------------------------
# App. F.4: the backward vectors b⁽ˡ⁾ = ∂f/∂α⁽ˡ⁾ (Lemma F.5, Eq. 80–89)
# ---------------------------------------------------------------------------------------------


def _tail_by_hand(params, layer, a, act):
    """f as a function of α⁽ˡ⁾ (NumPy float64): the layers l+1..L and the output layer of Eq. 22."""
    a = np.asarray(a, dtype=np.float64)
    for lay in params["layers"][layer:]:
        w = np.asarray(lay["W"], dtype=np.float64)
        a = act(w @ a / math.sqrt(w.shape[1]))
    v = np.asarray(params["v"], dtype=np.float64)[:, 0]
    return float(a @ v) / math.sqrt(v.size)


@pytest.mark.parametrize("activation", ["softplus", "tanh"])
def test_backward_vectors_autodiff_against_the_recursion_and_finite_differences(x64, activation):
    from ntkbook.activations import get_activation

    model, params, x = _net("mlp", seed=3, width=(5, 7, 4), d=3, activation=activation)
    auto = [np.asarray(b) for b in dh.backward_vectors(model, params, x)]
    assert [b.shape for b in auto] == [(5,), (7,), (4,)]
    recursion = hc.base_pass(model, params, x).b  # b⁽ˡ⁻¹⁾ = W⁽ˡ⁾ᵀ(σ' ⊙ b⁽ˡ⁾)/√m, written out in NumPy
    for a, r in zip(auto, recursion, strict=True):
        np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-15)
    act = lambda z: get_activation(activation).numpy(z, 0)  # noqa: E731
    alphas = _forward_by_hand(params, x, act)
    assert _tail_by_hand(params, 3, alphas[2], act) == pytest.approx(float(model.apply(params, x[None])[0]),
                                                                     rel=1e-13)
    h = 1e-6
    for layer, (alpha, b) in enumerate(zip(alphas, auto, strict=True), start=1):
        fd = [(_tail_by_hand(params, layer, alpha + h * e, act) - _tail_by_hand(params, layer, alpha - h * e, act))
              / (2 * h) for e in np.eye(alpha.size)]
        np.testing.assert_allclose(b, fd, rtol=0, atol=1e-8)


@pytest.mark.parametrize("activation,train", [("softplus", True), ("tanh", False), ("relu", True)])
def test_backward_vector_gradient_matches_autodiff(x64, activation, train):
    model, params, x = _net("mlp", seed=5, width=(6, 5, 4), d=3, activation=activation, train_output=train)
    b_all = jax.jit(lambda p: jnp.concatenate(dh.backward_vectors(model, p, x)))
    jac = jax.jit(jax.jacrev(lambda p: jnp.concatenate(dh.backward_vectors(model, p, x))))(params)  # autodiff
    b, start = np.asarray(b_all(params)), 0
    for layer in (1, 2, 3):
        size = model.widths[layer - 1]
        r = np.asarray(jax.random.normal(jax.random.key(layer), (size,), jnp.float64))
        psi, grad = dh.backward_vector_gradient(model, params, x, layer, r)
        assert psi == pytest.approx(float(r @ b[start:start + size]), rel=1e-12)
        ref = jax.tree_util.tree_map(lambda j, r=r, start=start, size=size: np.tensordot(
            r, np.asarray(j)[start:start + size], axes=1), jac)
        assert jax.tree_util.tree_structure(grad) == jax.tree_util.tree_structure(ref)
        for g, want in zip(jax.tree_util.tree_leaves(grad), jax.tree_util.tree_leaves(ref), strict=True):
            np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-13)
        start += size


def test_ascend_backward_vector_reaches_the_closed_form_and_stays_on_the_sphere(x64):
    model, p0, x = _net("mlp", seed=7, width=(16, 16), d=3, activation="softplus")
    start = point_on_sphere(jax.random.key(11), p0, 1.5)
    b0 = hc.base_pass(model, p0, x).b
    # l = L: sup over the sphere of ‖v − v₀‖/√m is R/√m (all of R in v), reached in one step
    _, top = dh.ascend_backward_vector(model, p0, x, start, layer=2, norm="two", steps=3)
    assert top == pytest.approx(1.5 / 4.0, rel=1e-12)
    for norm, measure in (("two", lambda b, b0: np.linalg.norm(b - b0)), ("inf", lambda b, b0: np.abs(b).max())):
        point, value = dh.ascend_backward_vector(model, p0, x, start, layer=1, norm=norm, steps=6)
        dist = math.sqrt(sum(float(np.sum((np.asarray(a) - np.asarray(b)) ** 2))
                             for a, b in zip(jax.tree_util.tree_leaves(point), jax.tree_util.tree_leaves(p0))))
        assert dist == pytest.approx(1.5, rel=1e-12)
        b_point = hc.base_pass(model, point, x).b[0]
        assert value == pytest.approx(measure(b_point, b0[0]), rel=1e-12)
        assert value >= measure(hc.base_pass(model, start, x).b[0], b0[0])  # never worse than the start
    with pytest.raises(ValueError, match="norm"):
        dh.ascend_backward_vector(model, p0, x, start, layer=1, norm="one")
    with pytest.raises(ValueError, match="start"):
        dh.ascend_backward_vector(model, p0, x, p0, layer=1)
    with pytest.raises(ValueError, match="layer"):
        dh.ascend_backward_vector(model, p0, x, start, layer=3)
    with pytest.raises(ValueError, match="cotangent"):
        dh.backward_vector_gradient(model, p0, x, 1, np.ones(3))
    res, rp, rx = _net("resnet", seed=1)
    with pytest.raises(TypeError, match="MLP"):
        dh.backward_vectors(res, rp, rx)
    biased, bp_, bx = _net("mlp", seed=1, use_bias=True)
    with pytest.raises(ValueError, match="biases"):
        dh.backward_vectors(biased, bp_, bx)


def test_lemma_f5_and_eq_85_87_bounds_by_hand():
    np.testing.assert_allclose(dh.lemma_f5_bounds(3, 16, 2.0, 4.0, 1.5), [1.5**2 * 3.0**3, 1.5 * 3.0**2, 3.0],
                               rtol=1e-14)
    np.testing.assert_allclose(dh.lemma_f5_bounds(2, 9, 2.0, 0.0, 1.0), [4.0, 2.0], rtol=1e-14)  # Eq. 81
    c0, r, lip, beta, c_x, s0, m = 2.0, 4.0, 1.5, 0.25, 0.5, math.log(2), 16
    b0 = np.array([0.1, 0.2, 0.3])
    out = dh.eq_85_87_bounds(3, m, c0, r, lip, beta, c_x, s0, b0)
    a = layer_norms.lemma_f3_bounds(3, m, c0, r, lip, c_x, s0)["corrected"]
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
        dh.eq_85_87_bounds(3, m, c0, r, lip, math.inf, c_x, s0, b0)
    with pytest.raises(ValueError, match="b0_inf"):
        dh.eq_85_87_bounds(2, m, c0, r, lip, beta, c_x, s0, b0)


def test_backward_vectors_in_ball_rows_bounds_and_tables():
    cfg = scales.get("hidden_layers", "ci").replace(activations=("softplus", "relu"), depths=(2,), widths=(8, 16),
                                                    seeds=1, input_dim=3, radii=(1.0, 2.0), sphere_points=1)
    key = jax.random.key(4)
    rows = dh.backward_vectors_in_ball(cfg, key, ascent_steps=3)
    point, act, layer = rows["point"], rows["activation"], rows["layer"]
    assert set(point[act == "relu"]) == {"W₀", "random", "first layer"}  # β_σ = ∞: no ascent
    assert set(point[act == "softplus"]) == set(dh.BALL_POINTS)
    # per network (2 layers): W₀, two random points, the first-layer point, three ascents for softplus
    assert np.sum(act == "softplus") == 2 * 2 * (1 + 2 + 1 + 3) and np.sum(act == "relu") == 2 * 2 * 4
    ascents = (act == "softplus") & np.char.startswith(point.astype(str), "ascent") & (layer == 1)
    assert sorted(zip(point[ascents][:3], rows["target"][ascents][:3])) == [
        ("ascent ‖b − b₀‖₂", 1), ("ascent ‖b − b₀‖₂", 2), ("ascent ‖b‖∞", 1)]
    assert np.all(rows["two"] <= rows["f5_bound"])
    smooth = act == "softplus"
    assert np.all(rows["delta"][smooth] <= rows["delta_bound"][smooth] * (1 + 1e-12))
    assert np.all(rows["diff"][smooth] <= rows["diff_bound"][smooth] * (1 + 1e-12))
    assert np.all(np.isnan(rows["diff_bound"][~smooth]))
    assert np.all(rows["diff"][point == "W₀"] == 0)
    first = (point == "first layer") & (layer == 1)
    np.testing.assert_allclose(rows["delta"][first], 2.0, rtol=1e-12)  # R‖x‖/√d with ‖x‖ = √d
    assert np.all(rows["delta"][first] > rows["first_step_printed"][first])  # the printed R·C_x/√d is smaller
    top = (point == "ascent ‖b − b₀‖₂") & (rows["target"] == 2) & (layer == 2)  # on the smallest sphere, R = 1
    assert np.all(rows["radius"][np.char.startswith(point.astype(str), "ascent")] == 1.0)
    np.testing.assert_allclose(rows["diff"][top], 1.0 / np.sqrt(rows["width"][top]), rtol=1e-12)
    f3 = dh.hidden_layer_norms(cfg, key)  # the same networks
    np.testing.assert_allclose(np.unique(rows["c0"]), np.unique(f3["c0"]), rtol=1e-15)
    with jax.enable_x64(True):  # ‖b₀⁽ˡ⁾‖ against autodiff on the network drawn again
        model, p0 = models.mlp(jax.random.fold_in(key, 100_000 * 2 + 8), (8, 8), input_dim=3, activation="softplus",
                               dtype=jnp.float64)
        x = unit_scale_input(jax.random.fold_in(key, 7), 3, jnp.float64)
        auto = [float(np.linalg.norm(np.asarray(b))) for b in dh.backward_vectors(model, p0, x)]
    at0 = (point == "W₀") & smooth & (rows["width"] == 8)
    np.testing.assert_allclose(rows["two"][at0], auto, rtol=1e-12)
    nets = dh.backward_vector_networks(rows, "softplus")
    assert nets["width"].tolist() == [8, 16]
    target1 = (point == "ascent ‖b − b₀‖₂") & (rows["target"] == 1) & (layer == 1) & smooth
    np.testing.assert_array_equal(nets["diff_1"], rows["diff"][target1])
    assert np.all(nets["diff_1"] >= nets["diff_random_1"]) and np.all(nets["inf_ball"] >= nets["inf_0"])
    assert np.all(np.isnan(dh.backward_vector_networks(rows, "relu")["diff_1"]))  # no ascent for ReLU
    assert dh.backward_vector_table(rows, cfg).frame.shape[0] == 4
    assert dh.backward_vector_figure(rows, "softplus") is not None
    with pytest.raises(ValueError, match="tanh"):
        dh.backward_vector_networks(rows, "tanh")
