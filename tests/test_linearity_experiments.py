"""Chapter 6: the data of Eq. (42), the paper's swish, the step-size rule, the networks of Eq. (43)
and (48), the training of a piece against a Python loop, sharding over devices, and both
reproductions at ci scale (every JSON key, resume from the cache)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbook as nb
from ntkbook import kernels, parallel, reproduce, scales
from ntkbook.data.gaussian_classes import PAPER_MEANS, gaussian_classes
from ntkbook.experiments import linearity_experiments as le

# ---------------------------------------------------------------------------------------------
# Data, Eq. (42)
# ---------------------------------------------------------------------------------------------


def test_gaussian_classes_shapes_and_seeding():
    d = gaussian_classes(jax.random.key(3), 60)
    assert d.x.shape == (60, 1) and d.labels.shape == (60,) and d.y.shape == (60, 3)
    np.testing.assert_array_equal(np.argmax(d.y, axis=1), d.labels)
    np.testing.assert_array_equal(d.y.sum(axis=1), np.ones(60))
    again = gaussian_classes(jax.random.key(3), 60)
    np.testing.assert_array_equal(again.x, d.x)
    other = gaussian_classes(jax.random.key(4), 60)
    assert not np.array_equal(other.x, d.x)


def test_gaussian_classes_distribution():
    """Equiprobable labels and x | y ~ N(means[y], 1), checked within 5 standard errors."""
    n = 60_000
    d = gaussian_classes(jax.random.key(0), n)
    labels, x = np.asarray(d.labels), np.asarray(d.x[:, 0], np.float64)
    freq = np.bincount(labels, minlength=3) / n
    assert np.all(np.abs(freq - 1 / 3) < 5 * math.sqrt((1 / 3) * (2 / 3) / n))
    for c, mean in enumerate(PAPER_MEANS):
        xc = x[labels == c]
        assert abs(xc.mean() - mean) < 5 / math.sqrt(xc.size)
        assert abs(xc.std() - 1.0) < 5 * math.sqrt(0.5 / xc.size)


def test_gaussian_classes_validates():
    with pytest.raises(ValueError, match="n must be"):
        gaussian_classes(jax.random.key(0), 0)
    with pytest.raises(ValueError, match="means"):
        gaussian_classes(jax.random.key(0), 10, means=(1.0,))
    with pytest.raises(ValueError, match="std"):
        gaussian_classes(jax.random.key(0), 10, std=-1.0)


# ---------------------------------------------------------------------------------------------
# The paper's swish
# ---------------------------------------------------------------------------------------------


def test_paper_swish_values_and_derivatives():
    act = le.PAPER_SWISH
    z = np.linspace(-40, 40, 2001)
    ref = z / (1 + np.exp(-0.1 * z))
    np.testing.assert_allclose(np.asarray(act(jnp.asarray(z, jnp.float32))), ref, rtol=2e-6, atol=2e-6)
    s = 1 / (1 + np.exp(-0.1 * z))
    d1 = s + 0.1 * z * s * (1 - s)
    d2 = 0.1 * s * (1 - s) * (2 + 0.1 * z * (1 - 2 * s))
    np.testing.assert_allclose(np.asarray(act.derivative(jnp.asarray(z, jnp.float32))), d1, atol=2e-6)
    np.testing.assert_allclose(np.asarray(act.derivative(jnp.asarray(z, jnp.float32), 2)), d2, atol=2e-7)
    assert nb.activations.swish(0.1) is act  # cached: one object, so compiled code is shared
    assert nb.activations.get_activation("swish(beta=0.1)") is act


def test_paper_swish_constants():
    """L = sup|φ'| is β-independent (the registry's β = 1 swish has the same); β_σ = sup|φ''| = β/2."""
    act = le.PAPER_SWISH
    z = np.linspace(-300, 300, 600_001)
    s = 1 / (1 + np.exp(-0.1 * z))
    d1 = s + 0.1 * z * s * (1 - s)
    d2 = 0.1 * s * (1 - s) * (2 + 0.1 * z * (1 - 2 * s))
    assert act.lipschitz == pytest.approx(np.abs(d1).max(), rel=1e-7)
    assert act.lipschitz == pytest.approx(nb.activations.get_activation("swish").lipschitz, rel=1e-9)
    assert act.smoothness == 0.05 and np.abs(d2).max() == pytest.approx(0.05, rel=1e-9)
    assert act.lipschitz == pytest.approx(1.0998, abs=1e-4)
    with pytest.raises(ValueError, match="beta"):
        nb.activations.swish(0.0)


# ---------------------------------------------------------------------------------------------
# The step-size rule
# ---------------------------------------------------------------------------------------------


def test_step_sizes_formula():
    k = np.stack([np.diag([4.0, 1.0, 0.5]), np.diag([2.0, 8.0, 1.0])])
    eta = le.step_sizes(k, 3, 0.5, factor=1.0)
    np.testing.assert_allclose(eta, [3 / (0.5 * 4), 3 / (0.5 * 8)])
    assert float(le.step_sizes(k[0], 3, 1.0, factor=0.5)) == pytest.approx(0.375)
    with pytest.raises(ValueError, match="square"):
        le.step_sizes(np.ones((2, 3)), 2, 1.0)
    with pytest.raises(ValueError, match="no positive eigenvalue"):
        le.step_sizes(-np.eye(3), 3, 1.0)


def test_loss_curvatures_bound_the_loss_hessians():
    """β_ℓ = 1/2 bounds λ_max(diag p − ppᵀ) (attained at p = (½, ½, 0)); β_ℓ = L² for swish∘square."""
    p = np.random.default_rng(0).dirichlet(np.ones(3) * 0.3, size=5000)
    lam = np.linalg.eigvalsh(np.einsum("ij,jk->ijk", p, np.eye(3)) - p[:, :, None] * p[:, None, :])[:, -1]
    assert lam.max() <= le.loss_curvature("cross_entropy") + 1e-12
    p2 = np.array([0.5, 0.5, 0.0])
    assert np.linalg.eigvalsh(np.diag(p2) - np.outer(p2, p2))[-1] == pytest.approx(0.5)
    assert le.loss_curvature("swish") == pytest.approx(le.PAPER_SWISH.lipschitz**2)
    with pytest.raises(ValueError, match="training"):
        le.loss_curvature("hinge")


@pytest.mark.parametrize(("factor", "stable"), [(1.0, True), (1.9, True), (2.1, False)])
def test_step_size_rule_is_the_stability_limit_of_a_linear_model(factor, stable):
    """For f = Φw and the square loss (1/2n)‖Φw − y‖², GD is stable iff η < 2n/λ_max(ΦΦᵀ): factor < 2."""
    rng = np.random.default_rng(1)
    phi = rng.normal(size=(8, 20))
    y = rng.normal(size=8)
    eta = float(le.step_sizes(phi @ phi.T, 8, 1.0, factor=factor))
    w = np.zeros(20)
    for _ in range(400):
        w = w - eta * phi.T @ (phi @ w - y) / 8
    loss = 0.5 * np.mean((phi @ w - y) ** 2)
    assert (loss < 1e-6) == stable


# ---------------------------------------------------------------------------------------------
# The networks of Eq. (43) and Eq. (48)
# ---------------------------------------------------------------------------------------------


def test_one_hidden_layer_is_eq43():
    m = 50
    model = le.one_hidden_layer(m)
    params = jax.tree_util.tree_map(lambda a: a[0], le.init_params(model, [0], salt=m))
    x = np.linspace(-12, 12, 7)[:, None]
    w = np.asarray(params["layers"][0]["W"], np.float64)[:, 0]
    b = np.asarray(params["layers"][0]["b"], np.float64)
    v = np.asarray(params["v"], np.float64).T  # V ∈ ℝ^{3×m}
    ref = (v @ np.maximum(np.outer(w, x[:, 0]) + b[:, None], 0)).T / math.sqrt(m)
    np.testing.assert_allclose(np.asarray(model.apply(params, x)), ref, rtol=1e-5, atol=1e-5)
    assert le.one_hidden_layer(m) is model


def test_bottleneck_network_is_eq48_with_ntk_factor_and_biases():
    m, mb = 40, 3
    model = le.bottleneck_network(m, mb)
    params = jax.tree_util.tree_map(lambda a: a[0], le.init_params(model, [1], salt=7))
    x = np.linspace(-12, 12, 5)[:, None]
    (l1, l2, l3), v = params["layers"], np.asarray(params["v"], np.float64)
    w = [np.asarray(layer["W"], np.float64) for layer in (l1, l2, l3)]
    b = [np.asarray(layer["b"], np.float64) for layer in (l1, l2, l3)]
    h1 = np.maximum(x @ w[0].T + b[0], 0)
    h2 = h1 @ w[1].T / math.sqrt(m) + b[1]  # identity bottleneck
    h3 = np.maximum(h2 @ w[2].T / math.sqrt(mb) + b[2], 0)
    np.testing.assert_allclose(np.asarray(model.apply(params, x)), h3 @ v / math.sqrt(m), rtol=1e-4, atol=1e-4)


def test_init_params_is_deterministic_per_seed():
    model = le.one_hidden_layer(8)
    a = le.init_params(model, [0, 1, 2], salt=8)
    b = le.init_params(model, [2], salt=8)
    np.testing.assert_array_equal(a["v"][2], b["v"][0])
    assert not np.array_equal(a["v"][0], a["v"][1])


# ---------------------------------------------------------------------------------------------
# Training one piece against an independent loop
# ---------------------------------------------------------------------------------------------


def _local_curvature(f, y):
    """β_t of the cross-entropy rule from the logits, in NumPy: min(1/2, 2 max(1 − p_y)), floored."""
    p = np.exp(f - f.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return max(min(0.5, 2 * np.max(1 - np.sum(p * y, axis=1))), 1e-4 * 0.5)


def _swish_hessian(f, y):
    """d = max(φ'(f)² + (φ(f) − y)φ''(f), 0) for swish(z) = z σ(z/10), φ' and φ'' by hand (float64)."""
    f = np.asarray(f, np.float64)
    s = 1 / (1 + np.exp(-0.1 * f))
    d1 = s + 0.1 * f * s * (1 - s)
    d2 = 0.1 * s * (1 - s) * (2 + 0.1 * f * (1 - 2 * s))
    return np.maximum(d1**2 + (f * s - y) * d2, 0.0)


def _gn_lambda_max(k, f, y):
    """λ_max(D^{1/2} K D^{1/2}) in float64: the curvature of (1/2N)Σ‖φ(f) − y‖² along J (times N)."""
    r = np.sqrt(_swish_hessian(f, y).reshape(-1))
    return np.linalg.eigvalsh(r[:, None] * np.asarray(k, np.float64) * r[None, :])[-1]


def test_swish_loss_hessian_is_the_second_derivative():
    f = np.linspace(-40, 40, 801).reshape(-1, 1) * np.ones((1, 3))
    y = np.tile(np.eye(3), (267, 1))[:801]
    got = np.asarray(le.swish_loss_hessian(jnp.asarray(f, jnp.float32), jnp.asarray(y, jnp.float32)))
    np.testing.assert_allclose(got, _swish_hessian(f, y), atol=2e-6)
    # against autodiff of ½(φ(z) − y)² (where it is positive)
    second = jax.vmap(jax.grad(jax.grad(lambda z, t: 0.5 * (le.PAPER_SWISH(z) - t) ** 2)))
    auto = np.asarray(second(jnp.asarray(f.ravel()), jnp.asarray(y.ravel(), jnp.float32))).reshape(f.shape)
    np.testing.assert_allclose(got, np.maximum(auto, 0), atol=2e-6)


def test_swish_curvature_bound_between_refreshes():
    """Between two measurements of the kernel the step uses λ̂_t = λ_max(D_r^½K_rD_r^½) + ‖d_t − d_r‖∞λ_max(K_r)
    (Weyl), which bounds λ_max(D_t^½K_rD_t^½); at a refresh step the state is measured again."""
    m = 24
    model = le.one_hidden_layer(m)
    data = le.paper_data(scales.get("nonlinear_output", "ci"))
    rule = le.local_curvature_step(model, data, "swish")
    p0, p1 = (jax.tree_util.tree_map(lambda a, i=i: a[i], le.init_params(model, [3, 4], salt=m)) for i in range(2))
    state = rule.measure(p0)
    k0 = np.asarray(kernels.empirical_ntk(model.apply, p0, data.x, flat=True), np.float64)
    y = np.asarray(data.y)
    f0, f1 = (np.asarray(model.apply(p, data.x)) for p in (p0, p1))
    assert float(state.lam_gn) == pytest.approx(_gn_lambda_max(k0, f0, y), rel=1e-4)
    assert float(state.lam_kernel) == pytest.approx(np.linalg.eigvalsh(k0)[-1], rel=1e-4)
    bound = float(rule.bound(p1, state))
    d0, d1 = _swish_hessian(f0, y).reshape(-1), _swish_hessian(f1, y).reshape(-1)
    assert bound == pytest.approx(_gn_lambda_max(k0, f0, y) + np.abs(d1 - d0).max() * np.linalg.eigvalsh(k0)[-1],
                                  rel=1e-4)
    assert bound >= _gn_lambda_max(k0, f1, y)
    grads = jax.tree_util.tree_map(jnp.ones_like, p1)
    opt = rule(0.5)
    for step, refreshed in ((250, False), (300, True), (7, True)):
        upd, new = opt.update(grads, state, p1, step=jnp.asarray(step))
        lam = _gn_lambda_max(np.asarray(kernels.empirical_ntk(model.apply, p1, data.x, flat=True)), f1, y) \
            if refreshed else bound
        assert float(upd["v"][0, 0]) == pytest.approx(-0.5 * float(state.lam_start) / lam, rel=2e-4)
        assert (float(new.lam_gn) != float(state.lam_gn)) == refreshed
    with pytest.raises(ValueError, match="step"):
        opt.update(grads, state, p1)


@pytest.mark.parametrize("training_name", ["cross_entropy", "swish"])
def test_train_runs_matches_a_python_loop(training_name):
    """ΔK at every step, the step size of the rule and the loss in the paper's units, against plain
    GD on the paper's loss (Eq. 46 or Eq. 47) with Jacobian-contraction kernels."""
    m, steps = 16, 5
    settings = scales.get("nonlinear_output", "ci").replace(max_steps=steps, swish_max_steps=steps, loss_tol=1e-4,
                                                            lr_factor=1.0,
                                                            per_decade=12, n=60, data_seed=0)
    data = le.paper_data(settings)
    maps = le.output_maps(m)
    params = le.init_params(maps["linear"], [0, 1], salt=m)
    out = le.train_runs(maps["linear"], params, data, training=training_name, settings=settings,
                        record_steps=np.arange(steps + 1))
    x, y = data.x, data.y
    names = le.KERNELS[training_name]
    kernel = {n: jax.jit(lambda q, n=n: kernels.flatten_ntk(nb.empirical_ntk(maps[n].apply, q, x, method="jacobian")))
              for n in ("linear", *names)}
    for r in range(2):
        p = jax.tree_util.tree_map(lambda a, r=r: a[r], params)
        k_f = kernel["linear"](p)
        lam = np.linalg.eigvalsh(np.asarray(k_f, np.float64))[-1]
        if training_name == "cross_entropy":
            lr = 60 / (0.5 * lam)

            def paper_loss(q):
                return -jnp.sum(y * jax.nn.log_softmax(maps["linear"].apply(q, x), axis=-1)) / 60
        else:
            # the measured curvature at w₀, for Eq. (47) = (1/N)Σ‖·‖² (half the step of training.py's loss)
            lr = settings.swish_lr_factor * 60 / _gn_lambda_max(k_f, maps["linear"].apply(p, x), y) / 2

            def paper_loss(q):
                return jnp.sum((maps["swish"].apply(q, x) - y) ** 2) / 60
        assert out["lr"][r] == pytest.approx(lr, rel=1e-4)
        k0 = {n: kernel[n](p) for n in names}
        grad = jax.jit(jax.grad(paper_loss))
        sup = dict.fromkeys(names, 0.0)
        for t in range(steps + 1):
            for n in names:
                k = kernel[n](p)
                change = float(kernels.relative_change(k, k0[n]))
                sup[n] = max(sup[n], change)
                assert out["curves"][n][r][t] == pytest.approx(change, rel=2e-3, abs=1e-5)
            if t < steps:
                f_t = np.asarray(maps["linear"].apply(p, x))
                if training_name == "cross_entropy":
                    step = lr * 0.5 / _local_curvature(f_t, np.asarray(y))
                else:  # before the first refresh interval the kernel is measured at every step
                    step = settings.swish_lr_factor * 60 / _gn_lambda_max(kernel["linear"](p), f_t, np.asarray(y)) / 2
                p = jax.tree_util.tree_map(lambda a, g, step=step: a - step * g, p, grad(p))
        for n in names:
            assert out["delta_k"][n][r] == pytest.approx(sup[n], rel=2e-3, abs=1e-5)
        assert out["final_loss"][r] == pytest.approx(float(paper_loss(p)), rel=1e-3)
        assert out["steps"][r] == steps and out["cap_hit"][r]


# ---------------------------------------------------------------------------------------------
# Assembly (layouts, seed order) without training
# ---------------------------------------------------------------------------------------------


def _fake_result(seeds, kinds, steps=(0, 1, 2, 4)):
    base = 10.0 * seeds[0]
    return {"seeds": seeds, "lr": [0.1 + s for s in seeds], "delta_k": {k: [base + s for s in seeds] for k in kinds},
            "steps": [4 for _ in seeds], "final_loss": [0.5 for _ in seeds], "cap_hit": [True for _ in seeds],
            "trapped": [s % 2 for s in seeds], "stalled": [s == 2 for s in seeds],
            "record_steps": list(steps), "curves": {k: [[s] * len(steps) for s in seeds] for k in kinds}}


def test_assemble_nonlinear_output_layout():
    settings = scales.get("nonlinear_output", "ci").replace(widths=(10, 20), runs=3, runs_per_piece=2,
                                                            trajectory_width=20, max_steps=4)
    pieces = le.nonlinear_output_pieces(settings)
    assert len(pieces) == 2 * 2 * 2 and pieces[0] == {"training": "cross_entropy", "width": 10, "seeds": [0, 1]}
    results = [_fake_result(p["seeds"], le.KERNELS[p["training"]]) for p in pieces]
    order = np.random.default_rng(0).permutation(len(pieces))  # assembly must not depend on order
    with pytest.warns(UserWarning, match="step cap"):
        body = le.assemble_nonlinear_output(settings, [pieces[i] for i in order], [results[i] for i in order])
    assert body["widths"] == [10, 20]
    assert body["delta_k"]["swish"] == [[0.0, 1.0, 22.0], [0.0, 1.0, 22.0]]
    assert body["steps"]["softmax"] == [[4, 4, 4], [4, 4, 4]]
    assert body["swish_trapped"] == [[0, 1, 0], [0, 1, 0]]
    assert body["swish_stalled"] == [[False, False, True], [False, False, True]]
    assert body["trajectory"]["width"] == 20 and body["trajectory"]["epochs"]["linear"] == [0, 1, 2, 4]
    assert body["trajectory"]["linear"] == [[0, 1, 2]] * 4
    assert body["settings"]["learning_rates"]["cross_entropy"][0] == pytest.approx([0.1, 1.1, 2.1])
    with pytest.raises(ValueError, match="trajectory_width"):
        le.nonlinear_output_pieces(settings.replace(trajectory_width=30))


# ---------------------------------------------------------------------------------------------
# Sharding over devices
# ---------------------------------------------------------------------------------------------


def test_parallel_single_device_is_a_no_op():
    tree = {"a": jnp.arange(6.0).reshape(3, 2), "b": jnp.ones(3)}
    out, runs = parallel.shard_runs(tree, jax.devices()[:1])
    assert out is tree and runs == 3
    assert parallel.padded_size(3, jax.devices()[:1]) == 3
    cut = parallel.unpad({"a": np.zeros((4, 2))}, 3)
    assert cut["a"].shape == (3, 2)
    with pytest.raises(ValueError, match="leading"):
        parallel.shard_runs({"a": jnp.ones((3, 2)), "b": jnp.ones(2)})


_SHARD_SCRIPT = textwrap.dedent("""
    import json, jax, numpy as np
    from ntkbook import parallel
    from ntkbook.experiments import linearity_experiments as le
    assert jax.device_count() == 2, jax.devices()
    tree, runs = parallel.shard_runs({"w": np.arange(6.0).reshape(3, 2)})
    assert runs == 3 and tree["w"].shape == (4, 2) and len(tree["w"].sharding.device_set) == 2
    from ntkbook import scales
    s = scales.get("nonlinear_output", "ci").replace(max_steps=20, loss_tol=1e-4, lr_factor=1.0, per_decade=12, n=60,
                                                     data_seed=0)
    model = le.one_hidden_layer(32)
    params = le.init_params(model, [0, 1, 2], salt=32)
    data = le.paper_data(s)
    both = le.train_runs(model, params, data, training="cross_entropy", settings=s)
    one = le.train_runs(model, params, data, training="cross_entropy", settings=s, devices=jax.devices()[:1])
    print(json.dumps({"both": both["delta_k"], "one": one["delta_k"], "loss_both": both["final_loss"],
                      "loss_one": one["final_loss"]}))
""")


def test_sharded_runs_match_one_device():
    """Three runs spread over two (forced host) devices give the results of one device."""
    # added to the caller's XLA flags (make test's compile options), not in place of them
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2".strip()
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", _SHARD_SCRIPT], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    for k in ("linear", "softmax"):
        np.testing.assert_allclose(res["both"][k], res["one"][k], rtol=1e-4)
        assert len(res["both"][k]) == 3
    np.testing.assert_allclose(res["loss_both"], res["loss_one"], rtol=1e-4)


# ---------------------------------------------------------------------------------------------
# Both reproductions at ci scale: JSON keys and resume
# ---------------------------------------------------------------------------------------------

COMMON_KEYS = {"name", "scale", "settings", "seconds", "jax", "backend", "devices"}


@pytest.mark.parametrize("name", ["nonlinear-output", "bottleneck"])
def test_reproduction_at_ci_scale_and_resume(name, tmp_path, monkeypatch):
    # the ci table's settings with short step caps (the runs stop at the cap, hence the warning), and two
    # small sizes (the JSON layout and the resume do not depend on how many or how large)
    original = scales.get
    short = ({"max_steps": 40, "swish_max_steps": 30, "widths": (10, 20), "trajectory_width": 20}
             if name == "nonlinear-output" else {"max_steps": 40, "width": 100, "bottleneck_widths": (3, 10)})
    monkeypatch.setattr(scales, "get", lambda experiment, scale: original(experiment, scale).replace(**short))
    with pytest.warns(UserWarning, match="step cap"):
        first = reproduce.run(name, "ci", tmp_path)
    on_disk = json.loads((tmp_path / f"{name}.json").read_text())
    assert on_disk == first and (tmp_path / f"{name}.png").stat().st_size > 1000
    settings = scales.get(name.replace("-", "_"), "ci")
    runs = settings.runs
    assert COMMON_KEYS <= set(first)
    assert first["settings"]["max_steps"] == settings.max_steps and "learning_rates" in first["settings"]
    if name == "nonlinear-output":
        assert COMMON_KEYS | {"widths", "delta_k", "trajectory", "steps", "final_loss", "swish_trapped",
                                 "swish_stalled"} <= set(first)
        assert first["widths"] == list(settings.widths)
        for field in ("delta_k", "steps", "final_loss"):
            assert set(first[field]) == {"linear", "softmax", "swish"}
            for per in first[field].values():
                assert len(per) == len(settings.widths) and all(len(v) == runs for v in per)
        traj = first["trajectory"]
        assert set(traj) == {"width", "epochs", "linear", "softmax", "swish"}
        assert traj["width"] == settings.trajectory_width and traj["epochs"]["linear"][0] == 0
        assert all(len(traj[k]) == len(traj["epochs"][k]) and len(traj[k][0]) == runs for k in le.FIGURE1_KINDS)
        lrs = first["settings"]["learning_rates"]
        assert set(lrs) == {"cross_entropy", "swish"} and len(lrs["swish"]) == len(settings.widths)
        # f and softmax(f) share their training path: same steps and losses
        assert first["steps"]["linear"] == first["steps"]["softmax"]
    else:
        assert COMMON_KEYS | {"width", "bottleneck_widths", "delta_k", "steps", "final_loss"} <= set(first)
        assert first["width"] == settings.width
        assert first["bottleneck_widths"] == list(settings.bottleneck_widths)
        for field in ("delta_k", "steps", "final_loss"):
            per = first[field]
            assert len(per) == len(settings.bottleneck_widths) and all(len(v) == runs for v in per)
    steps = first["steps"] if name == "bottleneck" else first["steps"]["linear"]
    assert all(0 < s <= settings.max_steps for v in steps for s in v)
    # second run: every piece from the cache, identical numbers
    with pytest.warns(UserWarning, match="step cap"):
        second = reproduce.run(name, "ci", tmp_path)
    assert second["cached_pieces"] == second["pieces"] == first["pieces"]
    for key in set(first) - {"seconds", "cached_pieces", "compute_seconds"}:
        assert second[key] == first[key], key


def test_held_out_linear_envelope_uses_only_the_other_widths():
    """Ĉ = max √m'·ΔK over the runs at the other widths, computed by hand."""
    result = {"widths": [4, 9, 25], "delta_k": {"linear": [[0.5, 1.5], [1.0, 0.2], [100.0, 0.1]]}}
    assert le.held_out_linear_envelope(result, 25) == pytest.approx(max(2 * 1.5, 3 * 1.0))
    assert le.held_out_linear_envelope(result, 4) == pytest.approx(5 * 100.0)
    with pytest.raises(ValueError, match="width 16"):
        le.held_out_linear_envelope(result, 16)
    with pytest.raises(ValueError, match="only width"):
        le.held_out_linear_envelope({"widths": [4], "delta_k": {"linear": [[1.0]]}}, 4)


def test_right_panel_and_runs_table_from_fake_pieces():
    """The right-panel ratio min(softmax, swish)/linear per seed, and one table row per run."""
    ce = {"delta_k": {"linear": [0.1, 0.2]}, "final_change": {"softmax": [1.0, 0.9]}, "steps": [5, 6],
          "loss_curve": [[1.0, 0.5], [2.0, 0.1]], "final_loss": [5e-5, 6e-5], "cap_hit": [False, False],
          "record_steps": [0, 6]}
    sw = {"final_change": {"swish": [0.5, 1.2]}, "steps": [9, 9], "loss_curve": [[3.0, 1.0], [3.0, 2.0]],
          "final_loss": [1.0, 2.0], "cap_hit": [True, True], "trapped": [0, 2], "record_steps": [0, 9]}
    pieces = [({"training": "swish", "width": 7, "seeds": [1, 0]}, sw),
              ({"training": "cross_entropy", "width": 7, "seeds": [0, 1]}, ce)]
    panel = le.right_panel(pieces, 7)
    np.testing.assert_allclose(panel["ratio"], [min(1.0, 1.2) / 0.1, min(0.9, 0.5) / 0.2])
    with pytest.raises(ValueError, match="width 8"):
        le.right_panel(pieces, 8)
    table = le.runs_table(pieces)
    assert len(table) == 4 and table["cap hit"].sum() == 2
    assert table.loc[table["task"] == "swish (Eq. 47)", "initial loss"].tolist() == [3.0, 3.0]
    # seed 1 of the swish piece still descends at the cap (loss 3 → 1), seed 0 has a trapped entry
    assert table.loc[table["task"] == "swish (Eq. 47)", "outcome"].tolist() == ["cap", "trapped"]
    assert set(table.loc[table["task"] != "swish (Eq. 47)", "outcome"]) == {"rule met"}
    ended = le.stopping_summary(table, 1e-4)
    # both cross-entropy runs below 1e-4 before the cap; a swish run still descending at its cap is not stuck
    assert ended["cross_entropy"] == {"all_met": True, "runs": 2, "largest_final_loss": 6e-5,
                                      "most_steps_figure_1": 6, "most_steps_figure_2": None}
    assert ended["swish"]["all_met_or_stuck"] is False and ended["swish"]["met_rule"] == 0
    assert ended["swish"]["trapped"] == 1 and ended["swish"]["steps_to_rule_max"] is None
    assert ended["swish"]["stuck_runs"] == "m = 7, seed 0: trapped, loss 2"
    assert le.stopping_summary(table, 5.5e-5)["cross_entropy"]["all_met"] is False  # one run at 6e-5
    # the margin to the stall rule, swish runs only: 1 − L(9)/L(0) (h = 0, the last recorded step ≤ 4)
    judged = le.runs_table(pieces, judged_from=1)
    swish_rows = judged["task"] == "swish (Eq. 47)"
    np.testing.assert_allclose(judged.loc[swish_rows, "least decrease"], [1 - 1 / 3, 1 - 2 / 3])
    assert judged.loc[~swish_rows, "least decrease"].isna().all()
    assert le.stopping_summary(judged, 1e-4)["swish"]["least_decrease_met"] is None  # no swish run met the rule


def test_run_outcome_and_trapped_entries():
    rec = [0, 1, 2, 4, 50, 100]
    assert le.run_outcome(100, True, 0, rec, [9, 5, 3, 2, 1.0, 0.995]) == ("stalled", pytest.approx(0.005))
    assert le.run_outcome(100, True, 0, rec, [9, 5, 3, 2, 1.0, 0.5])[0] == "cap"
    assert le.run_outcome(100, True, 3, rec, [9, 5, 3, 2, 1.0, 0.995])[0] == "trapped"
    assert le.run_outcome(4, False, 0, rec, [9, 5, 3, 2e-5, 2e-5, 2e-5]) == ("rule met", pytest.approx(1 - 2e-5 / 3))
    # how close a run came to the stall rule: 1 − L(t)/L(h), h the last recorded step ≤ t/2, from `start` on
    curve = [9, 5, 3, 2, 1.0, 0.995]  # decreases at t = 1, 2, 4, 50, 100: 1 − 5/9, 1 − 3/5, 1 − 2/3, 1 − 1/2, 0.005
    assert le.least_decrease(rec, curve, 2, 100) == pytest.approx(0.005)
    assert le.least_decrease(rec, curve, 2, 50) == pytest.approx(1 / 3)
    assert le.least_decrease(rec, curve, 1, 2) == pytest.approx(0.4)
    assert le.least_decrease(rec, curve, 50, 50) == pytest.approx(0.5)
    assert np.isnan(le.least_decrease(rec, curve, 101, 200))
    with pytest.raises(ValueError, match="matching"):
        le.least_decrease(rec, curve[:-1], 2, 100)
    # stopped by the stall rule before the cap: classified by the same two tests
    assert le.run_outcome(50, False, 0, rec, [9, 5, 3, 2, 1.995, 0.0], True) == ("stalled", pytest.approx(0.0025))
    assert le.run_outcome(50, False, 2, rec, [9, 5, 3, 2, 1.995, 0.0], True)[0] == "trapped"
    # z* is where the paper's swish turns: φ' < 0 below, > 0 above, φ(z*) = z* + 10
    z = le.SWISH_MINIMUM
    assert z == pytest.approx(-12.7846, abs=1e-3)
    assert le.PAPER_SWISH.numpy(z - 1e-3, 1) < 0 < le.PAPER_SWISH.numpy(z + 1e-3, 1)
    assert float(le.PAPER_SWISH.numpy(z)) == pytest.approx(z + 10, abs=1e-9)
    y = np.eye(3)[[0, 1, 2, 0]]
    f = np.zeros((2, 4, 3))
    f[0, 1, 1] = -13.0  # a target entry below z*
    f[0, 2, 0] = -40.0  # not a target entry
    f[1, 3, 0] = -12.0  # above z*
    np.testing.assert_array_equal(le.trapped_entries(f, y), [1, 0])
