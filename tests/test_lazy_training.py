"""Chapter 4: LeCun parameterization of the dense models, and ntkbook.experiments.lazy_training."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import numpy_mlp, reference_jacobian
from ntkbook import scales
from ntkbook.data.circle import circle_data
from ntkbook.experiments import lazy_training as lt
from ntkbook.hessian import dense_spectral_norm
from ntkbook.kernels import empirical_ntk
from ntkbook.models.dense import MLP, ShallowNetwork, mlp, shallow_network
from ntkbook.random import fold_key

# ---------------------------------------------------------------------------------------------
# dense.py: parameterization="lecun"
# ---------------------------------------------------------------------------------------------


def test_lecun_mlp_has_no_fan_in_factors(x64):
    model, params = mlp(jax.random.key(0), (7, 5), input_dim=3, activation="tanh", dtype=jnp.float64,
                        parameterization="lecun")
    assert isinstance(model, MLP) and model.parameterization == "lecun"
    x = jax.random.normal(jax.random.key(1), (4, 3), jnp.float64)
    a = np.asarray(x)
    for layer in params["layers"]:
        a = np.tanh(a @ np.asarray(layer["W"]).T)  # no 1/√fan-in
    np.testing.assert_allclose(model.apply(params, x), a @ np.asarray(params["v"])[:, 0], rtol=1e-12)


def test_lecun_and_ntk_same_function_same_key(x64):
    """Same key → the same standard normals, rescaled by 1/√fan-in: the same function (Eq. 35)."""
    x = jax.random.normal(jax.random.key(2), (5, 2), jnp.float64)
    m_ntk, p_ntk = mlp(jax.random.key(3), (6, 4), input_dim=2, dtype=jnp.float64)
    m_lec, p_lec = mlp(jax.random.key(3), (6, 4), input_dim=2, dtype=jnp.float64, parameterization="lecun")
    np.testing.assert_allclose(m_lec.apply(p_lec, x), m_ntk.apply(p_ntk, x), rtol=1e-12)
    np.testing.assert_allclose(p_lec["layers"][1]["W"], p_ntk["layers"][1]["W"] / math.sqrt(6), rtol=1e-15)
    np.testing.assert_allclose(p_lec["v"], p_ntk["v"] / 2.0, rtol=1e-15)
    s_ntk, q_ntk = shallow_network(jax.random.key(4), 9, input_dim=2, dtype=jnp.float64)
    s_lec, q_lec = shallow_network(jax.random.key(4), 9, input_dim=2, dtype=jnp.float64, parameterization="lecun")
    assert isinstance(s_lec, ShallowNetwork) and s_lec.parameterization == "lecun"
    np.testing.assert_allclose(s_lec.apply(q_lec, x), s_ntk.apply(q_ntk, x), rtol=1e-12)
    np.testing.assert_allclose(np.abs(s_lec.v), 1 / 3.0, rtol=1e-15)


def test_lecun_init_variance():
    _, params = mlp(jax.random.key(5), (400, 300), input_dim=2, parameterization="lecun")
    w2 = np.asarray(params["layers"][1]["W"])
    assert abs(w2.var() * 400 - 1) < 0.02  # N(0, 1/fan_in), 120 000 samples: sd of the estimate ≈ 0.004


def test_lecun_kernel_methods_agree_and_match_reference(x64):
    """empirical_ntk must not treat a LeCun model as an NTK-parameterized one."""
    model, params = mlp(jax.random.key(6), (8, 5), input_dim=3, dtype=jnp.float64, parameterization="lecun")
    x = jax.random.normal(jax.random.key(7), (4, 3), jnp.float64)
    jac = reference_jacobian(model.apply, params, x)
    for method in ("auto", "jacobian", "ntvp", "structured"):
        np.testing.assert_allclose(empirical_ntk(model.apply, params, x, method=method), jac @ jac.T, rtol=1e-10)
    shallow, sp = shallow_network(jax.random.key(8), 7, input_dim=3, dtype=jnp.float64, parameterization="lecun")
    jac = reference_jacobian(shallow.apply, sp, x)
    np.testing.assert_allclose(empirical_ntk(shallow.apply, sp, x, method="structured"), jac @ jac.T, rtol=1e-10)


def _model_pairs():
    """(NTK model, params, LeCun model, params) of the same widths for every dense family."""
    for family in ("shallow", "mlp", "mlp-fixed-output"):
        built = []
        for parameterization in ("ntk", "lecun"):
            if family == "shallow":
                built += shallow_network(jax.random.key(1), 6, input_dim=3, parameterization=parameterization)
            else:
                built += mlp(jax.random.key(1), (6, 5), input_dim=3, train_output=family == "mlp",
                             parameterization=parameterization)
        yield family, built


@pytest.mark.parametrize("family", ["shallow", "mlp", "mlp-fixed-output"])
def test_parameterization_is_part_of_the_tree_structure(family):
    """NTK and LeCun models never share a tree structure, so never a compiled function: jitted gradients of
    each equal the eager ones while the two are alternated many times in one process."""
    (_, (m_ntk, p_ntk, m_lec, p_lec)), = [pair for pair in _model_pairs() if pair[0] == family]
    assert jax.tree_util.tree_structure(m_ntk) != jax.tree_util.tree_structure(m_lec)
    x = jax.random.normal(jax.random.key(2), (4, 3))

    def loss(model, params):
        return jnp.sum(model.apply(params, x) ** 2)

    eager = {name: jax.tree_util.tree_leaves(jax.grad(loss, argnums=1)(m, p))
             for name, m, p in (("ntk", m_ntk, p_ntk), ("lecun", m_lec, p_lec))}
    # the eager gradients differ (the same function in different coordinates), so a shared executable would show
    assert not all(np.allclose(a, b) for a, b in zip(eager["ntk"], eager["lecun"], strict=True))
    jitted = jax.jit(jax.grad(loss, argnums=1))
    for i in range(40):
        name, m, p = ("ntk", m_ntk, p_ntk) if i % 2 == 0 else ("lecun", m_lec, p_lec)
        for got, want in zip(jax.tree_util.tree_leaves(jitted(m, p)), eager[name], strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_ntk_default_unchanged(x64):
    model, params = mlp(jax.random.key(8), (6, 5), input_dim=3, dtype=jnp.float64)
    assert model.parameterization == "ntk"
    x = jax.random.normal(jax.random.key(9), (4, 3), jnp.float64)
    np.testing.assert_allclose(model.apply(params, x), numpy_mlp(params, x, np.tanh), rtol=1e-12)


def test_parameterization_validation():
    with pytest.raises(ValueError, match="unknown parameterization 'mup'"):
        mlp(jax.random.key(0), 4, parameterization="mup")
    with pytest.raises(ValueError, match="parameterization"):
        shallow_network(jax.random.key(0), 4, parameterization="standard")


# ---------------------------------------------------------------------------------------------
# lazy_training
# ---------------------------------------------------------------------------------------------


def test_circle_data():
    x, y = circle_data(6, radius=2.0)
    assert x.shape == (6, 2) and y.shape == (6,)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 2.0, rtol=1e-6)
    theta = np.arctan2(x[:, 1], x[:, 0])
    assert theta.min() >= -1e-6 and theta.max() < np.pi  # no antipodal pair
    np.testing.assert_allclose(y, np.cos(2 * theta), atol=1e-6)
    with pytest.raises(ValueError, match="num_inputs"):
        circle_data(0)


def test_shallow_hessian_norm_against_dense(x64):
    from ntkbook.hessian import dense_spectral_norm

    model, params = shallow_network(jax.random.key(2), 11, input_dim=2, dtype=jnp.float64)
    x, _ = circle_data(3, dtype=jnp.float64)
    closed = lt.shallow_hessian_norm(model, params, x)
    for i in range(3):
        dense = dense_spectral_norm(lambda p, xi=x[i]: model.apply(p, xi[None])[0], params)
        np.testing.assert_allclose(closed[i], dense, rtol=1e-10)


def test_segment_gradient_sup_is_an_upper_bound(x64):
    model, p0 = shallow_network(jax.random.key(3), 50, input_dim=2, dtype=jnp.float64)
    p1 = {"w": p0["w"] + 0.8 * jax.random.normal(jax.random.key(4), p0["w"].shape, jnp.float64)}
    x, _ = circle_data(3, dtype=jnp.float64)
    bound = np.asarray(lt.segment_gradient_sup(model, p0, p1, x, points=9))
    ts = np.linspace(0, 1, 2001)
    for i in range(3):
        g = jax.vmap(lambda t, xi=x[i]: jnp.linalg.norm(jax.grad(lambda p: model.apply(p, xi[None])[0])(
            {"w": p0["w"] + t * (p1["w"] - p0["w"])})["w"]))(jnp.asarray(ts))
        fine = float(jnp.max(g))
        assert fine <= bound[i] * (1 + 1e-12)
        assert bound[i] <= 1.5 * fine  # not absurdly loose with 9 grid points
    with pytest.raises(ValueError, match="points"):
        lt.segment_gradient_sup(model, p0, p1, x, points=1)


def test_weight_change_sweep_small():
    cfg = scales.get("lazy_weight_change", "ci").replace(widths=(32, 128), seeds=2, num_inputs=6, radius=3.0, steps=200,
                                                         lr_factor=1.0, segment_points=17)
    r = lt.weight_change_sweep(cfg, jax.random.key(0))
    assert set(lt.WEIGHT_CHANGE_FIELDS) <= set(r) and r["width"].shape == (4,)
    assert np.all(r["eq2_bound"] <= r["dist2"] * (1 + 1e-5))
    assert np.all(r["eq2_bound_global"] <= r["eq2_bound"] * (1 + 1e-5))  # the segment sup is the smaller one
    assert np.all(r["dist_inf"] <= r["dist_inf_bound"] * (1 + 1e-5))
    np.testing.assert_allclose(r["kappa"], r["A"] * r["B"], rtol=1e-6)
    assert r["max_residual"].max() < 0.2  # 200 steps at m = 32: not fully converged, the bound accounts for it


def test_centered_and_label_rescaling(x64):
    model, p0 = shallow_network(jax.random.key(5), 8, input_dim=2, dtype=jnp.float64)
    x, _ = circle_data(4, dtype=jnp.float64)
    f = lt.centered(model.apply, p0, 4.0)
    np.testing.assert_allclose(f(p0, x), 0.0, atol=1e-15)
    g = jax.grad(lambda p: f(p, x[:1])[0])(p0)["w"]
    g0 = jax.grad(lambda p: model.apply(p, x[:1])[0])(p0)["w"]
    np.testing.assert_allclose(g, 4.0 * g0, rtol=1e-14)
    res = lt.rescaling_equals_label_rescaling(jax.random.key(6), width=16, alpha=8.0, steps=50)
    assert res["relative_param_difference"] <= 1e-13 and res["distance_travelled"] > 0


def test_rescaled_model_sweep_small():
    cfg = scales.get("lazy_rescaled", "ci").replace(width=16, alphas=(1.0, 4.0), seeds=2, num_inputs=6, radius=3.0,
                                                    steps=100, lr_factor=1.0)
    r = lt.rescaled_model_sweep(cfg, jax.random.key(1))
    _, y = circle_data(6)
    np.testing.assert_allclose(r["A"], float(np.linalg.norm(y)) / r["alpha"], rtol=1e-6)
    np.testing.assert_allclose(r["kappa_direct"], r["kappa"], rtol=1e-5)
    np.testing.assert_allclose(r["B_direct"] * r["alpha"], r["B"], rtol=1e-5)


def test_to_lecun_and_identities():
    model, params = mlp(jax.random.key(2), (5, 4), input_dim=3)
    lecun, lp = lt.to_lecun(model, params)
    x = jax.random.normal(jax.random.key(3), (2, 3))
    np.testing.assert_allclose(lecun.apply(lp, x), model.apply(params, x), rtol=1e-5)
    assert lt.layer_scales(model) == pytest.approx([1 / math.sqrt(3), 1 / math.sqrt(5), 1 / 2])
    with pytest.raises(TypeError, match="to_lecun"):
        lt.to_lecun(lecun, lp)
    ident = lt.parameterization_identities(jax.random.key(4), widths=(4, 3), input_dim=2)
    for k in ("gradient_rel_error", "hessian_rel_error", "kernel_rel_error", "ratio_rel_error"):
        assert ident[k] <= 1e-12, k


def test_parameterization_sweep_small():
    cfg = scales.get("lazy_parameterization", "ci").replace(widths=(16,), seeds=2, num_inputs=6, radius=3.0,
                                                            steps=50, lr_factor=1.5, lanczos_steps=40)
    r = lt.parameterization_sweep(cfg, jax.random.key(5))
    assert list(r) == list(lt.PARAMETERIZATION_FIELDS) and r["width"].shape == (4,)
    ntk, lec = r["parameterization"] == "ntk", r["parameterization"] == "lecun"
    assert np.all(r["kernel_norm"][lec] > 5 * r["kernel_norm"][ntk])  # K̄ ≈ m (K − K₁) + d K₁
    np.testing.assert_allclose(r["ratio"], r["kernel_norm"] / r["hessian_norm"], rtol=1e-6)
    # seed 0 of each parameterization against the MLP of that parameterization (to_lecun): kernel, dense Hessian
    x, _ = circle_data(6, radius=3.0)
    for i in np.flatnonzero(r["seed"] == 0):
        name, seed = r["parameterization"][i], r["seed"][i]
        model, params = mlp(fold_key(jax.random.key(5), 16, int(seed)), (16, 16), input_dim=2, activation="tanh")
        if name == "lecun":
            model, params = lt.to_lecun(model, params)
        kernel = np.linalg.eigvalsh(np.asarray(empirical_ntk(model.apply, params, x), np.float64))[-1]
        dense = dense_spectral_norm(lambda p, model=model: model.apply(p, x[:1])[0], params)
        assert r["kernel_norm"][i] == pytest.approx(kernel, rel=1e-5)
        assert r["hessian_norm"][i] == pytest.approx(dense, rel=1e-4)


def test_unconverged_lanczos_values_are_recomputed(monkeypatch):
    """With 2 fixed Lanczos steps the values are poor; every one is recomputed by the restarted
    solver and then agrees with the dense Hessian's spectral norm (float64)."""
    cfg = scales.get("lazy_parameterization", "ci").replace(widths=(6,), seeds=1, num_inputs=4, radius=3.0, steps=5,
                                                            lr_factor=1.0, lanczos_steps=2)
    with jax.enable_x64(True):
        r = lt.parameterization_sweep(cfg, jax.random.key(3))
        assert np.all(r["lanczos_residual"] <= 1e-6)
        x, _ = circle_data(4, radius=3.0)
        for i, (name, seed) in enumerate(zip(r["parameterization"], r["seed"], strict=True)):
            model, params = mlp(fold_key(jax.random.key(3), 6, int(seed)), (6, 6), input_dim=2, activation="tanh")
            if name == "lecun":
                model, params = lt.to_lecun(model, params)
            dense = dense_spectral_norm(lambda p, model=model: model.apply(p, x[:1])[0], params)
            assert r["hessian_norm"][i] == pytest.approx(dense, rel=1e-5)


