"""Chapter 3b (ntkbook.experiments.deep_hessian_ball): removed with the chapter's rewrite."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import small_network
from ntkbook import scales
from ntkbook.ball import point_on_sphere
from ntkbook.experiments import deep_hessian_ball as db
from ntkbook.pytree import tree_norm, tree_sub

BALL = scales.get("thm_3_2", "ci").replace(depth=2, widths=(8,), seeds=1, radii=(0.5, 2.0), sphere_points=1,
                                         ascent_steps=1, num_train=4, gd_steps=4, gd_checkpoints=2, input_dim=3,
                                         activation="tanh", tol=1e-6)


def _full_fn(model, x):
    return lambda p: model.apply(p, x[None])[0]


def test_gd_checkpoints_match_a_plain_loop(x64):
    model, params, _ = small_network("mlp", seed=14, width=4, d=2)
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
    model, p0, x = small_network("mlp", seed=16, width=8)
    p1 = point_on_sphere(jax.random.key(0), p0, 2.0)
    smooth = db.segment_defect(model, p0, p1, x, nodes=24)
    assert smooth["defect"] < 1e-8  # Gauss–Legendre on an analytic integrand
    g0 = jax.grad(_full_fn(model, x))(p0)
    g1 = jax.grad(_full_fn(model, x))(p1)
    assert smooth["gradient_change"] == pytest.approx(float(tree_norm(tree_sub(g1, g0))), rel=1e-10)
    k0, k1 = float(tree_norm(g0) ** 2), float(tree_norm(g1) ** 2)
    assert smooth["kernel_change"] == pytest.approx(abs(k1 - k0) / k0, rel=1e-10)
    rmodel, rp0, _ = small_network("mlp", seed=16, width=8, activation="relu")
    rp1 = point_on_sphere(jax.random.key(0), rp0, 2.0)
    assert db.segment_defect(rmodel, rp0, rp1, x, nodes=24)["defect"] > 0.05

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
