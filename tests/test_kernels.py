import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbook as nb
from conftest import reference_jacobian
from ntkbook import kernels, linearization, models
from ntkbook.models.conv import conv_net
from ntkbook.models.densenet import densenet
from ntkbook.models.resnet import resnet


def pytree_model():
    """A model whose parameters are a nested dict/list/tuple pytree, with mixed leaf ranks."""
    keys = jax.random.split(jax.random.key(0), 4)
    params = {
        "a": [jax.random.normal(keys[0], (3, 5), jnp.float64), (jax.random.normal(keys[1], (5,), jnp.float64),)],
        "b": {"scale": jax.random.normal(keys[2], (), jnp.float64), "out": jax.random.normal(keys[3], (5, 2), jnp.float64)},
    }

    def apply(p, x):
        h = jnp.tanh(x @ p["a"][0] + p["a"][1][0]) * p["b"]["scale"]
        return jnp.sin(h) @ p["b"]["out"] + h[:, :2] ** 2

    return apply, params


@pytest.mark.parametrize("method", ["jacobian", "ntvp", "auto"])
def test_ntk_equals_explicit_jacobian_product(x64, method):
    apply, params = pytree_model()
    x1 = jax.random.normal(jax.random.key(1), (4, 3), jnp.float64)
    x2 = jax.random.normal(jax.random.key(2), (6, 3), jnp.float64)
    k = nb.empirical_ntk(apply, params, x1, x2, method=method)
    assert k.shape == (4, 6, 2, 2)
    j1 = reference_jacobian(apply, params, x1).reshape(4, 2, -1)
    j2 = reference_jacobian(apply, params, x2).reshape(6, 2, -1)
    ref = np.einsum("iap,jbp->ijab", j1, j2)
    np.testing.assert_allclose(k, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", ["jacobian", "ntvp"])
def test_scalar_and_single_output_shapes(method):
    model, params = models.mlp(jax.random.key(3), (16, 16), input_dim=2)
    x = jax.random.normal(jax.random.key(4), (5, 2))
    k = nb.empirical_ntk(model.apply, params, x, method=method)
    assert k.shape == (5, 5)
    np.testing.assert_allclose(k, k.T, rtol=1e-5)
    k1 = nb.empirical_ntk(lambda p, x: model.apply(p, x)[:, None], params, x, method=method)
    assert k1.shape == (5, 5)  # k == 1 output: still (n1, n2)
    np.testing.assert_allclose(k1, k, rtol=1e-6)


def test_methods_agree_float32():
    model, params = models.mlp(jax.random.key(5), (64, 64), input_dim=3, output_dim=3, activation="relu")
    x1 = jax.random.normal(jax.random.key(6), (7, 3))
    x2 = jax.random.normal(jax.random.key(7), (5, 3))
    kj = nb.empirical_ntk(model.apply, params, x1, x2, method="jacobian")
    kn = nb.empirical_ntk(model.apply, params, x1, x2, method="ntvp", batch_size=4)
    assert float(jnp.max(jnp.abs(kj - kn)) / jnp.max(jnp.abs(kj))) < 1e-5


def test_shallow_kernel_closed_form(x64):
    """K(x, z) = (1/m) Σ v_i² x z σ'(w_i x) σ'(w_i z) for Eq. (8) with d = 1."""
    model, params = models.shallow_network(jax.random.key(8), 40, activation="softplus", dtype=jnp.float64)
    x = jnp.array([0.3, -1.2, 2.0])
    w = np.asarray(params["w"][:, 0])
    sig = 1 / (1 + np.exp(-np.outer(np.asarray(x), w)))  # softplus' = sigmoid
    ref = (np.asarray(x)[:, None] * sig) @ (np.asarray(x)[:, None] * sig).T / 40
    np.testing.assert_allclose(nb.empirical_ntk(model.apply, params, x), ref, rtol=1e-12)
    np.testing.assert_allclose(kernels.kernel_diagonal(model.apply, params, x), np.diag(ref), rtol=1e-12)


def test_flatten_and_relative_change():
    k = jnp.arange(2 * 3 * 2 * 2, dtype=jnp.float32).reshape(2, 3, 2, 2)
    flat = kernels.flatten_ntk(k)
    assert flat.shape == (4, 6)
    assert flat[1 * 2 + 1, 2 * 2 + 0] == k[1, 2, 1, 0]
    assert float(kernels.relative_change(k, k)) == 0.0
    assert float(kernels.relative_change(2 * k, k)) == pytest.approx(1.0)


def test_ntk_validation():
    model, params = models.mlp(jax.random.key(0), (4,), input_dim=2)
    x = jnp.ones((3, 2))
    with pytest.raises(ValueError, match="unknown method 'fast'"):
        nb.empirical_ntk(model.apply, params, x, method="fast")
    with pytest.raises(ValueError, match="x1 contains non-finite"):
        nb.empirical_ntk(model.apply, params, x.at[0, 0].set(jnp.inf))
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\)"):
        nb.empirical_ntk(model.apply, params, jnp.ones((3, 5)))
    with pytest.raises(ValueError, match=r"apply_fn\(params, x\) failed"):
        nb.empirical_ntk(lambda p, x: model.apply(p, x), params, jnp.ones((3, 5)))
    with pytest.raises(ValueError, match="must return shape"):
        nb.empirical_ntk(lambda p, x: model.apply(p, x).sum(), params, x)
    with pytest.raises(ValueError, match="params must be a non-empty pytree"):
        nb.empirical_ntk(model.apply, {}, x)
    with pytest.raises(TypeError, match="apply_fn must be callable"):
        nb.empirical_ntk("model", params, x)
    with pytest.raises(TypeError, match="integer"):
        nb.empirical_ntk(model.apply, params, x, method="ntvp", batch_size=0.5)
    y = jnp.arange(3.0)
    with pytest.raises(ValueError, match="rows of x independently"):  # one row gives (3,), not (1,)
        nb.empirical_ntk(lambda p, x: model.apply(p, x) - y, params, x, method="jacobian")