def test_fold_key_and_stack_rows():
    from ntkbook.columns import stack_rows

    k = jax.random.key(0)
    expected = jax.random.fold_in(jax.random.fold_in(k, 3), 5)
    np.testing.assert_array_equal(jax.random.key_data(fold_key(k, 3, 5)), jax.random.key_data(expected))
    for bad in (True, None, [1], 1 + 2j):
        with pytest.raises(TypeError, match="integers"):
            fold_key(k, bad)
    with pytest.raises(ValueError, match="finite"):
        fold_key(k, float("nan"))
    # floats and strings are coordinates too: a key per value, distinct from the integer's and stable
    data = {v: tuple(jax.random.key_data(fold_key(k, v)).tolist()) for v in (1, 1.0, 1.5, "1.0", "tanh", 4.0)}
    assert len(set(data.values())) == len(data)
    assert tuple(jax.random.key_data(fold_key(k, 4.0)).tolist()) == data[4.0]
    assert tuple(jax.random.key_data(fold_key(k, np.float64(1.5))).tolist()) == data[1.5]
    out = stack_rows([{"a": np.array([1, 2]), "b": 0.5}, {"a": np.array([3]), "b": 1.5}])
    np.testing.assert_array_equal(out["a"], [1, 2, 3])
    np.testing.assert_array_equal(out["b"], [0.5, 1.5])
    with pytest.raises(ValueError, match="keys"):
        stack_rows([{"a": 1}, {"b": 2}])
    with pytest.raises(ValueError, match="at least one"):
        stack_rows([])
