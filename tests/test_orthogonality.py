"""The ``orthogonality`` reproduction (Figure 3 of Liu–Zhu–Belkin 2022) and what chapter 7b shares with it:
the Gram matrices of neuron gradients (against autodiff Jacobians), Eq. 22's cosines, Lemma 1's Gaussian
constant (against a wide network), the piece and the typed sweep (keys of the archived run, resume)."""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import reproduce, scales
from ntkbook.data import digits
from ntkbook.models import mlp
from ntkbook.models.densenet import densenet
from ntkbook.random import fold_key
from ntkbook.reproductions import orthogonality as orth

SETTINGS = scales.get("orthogonality", "ci").replace(
    n_per_class=3, widths=(6, 12), bottleneck_widths=(3, 6), bottleneck_outer=12, runs=1, sampled_neurons=64,
    gd_steps=5)


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
    fast = orth.neuron_gradient_grams(model, params, x)
    ref = _brute_force_grams(model, params, x)
    for a, b in zip(fast, ref, strict=True):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-11, atol=1e-12)
    sub = orth.neuron_gradient_grams(model, params, x, neurons=3)
    for a, b in zip(sub, ref, strict=True):
        k = min(3, b.shape[1])
        np.testing.assert_allclose(np.asarray(a), b[:, :k, :k], rtol=1e-11, atol=1e-12)
    picked = orth.neuron_gradient_grams(model, params, x, layers=(3, 2))  # only the layers asked for
    for a, layer in zip(picked, (3, 2), strict=True):
        np.testing.assert_allclose(np.asarray(a), ref[layer - 1], rtol=1e-11, atol=1e-12)


def test_grams_validation():
    model, params = mlp(jax.random.key(0), (3, 3), input_dim=2)
    with pytest.raises(TypeError, match="MLP or a DenseNet"):
        orth.neuron_gradient_grams(object(), params, jnp.ones((1, 2)))
    with pytest.raises(ValueError, match="x must have 2 dimensions"):
        orth.neuron_gradient_grams(model, params, jnp.ones(2))
    with pytest.raises(ValueError, match="neurons"):
        orth.neuron_gradient_grams(model, params, jnp.ones((1, 2)), neurons=0)
    with pytest.raises(ValueError, match=r"layers must lie in 1\.\.2"):
        orth.neuron_gradient_grams(model, params, jnp.ones((1, 2)), layers=(3,))
    with pytest.raises(TypeError, match="layers must be a non-empty tuple"):
        orth.neuron_gradient_grams(model, params, jnp.ones((1, 2)), layers=())


