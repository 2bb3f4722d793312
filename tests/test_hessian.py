
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbook as nb
from conftest import small_network
from ntkbook import eigen, hessian, models
from ntkbook import hessian_compressed as hc
from ntkbook.data.circle import circle_data
from ntkbook.models.conv import conv_net
from ntkbook.pytree import flat_spec, tree_dot, tree_norm


def _mlp_fn(seed, widths=(12, 10), activation="tanh", dtype=jnp.float64):
    model, params = models.mlp(jax.random.key(seed), widths, input_dim=3, activation=activation, dtype=dtype)
    x = jax.random.normal(jax.random.key(seed + 100), (3,), dtype)
    return hessian.at_input(model.apply, x), params


@pytest.mark.parametrize("method", ["lanczos", "arpack"])
@pytest.mark.parametrize("seed,widths,activation", [(0, (12, 10), "tanh"), (1, (20,), "softplus"),
                                                    (2, (8, 8, 8), "sigmoid"), (3, (15, 6), "swish")])
def test_spectral_norm_matches_dense_eigvalsh(x64, method, seed, widths, activation):
    fn, params = _mlp_fn(seed, widths, activation)
    ref = hessian.dense_spectral_norm(fn, params)
    res = nb.hessian_spectral_norm(fn, params, tol=1e-8, method=method)
    assert res.converged
    assert abs(res.value - ref) / ref <= 1e-6
    assert res.residual <= 1e-6
    assert res.iterations >= 1 and res.products >= res.iterations


def test_thick_restart_path(x64):
    """A tiny basis forces several restarts; the answer must not change."""
    fn, params = _mlp_fn(4, (12, 12))  # P = 192 ≫ the basis of 6
    ref = hessian.dense_spectral_norm(fn, params)
    res = nb.hessian_spectral_norm(fn, params, tol=1e-9, basis_size=6, max_iter=5000)
    assert res.converged and res.iterations > 6
    assert abs(res.value - ref) / ref <= 1e-6
    # the returned eigenvector is a unit eigenvector of the dense Hessian
    h = np.asarray(hessian.dense_hessian(fn, params))
    u = np.asarray(nb.pytree.flat_spec(params).ravel(res.eigenvector))
    assert np.linalg.norm(u) == pytest.approx(1.0)
    assert np.linalg.norm(h @ u - res.eigenvalue * u) <= 1e-6 * res.value


def test_shallow_hessian_is_the_closed_form_diagonal(x64):
    """Eq. (9): H_ij = v_i σ''(w_i x) x² / √m · 1{i=j}."""
    m, x = 25, 1.7
    model, params = models.shallow_network(jax.random.key(5), m, activation="tanh", dtype=jnp.float64)
    h = np.asarray(hessian.dense_hessian(hessian.at_input(model.apply, jnp.array(x)), params))
    w = np.asarray(params["w"][:, 0])
    t = np.tanh(w * x)
    closed = np.asarray(model.v) * (-2 * t * (1 - t**2)) * x**2 / np.sqrt(m)
    np.testing.assert_allclose(h, np.diag(closed), atol=1e-14)
    eig = hessian.shallow_hessian_eigenvalues(model.activation, model.v, params["w"], jnp.array([x]), np.sqrt(m))
    np.testing.assert_allclose(eig, closed, rtol=1e-13)


@pytest.mark.parametrize("activation", ["tanh", "softplus"])
def test_shallow_hessian_eigenvalues_in_d_dimensions(x64, activation):
    """Rank-one blocks vᵢσ''(zᵢ)x̃x̃ᵀ/√m: the non-zero spectrum of the dense Hessian is {cᵢ}."""
    m, d = 9, 3
    model, params = models.shallow_network(jax.random.key(6), m, input_dim=d, activation=activation,
                                           dtype=jnp.float64)
    x = jax.random.normal(jax.random.key(7), (d,), jnp.float64)
    h = np.asarray(hessian.dense_hessian(hessian.at_input(model.apply, x), params))
    dense = np.sort(np.linalg.eigvalsh(h))
    dense = dense[np.abs(dense) > 1e-12]
    eig = hessian.shallow_hessian_eigenvalues(model.activation, model.v, params["w"], x, np.sqrt(m))
    np.testing.assert_allclose(dense, np.sort(np.asarray(eig)), rtol=1e-10)


