"""The exact-range compression of the Hessian of dense networks (ntkbook.hessian_compressed) against dense
autodiff Hessians."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import small_network
from ntkbook import hessian
from ntkbook import hessian_compressed as hc
from ntkbook.pytree import flat_spec, tree_dot, tree_norm, tree_sub


def _full_fn(model, x):
    return lambda p: model.apply(p, x[None])[0]


def _nonzero_sorted(eigs, tol):
    e = np.sort(np.asarray(eigs))
    return e[np.abs(e) > tol]


CASES = [("mlp", {}), ("mlp", {"train_output": False}), ("mlp", {"use_bias": True}), ("resnet", {})]

@pytest.mark.parametrize("kind,kw", CASES)
def test_compressed_hessian_has_the_nonzero_spectrum_of_the_dense_hessian(x64, kind, kw):
    model, params, x = small_network(kind, seed=1, **kw)
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
    model, params, x = small_network(kind, seed=2, **kw)
    comp = hc.compressed_hessian(model, params, x)
    bp = hc.base_pass(model, params, x)
    t = np.random.default_rng(0).standard_normal(comp.shape[0])
    np.testing.assert_allclose(hc.compressed_hvp(bp, t), comp @ t, rtol=1e-10, atol=1e-12)

@pytest.mark.parametrize("kind,kw", CASES)
def test_frames_and_base_pass_kernel_is_squared_gradient_norm(x64, kind, kw):
    model, params, x = small_network(kind, seed=3, **kw)
    g = jax.grad(_full_fn(model, x))(params)
    k = float(tree_norm(g) ** 2)
    assert float(hc.frames(model, params, x).kernel) == pytest.approx(k, rel=1e-12)
    assert hc.base_pass(model, params, x).kernel == pytest.approx(k, rel=1e-12)
    # the layer inputs are those of the model's own forward pass
    post = model.forward(params, x[None]).post
    for a, ref in zip(hc.layer_inputs(model, params, x), post[:-1], strict=True):
        np.testing.assert_allclose(a, ref[0], rtol=1e-12)

def test_lift_and_compress_are_adjoint_and_lift_is_an_isometry_on_pz(x64):
    model, params, x = small_network("mlp", seed=4, use_bias=True)
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
    model, params, x = small_network("resnet", seed=5)
    fr = hc.frames(model, params, x)
    y0 = hc.compressed_zero(model, params)
    assert float(hc.compressed_output(y0, model, params, x, fr)) == pytest.approx(float(model.apply(params, x[None])[0]))


def _autodiff_backward_vectors(model, params, x):
    """b⁽ˡ⁾ = ∂f/∂α⁽ˡ⁾ by autodiff: f with a shift s_l added to every post-activation, differentiated at s = 0."""
    def output(shifts):
        a = x
        for layer, act, s in zip(params["layers"], model.activations, shifts, strict=True):
            a = act(layer["W"] @ a / np.sqrt(a.size)) + s
        return params["v"][:, 0] @ a / np.sqrt(a.size)

    return [np.asarray(b) for b in jax.grad(output)([jnp.zeros(m) for m in model.widths])]


@pytest.mark.parametrize("activation", ["softplus", "tanh"])
def test_base_pass_backward_vectors_are_the_derivatives_in_the_hidden_layers(x64, activation):
    """The backward recursion of Eq. 79 (b⁽ˡ⁻¹⁾ = W⁽ˡ⁾ᵀ(σ' ⊙ b⁽ˡ⁾)/√m, base_pass) against autodiff and finite
    differences of f in α⁽ˡ⁾."""
    model, params, x = small_network("mlp", seed=3, width=(5, 7, 4), d=3, activation=activation)
    bp = hc.base_pass(model, params, x)
    recursion = bp.b
    auto = _autodiff_backward_vectors(model, params, x)
    assert [b.shape for b in recursion] == [(5,), (7,), (4,)]
    for a, r in zip(auto, recursion, strict=True):
        np.testing.assert_allclose(r, a, rtol=1e-12, atol=1e-15)
    alphas = [*bp.inputs[1:], bp.last]

    def tail(layer, a):  # f as a function of α⁽ˡ⁾, NumPy
        for lay, act in zip(params["layers"][layer:], model.activations[layer:], strict=True):
            a = np.asarray(act(jnp.asarray(np.asarray(lay["W"]) @ a / np.sqrt(a.size))))
        return float(np.asarray(params["v"])[:, 0] @ a) / np.sqrt(a.size)

    h = 1e-6
    for layer, (alpha, b) in enumerate(zip(alphas, recursion, strict=True), start=1):
        fd = [(tail(layer, alpha + h * e) - tail(layer, alpha - h * e)) / (2 * h) for e in np.eye(alpha.size)]
        np.testing.assert_allclose(b, fd, rtol=0, atol=1e-8)


@pytest.mark.parametrize("kind", ["mlp", "resnet"])
def test_base_pass_backward_vectors_are_the_gradients_in_the_hidden_layers(x64, kind):
    """b⁽ˡ⁾ = ∂f/∂α⁽ˡ⁾ (Eq. 79; for the ResNet the product of Eq. 103, whose one-step form Eq. 104 adds b⁽ˡ⁺¹⁾ for
    the skip term), against autodiff of the output with respect to α⁽ˡ⁾ of the model's own forward pass."""
    model, params, x = small_network(kind, seed=4)
    bp = hc.base_pass(model, params, x)

    def output_from(layer, a):  # layers layer + 1 .. L run from α⁽ˡᵃʸᵉʳ⁾ = a
        for i in range(layer, model.depth):
            w = params["layers"][i]["W"]
            z = model.activations[i](w @ a / np.sqrt(w.shape[1]))
            a = z + a if kind == "resnet" else z
        return params["v"][:, 0] @ a / np.sqrt(a.size)

    post = model.forward(params, x[None]).post
    for layer in range(1, model.depth + 1):
        want = jax.grad(lambda a, layer=layer: output_from(layer, a))(post[layer][0])
        np.testing.assert_allclose(bp.b[layer - 1], want, rtol=1e-10, atol=1e-14)