def _structured_cases(dtype):
    m = models
    cases = [
        ("mlp, bias, 4 outputs", *m.mlp(jax.random.key(0), (7, 5, 6), input_dim=3, output_dim=4,
                                        activation=["tanh", "softplus", "relu"], use_bias=True, dtype=dtype)),
        ("bottleneck (Eq. 31)", *m.mlp(jax.random.key(1), (9, 1, 9), input_dim=3, activation=["quadratic", "identity",
                                                                                               "quadratic"], dtype=dtype)),
        ("fixed output layer", *m.mlp(jax.random.key(2), (8,), input_dim=3, output_dim=3, train_output=False, dtype=dtype)),
        ("one hidden layer (Eq. 8)", *m.shallow_network(jax.random.key(3), 11, input_dim=3, dtype=dtype)),
        ("random features", *m.random_features(jax.random.key(4), 11, input_dim=3, dtype=dtype)),
        ("LeCun mlp, bias, 3 outputs", *m.mlp(jax.random.key(7), (6, 5), input_dim=3, output_dim=3, use_bias=True,
                                              parameterization="lecun", dtype=dtype)),
        ("LeCun one hidden layer", *m.shallow_network(jax.random.key(8), 9, input_dim=3, parameterization="lecun",
                                                      dtype=dtype)),
        ("resnet (Eq. 97), 2 outputs", *resnet(jax.random.key(9), 6, 3, input_dim=3, output_dim=2, dtype=dtype)),
        ("resnet, fixed output", *resnet(jax.random.key(12), 5, 2, input_dim=3, train_output=False, dtype=dtype)),
    ]
    base, p = m.mlp(jax.random.key(5), (8, 8), input_dim=3, output_dim=3, use_bias=True, dtype=dtype)
    cases.append(("softmax output", m.nonlinear_output(base, "softmax"), p))
    base, p = m.mlp(jax.random.key(6), (8, 8), input_dim=3, dtype=dtype)
    cases.append(("swish output (Eq. 26)", m.nonlinear_output(base, "swish"), p))
    return cases


@pytest.mark.parametrize("case", range(11))
@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_structured_agrees_with_jacobian(case, precision):
    tol = {"float32": 1e-5, "float64": 1e-10}[precision]
    with jax.enable_x64(precision == "float64"):
        dtype = jnp.dtype(precision)
        name, model, params = _structured_cases(dtype)[case]
        x1 = jax.random.normal(jax.random.key(10), (5, 3), dtype)
        x2 = jax.random.normal(jax.random.key(11), (4, 3), dtype)
        for a, b in ((x1, x2), (x1, None)):
            ks = nb.empirical_ntk(model.apply, params, a, b, method="structured")
            kj = nb.empirical_ntk(model.apply, params, a, b, method="jacobian")
            assert ks.shape == kj.shape, name
            assert float(jnp.max(jnp.abs(ks - kj)) / jnp.max(jnp.abs(kj))) <= tol, name


def test_auto_picks_structured_only_for_dense_models():
    model, params = models.mlp(jax.random.key(0), (4,), input_dim=2)
    assert kernels.supports(model.apply)
    assert not kernels.supports(lambda p, x: model.apply(p, x))
    assert not kernels.supports(linearization.linearize(model.apply, params))
    with pytest.raises(ValueError, match="method='structured' needs apply_fn"):
        nb.empirical_ntk(lambda p, x: model.apply(p, x), params, jnp.ones((2, 2)), method="structured")
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\)"):
        nb.empirical_ntk(model.apply, params, jnp.ones((2, 3)), method="structured")