def test_hvp_and_fixed_steps(x64):
    fn, params = _mlp_fn(6)
    h = np.asarray(hessian.dense_hessian(fn, params))
    spec = nb.pytree.flat_spec(params)
    v = jax.random.normal(jax.random.key(7), (spec.size,), jnp.float64)
    hv = spec.ravel(hessian.hvp(fn, params, spec.unravel(v)))
    np.testing.assert_allclose(hv, h @ np.asarray(v), rtol=1e-11, atol=1e-12)
    out = nb.hessian_spectral_norm(fn, params, method="fixed", num_steps=spec.size)
    lam = np.linalg.eigvalsh(h)
    assert float(out.value) == pytest.approx(np.max(np.abs(lam)), rel=1e-8)
    assert float(out.lambda_min) == pytest.approx(lam[0], rel=1e-8)


def test_fixed_steps_vmap_over_inputs(x64):
    model, params = models.mlp(jax.random.key(8), (10,), input_dim=2, dtype=jnp.float64)

    def f(p, x):
        return model.apply(p, x[None])[0]

    xs = jax.random.normal(jax.random.key(9), (4, 2), jnp.float64)
    batched = jax.vmap(lambda x: nb.hessian_spectral_norm(f, params, args=(x,), method="fixed", num_steps=30).value)(xs)
    refs = [hessian.dense_spectral_norm(f, params, x) for x in xs]
    np.testing.assert_allclose(batched, refs, rtol=1e-8)


def test_zero_hessian_of_a_linear_model():
    model, params = models.random_features(jax.random.key(10), 50, input_dim=2)
    res = nb.hessian_spectral_norm(hessian.at_input(model.apply, jnp.ones(2)), params)
    assert res.value == 0.0 and res.converged


def test_tiny_parameter_counts(x64):
    def f(p):
        return jnp.sin(p["a"][0]) * 3.0

    res = nb.hessian_spectral_norm(f, {"a": jnp.array([0.4])})
    assert res.value == pytest.approx(3 * np.sin(0.4), rel=1e-12)

    def g(p):
        return p[0] ** 2 * p[1]

    w = jnp.array([1.0, 2.0])
    ref = np.max(np.abs(np.linalg.eigvalsh(np.array([[4.0, 2.0], [2.0, 0.0]]))))
    for method in ("lanczos", "arpack"):
        assert nb.hessian_spectral_norm(g, w, method=method).value == pytest.approx(ref, rel=1e-10)


def test_extra_args_reuse_one_function(x64):
    model, params = models.mlp(jax.random.key(11), (9,), input_dim=2, dtype=jnp.float64)

    def f(p, x):
        return model.apply(p, x[None])[0]

    for x in jax.random.normal(jax.random.key(12), (3, 2), jnp.float64):
        res = nb.hessian_spectral_norm(f, params, args=(x,), tol=1e-10)
        assert res.value == pytest.approx(hessian.dense_spectral_norm(f, params, x), rel=1e-8)


def test_validation():
    fn, params = _mlp_fn(0, dtype=jnp.float32)
    with pytest.raises(ValueError, match="must return a scalar"):
        nb.hessian_spectral_norm(lambda p: p["layers"][0]["W"], params)
    with pytest.raises(ValueError, match="tol must be a finite number > 0"):
        nb.hessian_spectral_norm(fn, params, tol=-1.0)
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1"):
        nb.hessian_spectral_norm(fn, params, max_iter=0)
    with pytest.raises(ValueError, match="unknown method 'power'"):
        nb.hessian_spectral_norm(fn, params, method="power")
    with pytest.raises(TypeError, match="args must be a tuple"):
        nb.hessian_spectral_norm(fn, params, args=[1.0])
    with pytest.raises(ValueError, match="non-finite"):
        nb.hessian_spectral_norm(fn, jax.tree_util.tree_map(lambda a: a * jnp.nan, params))
    big = {"w": jnp.zeros(hessian.DENSE_MAX_PARAMS + 1)}
    with pytest.raises(ValueError, match="matrix-free"):
        hessian.dense_hessian(lambda p: jnp.sum(p["w"] ** 3), big)
    model, params2 = models.mlp(jax.random.key(0), (4,), input_dim=2, output_dim=2)
    with pytest.raises(ValueError, match="output=<index>"):
        hessian.at_input(model.apply, jnp.ones(2))(params2)


