
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import numpy_mlp, reference_jacobian
from ntkbook import models
from ntkbook.data.circle import circle_data
from ntkbook.kernels import empirical_ntk
from ntkbook.models.conv import conv, conv_net
from ntkbook.models.dense import MLP, ShallowNetwork, mlp, shallow_network
from ntkbook.models.densenet import densenet
from ntkbook.models.resnet import resnet


def test_shallow_network_matches_eq8(x64):
    model, params = models.shallow_network(jax.random.key(0), 50, activation="tanh", dtype=jnp.float64)
    x = jnp.linspace(-2, 2, 7)
    w = np.asarray(params["w"][:, 0])
    v = np.asarray(model.v)
    expected = np.array([np.sum(v * np.tanh(w * xi)) / np.sqrt(50) for xi in np.asarray(x)])
    np.testing.assert_allclose(model.apply(params, x), expected, rtol=1e-13)
    assert set(np.unique(v)) <= {-1.0, 1.0}
    assert list(params) == ["w"]  # v is fixed, not trainable


@pytest.mark.parametrize("use_bias", [False, True])
@pytest.mark.parametrize("output_dim", [1, 3])
def test_mlp_matches_numpy(x64, use_bias, output_dim):
    model, params = models.mlp(jax.random.key(1), (7, 5, 6), input_dim=4, output_dim=output_dim,
                               activation=["tanh", "softplus", "sigmoid"], use_bias=use_bias, dtype=jnp.float64)
    x = jax.random.normal(jax.random.key(2), (9, 4), jnp.float64)
    acts = [np.tanh, lambda z: np.log1p(np.exp(z)), lambda z: 1 / (1 + np.exp(-z))]
    it = iter(acts)

    def act(z):
        return next(it)(z)

    expected = numpy_mlp(params, x, act, use_bias=use_bias)
    out = model.apply(params, x)
    assert out.shape == ((9,) if output_dim == 1 else (9, output_dim))
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_mlp_fixed_output_and_forward(x64):
    model, params = models.mlp(jax.random.key(3), (8, 8), input_dim=2, train_output=False, dtype=jnp.float64)
    assert "v" not in params and model.fixed_v.shape == (8, 1)
    x = jax.random.normal(jax.random.key(4), (5, 2), jnp.float64)
    fp = model.forward(params, x)
    assert len(fp.pre) == 2 and len(fp.post) == 3
    np.testing.assert_allclose(fp.post[2], jnp.tanh(fp.pre[1]))
    np.testing.assert_allclose(fp.output, numpy_mlp(params, x, np.tanh, fixed_v=model.fixed_v), rtol=1e-12)


def test_nonlinear_output_wrapper():
    base, params = models.mlp(jax.random.key(5), (16,), input_dim=3, output_dim=4)
    x = jax.random.normal(jax.random.key(6), (6, 3))
    soft = models.nonlinear_output(base, "softmax")
    np.testing.assert_allclose(soft.apply(params, x), jax.nn.softmax(base.apply(params, x), axis=-1), rtol=1e-6)
    np.testing.assert_allclose(soft.apply(params, x).sum(axis=1), 1.0, rtol=1e-6)
    sw = models.nonlinear_output(base, "swish")
    f = base.apply(params, x)
    np.testing.assert_allclose(sw.apply(params, x), f * jax.nn.sigmoid(f), rtol=1e-6)
    with pytest.raises(TypeError, match="base must be a model"):
        models.nonlinear_output(lambda p, x: x, "tanh")


def test_phi_closed_forms(x64):
    """The output map φ(z) = z + ½ log cosh z of chapters 5 and 5b and its registry derivatives."""
    from ntkbook.models.output_maps import PHI, PHI_FLOOR, phi_derivatives

    z = jnp.linspace(-30, 30, 601, dtype=jnp.float64)
    np.testing.assert_allclose(PHI(z), z + 0.5 * np.log(np.cosh(np.asarray(z))), rtol=1e-12, atol=1e-12)
    d1, d2 = phi_derivatives(PHI, z)
    np.testing.assert_allclose(d1, 1 + 0.5 * np.tanh(np.asarray(z)), rtol=1e-12)
    # (far in the tails autodiff computes 1 − tanh² by cancellation: absolute accuracy only)
    np.testing.assert_allclose(d2, 0.5 / np.cosh(np.asarray(z)) ** 2, rtol=1e-10, atol=1e-15)
    assert float(d1.min()) >= PHI_FLOOR and float(d1.max()) <= PHI.lipschitz
    assert float(d2.max()) <= PHI.smoothness


