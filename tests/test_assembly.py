"""Chapter 7, Section 2: the assembly model of Eq. (4), its sub-model families, and the Theorem 1 machinery."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from ntkbook import scales
from ntkbook.data import digits, gaussian
from ntkbook.experiments import assembly as ea
from ntkbook.hessian import dense_hessian, hessian_spectral_norm
from ntkbook.models import assembly as asm

D = 7


def _x(seed=0, d=D):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=d)
    return x * math.sqrt(d) / np.linalg.norm(x)


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------


def test_digits_standardized_two_classes():
    x, y = digits.two_classes((3, 8), 10, seed=1)
    assert x.shape == (20, 64) and y.shape == (20,)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(x), axis=1), 8.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x).mean(axis=1), 0.0, atol=1e-6)
    assert np.all(np.asarray(y)[:10] == 1) and np.all(np.asarray(y)[10:] == -1)
    x2, _ = digits.two_classes((3, 8), 10, seed=1)
    np.testing.assert_array_equal(np.asarray(x), np.asarray(x2))  # deterministic
    assert sum(digits.num_images().values()) == 1797


def test_digits_validation():
    with pytest.raises(ValueError, match="two different digits"):
        digits.two_classes((3, 3))
    with pytest.raises(ValueError, match="n_per_class"):
        digits.two_classes((3, 8), 500)
    with pytest.raises(TypeError, match="classes"):
        digits.two_classes(3)
    with pytest.raises(ValueError, match="constant image"):
        digits.standardize(np.ones((2, 64)))


def test_gaussian_inputs_norm_and_labels():
    x, y = gaussian.two_classes(jax.random.key(0), 30, 16)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(x), axis=1), 4.0, rtol=1e-6)
    assert set(np.unique(np.asarray(y))) <= {-1.0, 1.0}
    with pytest.raises(ValueError, match="n must be"):
        gaussian.gaussian_inputs(jax.random.key(0), 0, 3)


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


def test_numerical_smoothness_matches_closed_form():
    x = _x(6)
    res = ea.smoothness(asm.get_family("neuron"), x, 2.0, samples=512, starts=8, steps=100)
    assert res["numerical"] <= res["closed_form"] * (1 + 1e-9)
    assert res["numerical"] >= 0.995 * res["closed_form"]
    sq = ea.smoothness(asm.get_family("square"), x, 2.0, samples=16)
    assert sq["numerical"] == pytest.approx(sq["closed_form"], rel=1e-12)
    mlp = ea.smoothness(asm.get_family("mlp"), x, 2.0, samples=256)
    assert math.isnan(mlp["closed_form"]) and mlp["beta"] == mlp["numerical"] > 0
    with pytest.raises(ValueError, match="samples"):
        ea.smoothness(asm.get_family("mlp"), x, 2.0, samples=0)


# ---------------------------------------------------------------------------------------------
# remainders, worst cases, Theorem 1
# ---------------------------------------------------------------------------------------------


def test_remainder_is_taylor_remainder(x64):
    fam = asm.get_family("mlp")
    x = jnp.asarray(_x(7))
    rng = np.random.default_rng(2)
    w = jnp.asarray(rng.normal(size=fam.num_params(D)))
    delta = jnp.asarray(rng.normal(size=fam.num_params(D)) * 1e-3)
    r = float(ea.sub_model_remainder(fam, w, x, delta))
    h = np.asarray(asm.sub_model_hessian(fam, w, x))
    quad = 0.5 * float(np.asarray(delta) @ h @ np.asarray(delta))
    assert r == pytest.approx(quad, rel=2e-2)  # the third-order term is O(‖Δ‖) ≈ 1e-2 relative
    r_half = float(ea.sub_model_remainder(fam, w, x, delta / 2))
    assert 8 * r_half - r == pytest.approx(quad, rel=1e-4)  # Richardson: cancels the cubic term
    sq = asm.get_family("square")
    a = jnp.asarray(rng.normal(size=D))
    d2 = jnp.asarray(rng.normal(size=D))
    assert float(ea.sub_model_remainder(sq, a, x, d2)) == pytest.approx(0.5 * float(d2 @ x) ** 2 / D, rel=1e-12)


@pytest.mark.parametrize("weights", ["ones", "signs", "gaussian"])
def test_worst_case_of_square_family_attains_the_bound(x64, weights):
    """For g = ½(aᵀx̂)², r(Δ) = (1/s)Σ vᵢ ½(Δᵢᵀx̂)², whose max |·| over ‖Δ‖ ≤ R is R² max(max v⁺, max v⁻)/(2s)."""
    fam = asm.get_family("square")
    x = jnp.asarray(_x(8))
    m, radius = 30, 1.5
    w = asm.init_sub_models(jax.random.key(0), fam, m, D, jnp.float64)
    v = asm.assembly_weights(jax.random.key(1), m, weights, jnp.float64)
    s = asm.scaling_factor(m, asm.resolve_scaling(fam, weights))
    q = asm.active_basis(fam, x)
    sub = ea.sub_model_worst(fam, w, x, q, radius, 1.0, 20)
    wc = ea.worst_case(fam, w, v, s, x, q, sub, radius, 1.0, 20)
    vn = np.asarray(v)
    exact = radius**2 * max(vn.max(initial=0), -vn.min(initial=0)) / (2 * s)
    assert wc["worst"] == pytest.approx(exact, rel=1e-9)
    assert wc["check_error"] < 1e-12


def test_worst_case_matches_brute_force_for_one_neuron(x64):
    """m = 1: the worst case is max over the sphere of |r|; compare with a dense grid on the 2-d active plane."""
    fam = asm.get_family("neuron")
    x = jnp.asarray(_x(9))
    w = asm.init_sub_models(jax.random.key(3), fam, 1, D, jnp.float64)
    v = jnp.ones((1,), jnp.float64)
    q = asm.active_basis(fam, x)
    radius = 2.0
    sub = ea.sub_model_worst(fam, w, x, q, radius, 0.4, 200)
    wc = ea.worst_case(fam, w, v, 1.0, x, q, sub, radius, 2.5, 50)
    angles = np.linspace(0, 2 * np.pi, 20001)
    radii = np.linspace(0, radius, 81)
    t = np.stack(np.meshgrid(radii, angles, indexing="ij"), -1).reshape(-1, 2)
    pts = np.stack([t[:, 0] * np.cos(t[:, 1]), t[:, 0] * np.sin(t[:, 1])], 1)
    vals = jax.vmap(lambda ti: ea.sub_model_remainder(fam, w[0], x, ti @ q))(jnp.asarray(pts))
    brute = float(jnp.max(jnp.abs(vals)))
    assert wc["worst"] >= brute * (1 - 1e-6)
    assert wc["worst"] <= brute * (1 + 1e-3)  # the grid is fine but not exact


def test_theorem1_piece_bound_and_consistency():
    settings = scales.get("assembly_theorem1", "ci").replace(
        families=("neuron",), weights=("signs", "gaussian"), widths=(24,), seeds=1, directions=2, radius=1.0,
        hidden=3, ascent_steps=20, refine_steps=20)
    x = _x(10)
    beta = {"neuron": asm.get_family("neuron").smoothness(1.0, x)}
    rows = ea.theorem1_sweep(settings, x, beta)
    assert len(rows["width"]) == 2
    for k in ("worst", "hessian_term", "random_max"):
        assert np.all(rows[k] <= rows["bound"] * (1 + 1e-9))
    assert np.all(rows["worst_check_error"] < 1e-10)
    assert np.all(rows["worst"] >= rows["worst_concentrated"])
    assert np.all(rows["random_rms"] < rows["worst"])
    # Hessian term ½R²‖H(θ₀)‖ against the dense (float64 LAPACK) norm of the whole assembly's Hessian
    with jax.enable_x64(True):
        model, params = asm.assembly(jax.random.key(0), "neuron", 12, input_dim=D, weights="signs",
                                     dtype=jnp.float64)
        xx = jnp.asarray(x)
        lz = hessian_spectral_norm(lambda p: model.apply(p, xx[None])[0], params, method="dense")
        q = asm.active_basis(model.family, xx)
        sub = ea.sub_model_worst(model.family, params["w"], xx, q, 1.0, 0.5, 2)
        blocks = float(jnp.max(jnp.abs(model.v) * sub["hess_norm"])) / model.scale
    assert lz.value == pytest.approx(blocks, rel=1e-8)


def test_sub_model_mean_decides_scaling():
    x = _x(11)
    sq = ea.sub_model_mean("square", x, 4000, jax.random.key(0))
    ne = ea.sub_model_mean("neuron", x, 4000, jax.random.key(0))
    assert abs(sq["mean"] - 0.5) < 4 * sq["se"]  # E[½ z²] = ½ for z ~ N(0, 1)
    assert abs(ne["mean"]) < 4 * ne["se"]


# ---------------------------------------------------------------------------------------------
# Lemma 2, Assumption 1, Eq. (7)
# ---------------------------------------------------------------------------------------------


def test_lemma2_formulas():
    for m in (10, 100, 1000):
        p = 1 - (1 - 2 * stats.norm.sf(math.log(m))) ** m
        assert ea.lemma2_exact(m) == pytest.approx(p, rel=1e-6)
        assert ea.lemma2_bound(m) == min(1.0, 2 * math.exp(-0.5 * math.log(m) ** 2 + math.log(m)))
    for m in (30, 100, 1000, 10**5):
        assert ea.lemma2_exact(m) <= ea.lemma2_bound(m)
    assert ea.lemma2_bound(10) == 1.0  # vacuous for small m
    # the threshold where the bound crosses one: closed form, Brent root, and the integers around it
    t = ea.lemma2_threshold()
    assert t == pytest.approx(12.7402150408786, rel=1e-12)
    assert ea.lemma2_bound_root() == pytest.approx(t, rel=1e-10)
    assert 2 * 12 * math.exp(-0.5 * math.log(12) ** 2) > 1 > ea.lemma2_bound(13)
    freq = ea.lemma2_frequency((10, 20), 20_000, jax.random.key(0))
    z = np.abs(freq["frequency"] - freq["exact"]) / freq["standard_error"]
    assert np.all(z < 4.5)


def test_median_max_ratios_and_limits():
    x, _ = digits.two_classes((3, 8), 2)
    r = ea.median_max_ratios((8, 32), 2, x, jax.random.key(0))
    assert len(r["ratio"]) == 2 * 2 * 4
    assert np.all((r["ratio"] > 0) & (r["ratio"] <= 1))
    lim = ea.median_limits(3)
    assert lim[0] == pytest.approx(math.tanh(stats.norm.ppf(0.75)), rel=1e-12)
    assert np.all(np.diff(lim) < 0)  # the forward variance shrinks through tanh layers


def test_dominating_sweep_shapes():
    # the sizes and step counts of test_theorem1_piece_bound_and_consistency: the same compiled programs
    settings = scales.get("assembly_assumption1", "ci").replace(widths=(24,), seeds=1, radius=1.0, ascent_steps=20,
                                                                refine_steps=20)
    x = _x(12)
    out = ea.dominating_sweep(settings, x, asm.get_family("neuron").smoothness(1.0, x))
    assert len(out["width"]) == 2
    dom = out["dominant"]
    # median/max of |vᵢgᵢ| falls for the dominated assembly
    assert np.all(out["ratio"][dom] <= out["ratio"][~dom] + 1e-12)


def test_two_layer_network_is_an_assembly():
    res = ea.two_layer_as_assembly(jax.random.key(0), 6, _x(13))
    assert res["output_difference"] < 1e-13
    assert res["max_hessian_difference"] < 1e-12
    assert res["max_abs_cos_between_neurons"] == 0.0


# ---------------------------------------------------------------------------------------------
# The chapter's one-call entry points: the same numbers as the functions they combine
# ---------------------------------------------------------------------------------------------


def test_sub_model_means_per_family_with_the_exact_mean():
    settings = scales.get("assembly_theorem1", "ci").replace(widths=(10, 300), hidden=2)
    x = _x(14)
    means = ea.sub_model_means(settings, x, jax.random.key(3))
    assert tuple(means) == asm.FAMILIES
    for f, r in means.items():
        assert {k: r[k] for k in ("mean", "sd", "se")} == ea.sub_model_mean(f, x, 300, jax.random.key(3), 2)
    # E[g] = 0 for the odd families, E[½(aᵀx̂)²] = ½ for the square (aᵀx̂ ~ N(0, 1) when ‖x‖ = √d)
    assert {f: r["exact"] for f, r in means.items()} == {"neuron": 0.0, "mlp": 0.0, "square": 0.5}


def test_smoothness_by_family_is_smoothness_of_each_family():
    settings = scales.get("assembly_smoothness", "ci").replace(samples=64, starts=2, steps=5)
    x = _x(15)
    out = ea.smoothness_by_family(settings, x, jax.random.key(1))
    assert tuple(out) == asm.FAMILIES
    for f in asm.FAMILIES:
        one = ea.smoothness(asm.get_family(f, "tanh", settings.hidden), x, settings.radius, key=jax.random.key(1),
                            samples=64, starts=2, steps=5)
        assert out[f] == pytest.approx(one, nan_ok=True)
    assert out["square"]["beta"] == pytest.approx(1.0, rel=1e-12)  # H_g = x̂x̂ᵀ, ‖x̂‖ = 1


def test_lemma2_first_m_and_z_scores():
    assert ea.lemma2_first_m() == 13 == math.ceil(ea.lemma2_threshold())
    assert ea.lemma2_bound(ea.lemma2_first_m() - 1) == 1.0
    with pytest.raises(ValueError, match="stays at 1"):
        ea.lemma2_first_m(limit=13)
    freq = {"frequency": np.array([0.10, 0.0, 0.5]), "exact": np.array([0.12, 1e-6, 0.5]),
            "standard_error": np.array([0.01, 1e-5, 0.02]), "draws": np.array([1000, 1000, 1000])}
    # |Δ|/se = 2; where se < 1/draws the unit is 1/draws: 1e-6/1e-3 = 1e-3; a match is 0
    np.testing.assert_allclose(ea.lemma2_z_scores(freq), [2.0, 1e-3, 0.0], rtol=1e-12)


def test_network_median_max_ratios_uses_the_settings():
    settings = scales.get("assembly_assumption1", "ci").replace(network_widths=(8, 16), depth=2, runs=1)
    x, _ = digits.two_classes((3, 8), 2)
    a = ea.network_median_max_ratios(settings, x, jax.random.key(0))
    b = ea.median_max_ratios((8, 16), 2, x, jax.random.key(0), runs=1)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("call, error, message", [
    (lambda: ea.sub_model_means(scales.get("assembly_smoothness", "ci"), _x(14), jax.random.key(0)),
     TypeError, "AssemblyTheorem1 settings"),
    (lambda: ea.smoothness_by_family(scales.get("assembly_theorem1", "ci"), _x(14), jax.random.key(0)),
     TypeError, "AssemblySmoothness settings"),
    (lambda: ea.network_median_max_ratios({"network_widths": (8,)}, _x(14)[None], jax.random.key(0)),
     TypeError, "AssemblyAssumption1 settings"),
    (lambda: ea.lemma2_first_m(limit=2), ValueError, "limit must be an integer >= 3"),
    (lambda: ea.lemma2_first_m(limit=20.0), TypeError, "limit must be an integer"),
    (lambda: ea.lemma2_z_scores({"frequency": np.zeros(2), "exact": np.zeros(2)}), ValueError,
     "frequency lacks the field.*'standard_error'"),
    (lambda: ea.lemma2_z_scores(np.zeros(2)), TypeError, "frequency must be a mapping"),
], ids=["means settings", "smoothness settings", "ratios settings", "first m limit", "first m float",
        "z fields", "z mapping"])
def test_chapter_entry_points_reject_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