@pytest.mark.parametrize("case", [0, 2, 5, 7, 9])
def test_every_method_against_reference_jacobian(x64, case):
    """All methods (ntvp with small batches and symmetry blocks) against the independent forward-mode
    Jacobian of conftest, x2 ≠ x1 and x2 = x1, in float64.  Five inputs: x2 = x1 splits them into two
    symmetry blocks of 2 and 3 (the mirrored block and the uneven split); x2 (4 inputs, batch_size=1)
    takes the lax.map path of ntvp."""
    name, model, params = _structured_cases(jnp.float64)[case]
    x1 = jax.random.normal(jax.random.key(20), (5, 3), jnp.float64)
    x2 = jax.random.normal(jax.random.key(21), (4, 3), jnp.float64)
    j1, j2 = reference_jacobian(model.apply, params, x1), reference_jacobian(model.apply, params, x2)
    k = j1.shape[0] // 5
    for b, jb, nb_ in ((x2, j2, 4), (None, j1, 5)):
        ref = np.einsum("iap,jbp->ijab", j1.reshape(5, k, -1), jb.reshape(nb_, k, -1))
        ref = ref[:, :, 0, 0] if k == 1 else ref
        for method, batch in (("structured", None), ("jacobian", None), ("ntvp", 1), ("ntvp", None)):
            got = nb.empirical_ntk(model.apply, params, x1, b, method=method, batch_size=batch)
            np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-12 * np.abs(ref).max(), err_msg=f"{name} {method}")
        flat = nb.empirical_ntk(model.apply, params, x1, b, flat=True)
        np.testing.assert_allclose(flat, j1 @ jb.T, rtol=1e-11, atol=1e-12 * np.abs(ref).max())
    diag = kernels.kernel_diagonal(model.apply, params, x1)
    rows = j1.reshape(5, k, -1)
    ref_diag = np.einsum("iap,ibp->iab", rows, rows)
    np.testing.assert_allclose(diag, ref_diag[:, 0, 0] if k == 1 else ref_diag, rtol=1e-11)
    np.testing.assert_allclose(kernels.jacobian_matrix(model.apply, params, x1), j1, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("family", ["cnn", "densenet", "resnet"])
def test_jacobian_and_ntvp_on_other_architectures(x64, family):
    """CNN, DenseNet (no structured path) and ResNet: jacobian and ntvp against the reference, k = 1 and 3."""
    if family == "cnn":
        model, params = conv_net(jax.random.key(0), (2, 3), spatial=(5, 4), input_channels=2, output_dim=3,
                                 dtype=jnp.float64)
        x = jax.random.normal(jax.random.key(1), (6, 5, 4, 2), jnp.float64)
    elif family == "densenet":
        model, params = densenet(jax.random.key(0), (4, 3), input_dim=3, dtype=jnp.float64)
        x = jax.random.normal(jax.random.key(1), (6, 3), jnp.float64)
    else:
        model, params = resnet(jax.random.key(0), 5, 3, input_dim=3, output_dim=3, dtype=jnp.float64)
        x = jax.random.normal(jax.random.key(1), (6, 3), jnp.float64)
    j = reference_jacobian(model.apply, params, x)
    k = j.shape[0] // 6
    ref = np.einsum("iap,jbp->ijab", j.reshape(6, k, -1), j.reshape(6, k, -1))
    ref = ref[:, :, 0, 0] if k == 1 else ref
    jx = reference_jacobian(model.apply, params, x[:2])
    cross = np.einsum("iap,jbp->ijab", j.reshape(6, k, -1), jx.reshape(2, k, -1))
    cross = cross[:, :, 0, 0] if k == 1 else cross
    for method in ("jacobian", "ntvp", "auto"):
        np.testing.assert_allclose(nb.empirical_ntk(model.apply, params, x, method=method), ref, rtol=1e-11,
                                   atol=1e-12 * np.abs(ref).max(), err_msg=method)
        np.testing.assert_allclose(nb.empirical_ntk(model.apply, params, x, x[:2], method=method), cross,
                                   rtol=1e-11, atol=1e-12 * np.abs(ref).max(), err_msg=method)


def test_layerwise_ntk_numpy_stays_float64():
    """The structured formula on NumPy float64 signals (as the Hessian code has them) stays NumPy float64
    and equals the brute-force sum of outer products."""
    rng = np.random.default_rng(0)
    a = [rng.normal(size=(3, 4)), rng.normal(size=(3, 5))]
    d = [rng.normal(size=(3, 2, 5)), rng.normal(size=(3, 2, 6))]
    last = rng.normal(size=(3, 6))
    scales = [0.5, 0.25]
    k = kernels.layerwise_ntk(a, d, scales=scales, bias=True, features1=last, feature_scale=0.3)
    assert isinstance(k, np.ndarray) and k.dtype == np.float64 and k.shape == (3, 3, 2, 2)
    def gradient(i, o):  # ∇ of output o at input i: per layer (c_l δ αᵀ, δ for the bias), then v
        parts = []
        for l_idx in range(2):
            parts += [scales[l_idx] * np.outer(d[l_idx][i, o], a[l_idx][i]).ravel(), d[l_idx][i, o]]
        return np.concatenate([*parts, 0.3 * np.outer(last[i], np.eye(2)[o]).ravel()])

    grads = np.stack([gradient(i, o) for i in range(3) for o in range(2)])
    np.testing.assert_allclose(k.transpose(0, 2, 1, 3).reshape(6, 6), grads @ grads.T, rtol=1e-13)