def test_mlp_with_a_width_one_layer_is_eq31(x64):
    """mlp((m, 1, m), activations ½z², identity, ½z²) is the bottleneck network of Eq. 31 of Liu–Zhu–Belkin 2020:
    f = (1/√m) Σⱼ w⁽⁴⁾ⱼ σ(w⁽³⁾ⱼ (1/√m) Σᵢ w⁽²⁾ᵢ σ(w⁽¹⁾ᵢ x)) — the width-one layer has fan-in 1, so no factor."""
    m = 7
    model, params = mlp(jax.random.key(8), (m, 1, m), input_dim=1, dtype=jnp.float64,
                        activation=("quadratic", "identity", "quadratic"))
    w1, w2, w3 = (np.asarray(layer["W"]).ravel() for layer in params["layers"])
    w4 = np.asarray(params["v"]).ravel()
    x = 1.3
    inner = np.sum(w2 * 0.5 * (w1 * x) ** 2) / math.sqrt(m)
    expected = np.sum(w4 * 0.5 * (w3 * inner) ** 2) / math.sqrt(m)
    np.testing.assert_allclose(model.apply(params, jnp.asarray([x]))[0], expected, rtol=1e-12)


def test_models_are_pytrees_through_jit():
    model, params = models.mlp(jax.random.key(7), (4,), input_dim=2, train_output=False)
    x = jnp.ones((3, 2))
    out = jax.jit(lambda m, p, x: m.apply(p, x))(model, params, x)
    np.testing.assert_allclose(out, model.apply(params, x), rtol=1e-6)


def test_random_features_is_linear_in_w(x64):
    model, params = models.random_features(jax.random.key(8), 30, input_dim=2, dtype=jnp.float64)
    x = jax.random.normal(jax.random.key(9), (4, 2), jnp.float64)
    w1, w2 = params["w"], jax.random.normal(jax.random.key(10), (30,), jnp.float64)
    a, b = 0.3, -1.7
    lhs = model.apply({"w": a * w1 + b * w2}, x) - model.apply({"w": jnp.zeros(30)}, x)
    rhs = a * (model.apply({"w": w1}, x) - model.apply({"w": jnp.zeros(30)}, x)) + b * (
        model.apply({"w": w2}, x) - model.apply({"w": jnp.zeros(30)}, x))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "wide", True])
def test_bad_widths(bad):
    with pytest.raises((TypeError, ValueError), match="width"):
        models.shallow_network(jax.random.key(0), bad)
    with pytest.raises((TypeError, ValueError), match="widths"):
        models.mlp(jax.random.key(0), (4, bad))


def test_bad_inputs():
    model, params = models.mlp(jax.random.key(0), (4,), input_dim=3)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 3\)"):
        model.apply(params, jnp.ones((2, 2)))
    with pytest.raises(ValueError, match="x must have shape"):
        model.apply(params, jnp.ones(5))
    with pytest.raises(ValueError, match="non-finite"):
        model.apply(params, jnp.array([[1.0, jnp.nan, 0.0]]))
    with pytest.raises(TypeError, match="floating dtype"):
        model.apply(params, jnp.ones((2, 3), dtype=jnp.int32))
    with pytest.raises(ValueError, match="must not be empty"):
        model.apply(params, jnp.ones((0, 3)))
    with pytest.raises(ValueError, match="unknown activation"):
        models.mlp(jax.random.key(0), (4,), activation="gelu")
    with pytest.raises(ValueError, match="2 activations for 3 hidden layers"):
        models.mlp(jax.random.key(0), (4, 4, 4), activation=["tanh", "relu"])


def test_float64_needs_x64():
    if jax.config.jax_enable_x64:
        pytest.skip("x64 already enabled globally")
    with pytest.raises(ValueError, match="jax_enable_x64"):
        models.mlp(jax.random.key(0), (4,), dtype=jnp.float64)


# ---------------------------------------------------------------------------------------------
# parameterization="lecun" (Appendix A of Liu–Zhu–Belkin 2020)
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


def test_circle_data():
    x, y = circle_data(6, radius=2.0)
    assert x.shape == (6, 2) and y.shape == (6,)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 2.0, rtol=1e-6)
    theta = np.arctan2(x[:, 1], x[:, 0])
    assert theta.min() >= -1e-6 and theta.max() < np.pi  # no antipodal pair
    np.testing.assert_allclose(y, np.cos(2 * theta), atol=1e-6)
    with pytest.raises(ValueError, match="num_inputs"):
        circle_data(0)


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