def test_large_problem_path(x64, monkeypatch):
    """The path used for P ≥ eigen.CHUNK_MAX_SIZE (one step per round trip, bucketed rows), on a small P."""
    monkeypatch.setattr(eigen, "CHUNK_MAX_SIZE", 0)
    fn, params = _mlp_fn(13, (10, 8))  # P = 118 ≫ the basis of 12
    ref = hessian.dense_spectral_norm(fn, params)
    res = nb.hessian_spectral_norm(fn, params, tol=1e-9, basis_size=12, max_iter=3000)
    assert res.converged and res.products == res.iterations + 1  # nothing wasted in this mode
    assert abs(res.value - ref) / ref <= 1e-7


def test_second_derivative_tensor_closed_form(x64):
    """fn(w) = (w₀²w₁, sin w₀ + w₁³): T₀ = [[2w₁, 2w₀], [2w₀, 0]], T₁ = [[−sin w₀, 0], [0, 6w₁]]."""
    w = jnp.array([0.7, -1.3])

    def fn(u):
        return jnp.stack([u[0] ** 2 * u[1], jnp.sin(u[0]) + u[1] ** 3])

    t = np.asarray(hessian.second_derivative_tensor(fn, w))
    expected = np.array([[[2 * -1.3, 2 * 0.7], [2 * 0.7, 0.0]], [[-np.sin(0.7), 0.0], [0.0, 6 * -1.3]]])
    np.testing.assert_allclose(t, expected, rtol=1e-14, atol=1e-15)
    # a scalar map gives out = 1 and agrees with the dense Hessian; a scalar w counts as p = 1
    s = np.asarray(hessian.second_derivative_tensor(lambda u: jnp.sum(jnp.cos(u) * u[::-1]), w))
    np.testing.assert_allclose(s[0], hessian.dense_hessian(lambda u: jnp.sum(jnp.cos(u) * u[::-1]), w), rtol=1e-14)
    assert hessian.second_derivative_tensor(lambda a: jnp.array([a[0] ** 3]), 2.0).shape == (1, 1, 1)
    with pytest.raises(ValueError, match="w must have 0 or 1 dimensions"):
        hessian.second_derivative_tensor(fn, jnp.ones((2, 2)))
    with pytest.raises(TypeError, match="fn must be callable"):
        hessian.second_derivative_tensor(3, w)


def test_ntk_and_lecun_models_never_share_a_compiled_product(x64):
    """The restarted and the fixed-step solvers compile one product per model structure (fn static, model
    traced): alternating an NTK network and its LeCun twin (same widths) must give each its own Hessian."""
    def out(p, model, x):
        return model.apply(p, x[None])[0]

    x = jnp.array([0.3, -1.1])
    model, params = models.mlp(jax.random.key(21), (5, 5), input_dim=2, dtype=jnp.float64)
    lecun, lparams = models.mlp(jax.random.key(21), (5, 5), input_dim=2, dtype=jnp.float64, parameterization="lecun")
    refs = [hessian.dense_spectral_norm(out, p, m, x) for m, p in ((model, params), (lecun, lparams))]
    assert abs(refs[0] - refs[1]) > 1e-3 * refs[0]  # the two Hessians differ (different coordinates)
    for _ in range(3):
        for (m, p), ref in zip(((model, params), (lecun, lparams)), refs, strict=True):
            assert nb.hessian_spectral_norm(out, p, args=(m, x), tol=1e-10).value == pytest.approx(ref, rel=1e-8)
            fixed = nb.hessian_spectral_norm(out, p, args=(m, x), method="fixed", num_steps=45)
            assert float(fixed.value) == pytest.approx(ref, rel=1e-8)


