"""Chapter 3: the compressed Hessian, the structured layer norms, the bounds of Theorem 3.1, the ball
experiments of Theorem 3.2, and the CNN / ResNet models — against dense autodiff references."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import small_network
from ntkbook import hessian, hessian_bounds, layer_norms, models, scales
from ntkbook import hessian_compressed as hc
from ntkbook.ball import point_on_sphere
from ntkbook.data.sphere import unit_scale_input
from ntkbook.experiments import deep_hessian as dh


def _full_fn(model, x):
    return lambda p: model.apply(p, x[None])[0]



def test_structured_norms_match_autodiff_tensors_and_norm_221(x64):
    rows = dh.structured_norms_check(jax.random.key(0), width=5, depth=3, input_dim=3)
    assert {r["model"] for r in rows} == {"MLP", "ResNet"}
    for r in rows:
        assert r["exact"]
        assert r["formula"] == pytest.approx(r["reference"], rel=1e-9, abs=1e-12), r

@pytest.mark.parametrize("depth,train", [(2, False), (3, True), (4, True)])
def test_bounds_dominate_hessian_and_are_ordered(x64, depth, train):
    model, p0, x = small_network("mlp", seed=9, width=6, depth=depth, train_output=train)
    for p in (p0, point_on_sphere(jax.random.key(3), p0, 3.0)):
        f = layer_norms.layer_factors(model, p, x)
        b = dh.hessian_bounds(f, include_v=train)
        h = hessian.dense_spectral_norm(_full_fn(model, x), p)
        assert h <= b["blockwise"] * (1 + 1e-10)
        assert b["blockwise"] <= b["lemma_e1"] * (1 + 1e-12)
        assert b["lemma_e1"] <= b["theorem_3_1"] * (1 + 1e-12)
        # the a-priori layer-Jacobian bound (Lemma G.2) dominates the exact norms
        prior = hessian_bounds.a_priori_layer_jacobian(model, p0, p)
        assert np.all(f["ja"][1:] <= prior[1:] * (1 + 1e-12))
        if depth == 2 and not train:
            assert dh.eq_17_terms(f)["eq_17"] == pytest.approx(b["lemma_e1"], rel=1e-12)

def test_block_bounds_dominate_each_dense_block(x64):
    model, params, x = small_network("mlp", seed=10, width=5, depth=3)
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

def test_proposition_3_1_rows_are_ordered():
    # (compression_check is the chapter's claims lemma-3-range/compressed-equals-dense-hessian and
    # .../compressed-equals-full-lanczos at ci; the compressed Hessian is tested against dense references above)
    p31 = dh.proposition_3_1(scales.get("prop_3_1", "ci").replace(widths=(8,), seeds=1, input_dim=3, activation="tanh"), jax.random.key(1))
    assert np.all(p31["hessian"] <= p31["blockwise"] * (1 + 1e-5))
    assert np.all(p31["blockwise"] <= p31["eq_17"] * (1 + 1e-9))


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

    model, params, x = small_network("mlp", seed=3, width=(5, 7, 4), d=3, activation=activation)
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
    model, params, x = small_network("mlp", seed=5, width=(6, 5, 4), d=3, activation=activation, train_output=train)
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
    model, p0, x = small_network("mlp", seed=7, width=(16, 16), d=3, activation="softplus")
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
    res, rp, rx = small_network("resnet", seed=1)
    with pytest.raises(TypeError, match="MLP"):
        dh.backward_vectors(res, rp, rx)
    biased, bp_, bx = small_network("mlp", seed=1, use_bias=True)
    with pytest.raises(ValueError, match="biases"):
        dh.backward_vectors(biased, bp_, bx)

def test_lemma_f5_and_eq_85_87_bounds_by_hand():
    np.testing.assert_allclose(dh.lemma_f5_bounds(3, 16, 2.0, 4.0, 1.5), [1.5**2 * 3.0**3, 1.5 * 3.0**2, 3.0],
                               rtol=1e-14)
    np.testing.assert_allclose(dh.lemma_f5_bounds(2, 9, 2.0, 0.0, 1.0), [4.0, 2.0], rtol=1e-14)  # Eq. 81
    c0, r, lip, beta, c_x, s0, m = 2.0, 4.0, 1.5, 0.25, 0.5, math.log(2), 16
    b0 = np.array([0.1, 0.2, 0.3])
    out = dh.eq_85_87_bounds(3, m, c0, r, lip, beta, c_x, s0, b0)
    a = hessian_bounds.lemma_f3_bounds(3, m, c0, r, lip, c_x, s0)["corrected"]
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