def test_cosines():
    g = np.array([[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 9.0]])
    np.testing.assert_allclose(np.asarray(orth.cosine_matrix(g)), [[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    assert float(orth.mean_abs_cos(g)) == pytest.approx(2 / 6)
    assert bool(jnp.isnan(orth.mean_abs_cos(np.ones((1, 1)))))
    model, params = mlp(jax.random.key(0), (8, 8), input_dim=4)
    g = orth.neuron_gradient_grams(model, params, jnp.ones((2, 4)))
    assert float(jnp.max(orth.mean_abs_cos(g[0]))) == 0.0  # disjoint supports (Remark 4)
    assert float(jnp.min(orth.mean_abs_cos(g[1]))) > 0.0


def test_clt_prediction_against_a_wide_network():
    """√m E|cos| for layer-2 neurons at initialization approaches the Gaussian constant of Lemma 1."""
    c = orth.clt_prediction()
    assert 0.5 < c < 0.6
    x = jnp.asarray(np.random.default_rng(3).normal(size=(4, 64)))
    x = x * 8.0 / jnp.linalg.norm(x, axis=1, keepdims=True)
    vals = []
    for seed in range(3):
        model, params = mlp(jax.random.key(seed), (1024, 256), input_dim=64)
        vals.append(float(jnp.mean(orth.mean_abs_cos(orth.neuron_gradient_grams(model, params, x, 128)[1]))))
    assert np.mean(vals) * math.sqrt(1024) == pytest.approx(c, rel=0.05)


def test_clt_prediction_of_widths():
    widths = np.array([128, 256, 10**6])
    pred = orth.clt_prediction(widths, extra_inputs=64)
    assert pred.shape == (3,) and pred.dtype == np.float64
    np.testing.assert_array_equal(pred, [orth.clt_prediction(int(m), extra_inputs=64) for m in widths])
    assert isinstance(orth.clt_prediction(128), float)
    # without extra inputs √m·E|cos| is the constant c at every width; the input only dilutes it
    np.testing.assert_allclose(orth.clt_prediction(widths) * np.sqrt(widths), orth.clt_prediction(), rtol=1e-12)
    assert np.all(pred < orth.clt_prediction(widths))
    with pytest.raises(ValueError, match="width"):
        orth.clt_prediction([0, 8])


def test_networks_and_piece():
    x, y = digits.two_classes((3, 8), 3)
    fc, _ = orth.network(jax.random.key(0), "fc", 5, 64)
    bn, _ = orth.network(jax.random.key(0), "bottleneck", 2, 64, outer=12)
    assert fc.widths == (5, 5, 5) and bn.widths == (12, 2, 12)
    # one model object per architecture (the static key of the compiled training loop), different draws
    fc1, p1 = orth.network(jax.random.key(1), "fc", 5, 64)
    _, p0 = orth.network(jax.random.key(0), "fc", 5, 64)
    assert fc1 is fc and not np.allclose(p1["layers"][0]["W"], p0["layers"][0]["W"])
    with pytest.raises(ValueError, match="unknown kind"):
        orth.network(jax.random.key(0), "cnn", 5, 64)
    with pytest.raises(TypeError, match="outer"):
        orth.network(jax.random.key(0), "bottleneck", 2, 64)
    rows = orth.piece(jax.random.key(0), "densenet", 6, x, y, neurons=64, steps=5, depth=2)
    assert rows["layer"] == [1, 2] and rows["cos"][0] == rows["cos0"][0] == 0.0 and rows["loss"] < rows["loss0"]


def test_orthogonality_reproduction(tmp_path, monkeypatch):
    """The registered typed reproduction on the tiny SETTINGS in place of the ci row (the ci row itself runs in
    chapter 7b and through ``python -m ntkbook reproduce orthogonality --scale ci``): the table, the keys of the
    archived run, the figure, resume from the cache, and shards that merge into the same table."""
    monkeypatch.setitem(scales.TABLE["orthogonality"], "ci", SETTINGS)
    result = reproduce.run("orthogonality", "ci", tmp_path)
    assert json.loads((tmp_path / "orthogonality.json").read_text()) == result
    table = result["table"]
    assert list(table) == ["kind", "width", "run", "layer", "cos0", "cos", "loss0", "loss", "lr", "displacement"]
    assert len(table["kind"]) == 4 * 3 and table["width"][:3] == [6, 6, 6] and table["layer"][:3] == [1, 2, 3]
    assert result["summary"] == {"clt_constant_layer2": orth.clt_prediction()}
    assert (tmp_path / "orthogonality.png").stat().st_size > 0
    # the piece (fc, 12, 0) with the archive's key fold_in(key(seed), kind index, width, run)
    x, y = digits.two_classes((3, 8), 3)
    key = fold_key(jax.random.key(SETTINGS.seed), 0, 12, 0)
    rows = orth.piece(key, "fc", 12, x, y, neurons=64, steps=5)
    i = table["kind"].index("fc") + 3  # width 12, run 0, layer 1
    assert table["cos"][i: i + 3] == rows["cos"] and table["lr"][i] == rows["lr"]
    again = reproduce.run("orthogonality", "ci", tmp_path)
    assert again["cached_pieces"] == again["pieces"] == 4 and again["table"] == table
    sharded = tmp_path / "sharded"
    parts = [reproduce.run("orthogonality", "ci", sharded, shard=(i, 2)) for i in range(2)]
    assert [p["pieces"] for p in parts] == [2, 2]
    assert reproduce.run("orthogonality", "ci", sharded)["table"] == table