@pytest.mark.parametrize("method", ["lanczos", "fixed", "dense", "arpack"])
def test_compressed_operator_with_every_method(x64, method):
    model, params = models.mlp(jax.random.key(22), (7, 6), input_dim=3, dtype=jnp.float64)
    x = jnp.array([0.5, -0.2, 1.4])
    fn = hessian.at_input(model.apply, x)
    ref = hessian.dense_spectral_norm(fn, params)
    kw = {"num_steps": 40} if method == "fixed" else {}
    res = nb.hessian_spectral_norm(fn, params, operator="compressed", method=method, tol=1e-10, **kw)
    assert float(res.value) == pytest.approx(ref, rel=1e-8)
    assert nb.pytree.flat_spec(res.eigenvector).size == nb.pytree.flat_spec(params).size
    with pytest.raises(ValueError, match="compressed-numpy"):
        nb.hessian_spectral_norm(fn, params, operator="compressed-numpy", method="lanczos")
    with pytest.raises(ValueError, match=r"fn\(params, \*args\) failed"):
        nb.hessian_spectral_norm(fn, params, args=(x,), operator="compressed")


def test_shallow_hessian_norm_against_dense(x64):
    model, params = models.shallow_network(jax.random.key(2), 11, input_dim=2, dtype=jnp.float64)
    x, _ = circle_data(3, dtype=jnp.float64)
    closed = jnp.stack([jnp.abs(hessian.shallow_hessian_eigenvalues(
        model.activation, model.v, params["w"], xi, math.sqrt(11))).max() for xi in x])
    for i in range(3):
        dense = hessian.dense_spectral_norm(lambda p, xi=x[i]: model.apply(p, xi[None])[0], params)
        np.testing.assert_allclose(closed[i], dense, rtol=1e-10)


def _full_fn(model, x):
    return lambda p: model.apply(p, x[None])[0]


METHODS = [("compressed-numpy", "arpack"), ("compressed", "arpack"), ("compressed", "dense"), ("compressed", "lanczos"),
           ("full", "arpack"), ("full", "lanczos")]


@pytest.mark.parametrize("operator,method", METHODS)
def test_hessian_norm_methods_match_dense_eigvalsh(x64, operator, method):
    model, params, x = small_network("mlp", seed=6, width=6)
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
    model, params, x = small_network("resnet", seed=7)
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

def test_eigenvalue_gradient_is_the_derivative_of_the_rayleigh_quotient(x64):
    model, params, x = small_network("mlp", seed=11, width=4)
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

def test_hessian_norm_value_and_grad_is_the_norm_and_its_derivative(x64):
    """The value is the dense ‖H‖, the gradient its central finite difference in a random direction."""
    model, params, x = small_network("mlp", seed=13, width=6)
    fn = _full_fn(model, x)
    value, grad = hessian.hessian_norm_value_and_grad(model, x, tol=1e-12)(params)
    assert float(value) == pytest.approx(hessian.dense_spectral_norm(fn, params), rel=1e-9)
    spec = flat_spec(params)
    d = spec.unravel(jnp.asarray(np.random.default_rng(3).standard_normal(spec.size)))
    eps = 1e-5
    fd = (hessian.dense_spectral_norm(fn, jax.tree_util.tree_map(lambda a, b: a + eps * b, params, d))
          - hessian.dense_spectral_norm(fn, jax.tree_util.tree_map(lambda a, b: a - eps * b, params, d))) / (2 * eps)
    assert float(tree_dot(grad, d)) == pytest.approx(fd, rel=1e-5)


def test_ascend_hessian_norm_increases_within_the_ball(x64):
    """The book's projected ascent of ‖H‖: the best point lies in the ball, its value is the dense ‖H‖ there and
    above the start, and it is the largest value of the iterates."""
    model, params, x = small_network("mlp", seed=13, width=6)
    res = hessian.ascend_hessian_norm(model, params, x, 2.0, steps=3, tol=1e-10)
    assert float(tree_norm(jax.tree_util.tree_map(jnp.subtract, res.point, params))) <= 2.0 * (1 + 1e-12)
    assert float(res.value) > float(res.start_value) == float(res.values[0])
    assert float(res.value) == float(np.max(res.values))
    ref = hessian.dense_spectral_norm(_full_fn(model, x), res.point)
    assert float(res.value) == pytest.approx(ref, rel=1e-7)
    with pytest.raises(TypeError, match="model must be"):
        hessian.ascend_hessian_norm(object(), params, x, 2.0)
