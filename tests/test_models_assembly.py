"""The assembly model of Eq. (4) and its sub-model families (ntkbook.models.assembly, Chapter 7)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook.hessian import dense_hessian
from ntkbook.models import assembly as asm

D = 7


def _x(seed=0, d=D):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=d)
    return x * math.sqrt(d) / np.linalg.norm(x)


# ---------------------------------------------------------------------------------------------
# sub-model families and the assembly
# ---------------------------------------------------------------------------------------------


def _numpy_sub_model(name, w, x, h=3):
    d = x.size
    xh = x / math.sqrt(d)
    if name == "neuron":
        return w[d] * np.tanh(w[:d] @ xh)
    if name == "square":
        return 0.5 * (w @ xh) ** 2
    a = w[: h * d].reshape(h, d)
    b = w[h * d: h * d + h * h].reshape(h, h)
    c = w[h * d + h * h:]
    return c @ np.tanh(b @ np.tanh(a @ xh) / math.sqrt(h)) / math.sqrt(h)


@pytest.mark.parametrize("family", asm.FAMILIES)
@pytest.mark.parametrize("weights", asm.WEIGHTS)
def test_assembly_matches_numpy(x64, family, weights):
    xs = np.stack([_x(0), _x(1)])
    model, params = asm.assembly(jax.random.key(2), family, 9, input_dim=D, weights=weights, dtype=jnp.float64)
    w, v = np.asarray(params["w"]), np.asarray(model.v)
    g = np.array([[_numpy_sub_model(family, wi, xi) for wi in w] for xi in xs])
    np.testing.assert_allclose(np.asarray(model.sub_outputs(params, xs)), g, rtol=1e-12, atol=1e-12)
    s = {"sqrt": math.sqrt(9), "linear": 9.0}[asm.resolve_scaling(asm.get_family(family), weights)]
    np.testing.assert_allclose(np.asarray(model.apply(params, xs)), g @ v / s, rtol=1e-12, atol=1e-12)
    assert model.scale == s and w.shape == (9, asm.get_family(family).num_params(D))


def test_scaling_rule_and_weights():
    assert asm.resolve_scaling(asm.get_family("square"), "ones") == "linear"
    for fam in ("neuron", "mlp"):
        assert asm.resolve_scaling(asm.get_family(fam), "ones") == "sqrt"
    for w in ("signs", "gaussian"):
        assert asm.resolve_scaling(asm.get_family("square"), w) == "sqrt"
    assert asm.resolve_scaling(asm.get_family("square"), "ones", "sqrt") == "sqrt"
    assert asm.scaling_factor(16, "sqrt") == 4.0 and asm.scaling_factor(16, "linear") == 16.0
    small = asm.assembly_weights(jax.random.key(0), 5, "gaussian")
    big = asm.assembly_weights(jax.random.key(0), 50, "gaussian")
    np.testing.assert_array_equal(np.asarray(small), np.asarray(big[:5]))  # nested widths
    signs = np.asarray(asm.assembly_weights(jax.random.key(0), 200, "signs"))
    assert set(np.unique(signs)) == {-1.0, 1.0}
    model, _ = asm.assembly(jax.random.key(0), "neuron", 25, input_dim=D, dominant=True)
    ref, _ = asm.assembly(jax.random.key(0), "neuron", 25, input_dim=D)
    assert float(model.v[0]) == pytest.approx(5.0 * float(ref.v[0]))
    np.testing.assert_array_equal(np.asarray(model.v[1:]), np.asarray(ref.v[1:]))


def test_assembly_validation():
    with pytest.raises(ValueError, match="unknown family 'cubic'"):
        asm.assembly(jax.random.key(0), "cubic", 3, input_dim=2)
    with pytest.raises(ValueError, match="unknown weights"):
        asm.assembly(jax.random.key(0), "neuron", 3, input_dim=2, weights="uniform")
    with pytest.raises(ValueError, match="unknown scaling"):
        asm.assembly(jax.random.key(0), "neuron", 3, input_dim=2, scaling="log")
    with pytest.raises(ValueError, match="m must be"):
        asm.assembly(jax.random.key(0), "neuron", 0, input_dim=2)
    with pytest.raises(TypeError, match="input_dim"):
        asm.assembly(jax.random.key(0), "neuron", 3, input_dim=2.0)
    model, params = asm.assembly(jax.random.key(0), "neuron", 3, input_dim=2)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\)"):
        model.apply(params, jnp.ones((4, 3)))


@pytest.mark.parametrize("family", asm.FAMILIES)
def test_hessian_is_block_diagonal(x64, family):
    """H = (1/s) blockdiag(v_i H_{g_i}) — the first line of the proof of Theorem 1."""
    x = jnp.asarray(_x(3))
    m = 4
    model, params = asm.assembly(jax.random.key(5), family, m, input_dim=D, weights="gaussian",
                                 dtype=jnp.float64)
    fam = model.family
    h = np.asarray(dense_hessian(lambda p: model.apply(p, x[None])[0], params))
    p = fam.num_params(D)
    ref = np.zeros_like(h)
    for i in range(m):
        blk = np.asarray(asm.sub_model_hessian(fam, params["w"][i], x)) * float(model.v[i]) / model.scale
        ref[i * p:(i + 1) * p, i * p:(i + 1) * p] = blk
    np.testing.assert_allclose(h, ref, atol=1e-12)


@pytest.mark.parametrize("family", asm.FAMILIES)
def test_active_basis(x64, family):
    fam = asm.get_family(family)
    x = jnp.asarray(_x(4))
    q = np.asarray(asm.active_basis(fam, x))
    assert q.shape == (fam.first_layer_rows + fam.outer_size, fam.num_params(D))
    np.testing.assert_allclose(q @ q.T, np.eye(q.shape[0]), atol=1e-14)
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = jnp.asarray(rng.normal(size=fam.num_params(D)) * 1.5)
        h = np.asarray(asm.sub_model_hessian(fam, w, x))
        # every derivative lives in the row space of Q: H = Qᵀ(QHQᵀ)Q, same spectral norm
        np.testing.assert_allclose(h, q.T @ (q @ h @ q.T) @ q, atol=1e-12)
        perp = rng.normal(size=q.shape[1])
        perp -= q.T @ (q @ perp)
        assert float(fam.apply_one(w + jnp.asarray(perp), x)) == pytest.approx(float(fam.apply_one(w, x)), abs=1e-12)


def test_neuron_and_square_smoothness(x64):
    x = _x(5)
    fam = asm.get_family("neuron")
    beta = fam.smoothness(2.0, x)
    # exact: the sup of the 2×2 norm over z at |u| = 3; compare with a brute-force grid
    z = np.linspace(-8, 8, 400_001)
    t = np.tanh(z)
    s1, s2 = 1 - t**2, -2 * t * (1 - t**2)
    c = 3.0 * np.abs(s2)
    assert beta == pytest.approx(np.max(0.5 * (c + np.sqrt(c * c + 4 * s1 * s1))), rel=1e-9)
    # no point of the domain |u| ≤ 1 + R has a larger Hessian norm
    rng = np.random.default_rng(1)
    for _ in range(20):
        w = jnp.asarray(np.r_[rng.normal(size=D) * 2, rng.uniform(-3, 3)])
        hn = np.max(np.abs(np.linalg.eigvalsh(np.asarray(asm.sub_model_hessian(fam, w, jnp.asarray(x))))))
        assert hn <= beta * (1 + 1e-12)
    assert asm.get_family("square").smoothness(1.0, x) == pytest.approx(1.0, rel=1e-12)
    assert asm.get_family("mlp").smoothness(1.0, x) is None