# ---------------------------------------------------------------------------------------------
# The network of Oymak & Soltanolkotabi (2020), Eq. (1.1), initialized as in their Theorem 2.1
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 5, 8])
def test_oymak_output_weights_follow_theorem_2_1(k):
    from ntkbook.models.oymak_init import output_weights

    v = np.asarray(output_weights(k, 3.0, 4))
    assert v.sum() == pytest.approx(0.0, abs=1e-7)
    if k > 1:
        assert np.abs(v).max() == pytest.approx(3.0 / math.sqrt(4 * k), rel=1e-6)
    assert (v > 0).sum() == (v < 0).sum() == k // 2
    assert (v == 0).sum() == k % 2  # footnote 1: one zero entry when k is odd


@pytest.mark.parametrize("activation", ["softplus", "relu", "tanh"])
def test_oymak_network_its_jacobian_and_kernel(x64, activation):
    """f = φ(XWᵀ)v (Eq. 1.1, NumPy), the Jacobian blocks v_ℓ diag(φ'(Xw_ℓ))X of Section 6.1 (finite
    differences for smooth φ) and 𝒥𝒥ᵀ = (φ'(XWᵀ)diag(v)²φ'(WXᵀ)) ⊙ XXᵀ against the empirical kernel."""
    from ntkbook.activations import get_activation
    from ntkbook.kernels import jacobian_matrix
    from ntkbook.models.oymak_init import network, output_weights

    rng = np.random.default_rng(0)
    x = rng.standard_normal((9, 4))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = rng.standard_normal(9)
    model, params = network(jax.random.key(2), 6, jnp.asarray(x), y, activation=activation)
    w, v = np.asarray(params["w"]), np.asarray(model.v)
    np.testing.assert_array_equal(v, output_weights(6, float(np.linalg.norm(y)), 9, dtype=jnp.float64))
    act = get_activation(activation)
    np.testing.assert_allclose(model.apply(params, x), act.numpy(x @ w.T) @ v, rtol=1e-12)
    prime = act.numpy(x @ w.T, 1)  # (n, k)
    blocks = np.concatenate([v[j] * prime[:, j:j + 1] * x for j in range(6)], axis=1)  # vect(W), row-major
    jac = np.asarray(jacobian_matrix(model.apply, params, x))
    np.testing.assert_allclose(jac, blocks, atol=1e-12)
    if activation != "relu":  # central differences of f in one direction
        e = rng.standard_normal(w.shape)
        h = 1e-6
        fd = (model.apply({"w": w + h * e}, x) - model.apply({"w": w - h * e}, x)) / (2 * h)
        np.testing.assert_allclose(jac @ e.ravel(), fd, atol=1e-7)
    gram = ((prime * v**2) @ prime.T) * (x @ x.T)
    np.testing.assert_allclose(empirical_ntk(model.apply, params, x), gram, atol=1e-12)


def test_densenet_forward_matches_numpy(x64):
    """Eq. 37 of Liu–Zhu–Belkin 2022: every layer reads [α⁽ˡ⁻¹⁾, …, α⁽¹⁾, x] with 1/√fan-in."""
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


def test_conv_is_a_sum_of_matrix_products_over_kernel_positions(x64):
    """Eq. 92 of Liu–Zhu–Belkin 2020: W ∗ α = Σ_k W^[k] α^[k], with W^[k] the (m_out × m_in) transpose of the filter
    slice ``w[i, j]`` (kernel positions in C order, as chapter 3b reads them off ``w.reshape(-1, m_in, m_out)``) and
    α^[k] the input shifted by position k (zeros outside)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3, 2, 5))
    a = rng.standard_normal((6, 7, 2))
    slices = np.swapaxes(w.reshape(-1, 2, 5), 1, 2)  # W^[k], (9, m_out, m_in)
    total = np.zeros((6, 7, 5))
    padded = np.pad(a, ((1, 1), (1, 1), (0, 0)))
    for k, (i, j) in enumerate((i, j) for i in range(3) for j in range(3)):
        total += np.einsum("oc,hwc->hwo", slices[k], padded[i:i + 6, j:j + 7])
    ref = np.asarray(conv(jnp.asarray(a)[None], jnp.asarray(w)))[0] * np.sqrt(9 * 2)  # undo the fan-in 1/√(K m_in)
    np.testing.assert_allclose(total, ref, rtol=1e-12, atol=1e-12)
