"""The setup of App. B of Liu, Zhu & Belkin (2020) (``ntkbook.reproductions.appendix_b``): the networks of Eq. (43)
and (48) against NumPy, the run keys, the swish curvature and its bound, the terms A and B against dense block
matrices, the training of a piece against a Python loop, sharding over devices, and both reproductions at ci scale
(table columns, resume) and in the archive."""

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
import pandas as pd
import pytest

import ntkbook as nb
from ntkbook import kernels, parallel, reproduce, scales
from ntkbook.reproductions import appendix_b as ab
from ntkbook.reproductions import bottleneck, nonlinear_output

# ---------------------------------------------------------------------------------------------
# The step rule's constant, the swish minimum
# ---------------------------------------------------------------------------------------------


def test_cross_entropy_curvature_bounds():
    """β_ℓ = 1/2 bounds λ_max(diag p − ppᵀ) (attained at p = (½, ½, 0)), and β_t = min(1/2, 2 max(1 − p_y)) bounds
    it at the current logits."""
    p = np.random.default_rng(0).dirichlet(np.ones(3) * 0.3, size=5000)
    lam = np.linalg.eigvalsh(np.einsum("ij,jk->ijk", p, np.eye(3)) - p[:, :, None] * p[:, None, :])[:, -1]
    assert lam.max() <= 0.5 + 1e-12
    p2 = np.array([0.5, 0.5, 0.0])
    assert np.linalg.eigvalsh(np.diag(p2) - np.outer(p2, p2))[-1] == pytest.approx(0.5)
    y = np.eye(3)[np.arange(5000) % 3]
    assert np.all(lam <= np.minimum(0.5, 2 * (1 - np.sum(p * y, axis=1))) + 1e-12)
    rule = ab.LocalCurvatureStep(lambda w: jnp.log(jnp.asarray(p[:1])), y[:1], "cross_entropy")
    assert rule.reference == 0.5
    assert float(rule.curvature(None)) == pytest.approx(max(min(0.5, 2 * (1 - p[0, 0])), 0.5e-4), rel=1e-5)
    with pytest.raises(ValueError, match="training"):
        ab.LocalCurvatureStep(lambda w: w, y, "swish")  # the swish rule needs the kernel


def test_swish_minimum_and_trapped_entries():
    z = ab.SWISH_MINIMUM  # φ' < 0 below, > 0 above, φ(z*) = z* + 10
    assert z == pytest.approx(-12.7846, abs=1e-3)
    assert ab.PAPER_SWISH.numpy(z - 1e-3, 1) < 0 < ab.PAPER_SWISH.numpy(z + 1e-3, 1)
    assert float(ab.PAPER_SWISH.numpy(z)) == pytest.approx(z + 10, abs=1e-9)
    y = np.eye(3)[[0, 1, 2, 0]]
    f = np.zeros((2, 4, 3))
    f[0, 1, 1] = -13.0  # a target entry below z*
    f[0, 2, 0] = -40.0  # not a target entry
    f[1, 3, 0] = -12.0  # above z*
    np.testing.assert_array_equal(ab.trapped_entries(f, y), [1, 0])


@pytest.mark.parametrize(("factor", "stable"), [(1.0, True), (1.9, True), (2.1, False)])
def test_step_size_rule_is_the_stability_limit_of_a_linear_model(factor, stable):
    """For f = Φw and the square loss (1/2n)‖Φw − y‖², GD with η = c·n/λ_max(ΦΦᵀ) is stable iff c < 2."""
    rng = np.random.default_rng(1)
    phi = rng.normal(size=(8, 20))
    y = rng.normal(size=8)
    eta = factor * 8 / np.linalg.eigvalsh(phi @ phi.T)[-1]
    w = np.zeros(20)
    for _ in range(400):
        w = w - eta * phi.T @ (phi @ w - y) / 8
    assert (0.5 * np.mean((phi @ w - y) ** 2) < 1e-6) == stable


# ---------------------------------------------------------------------------------------------
# The networks of Eq. (43) and Eq. (48), the keys of the runs
# ---------------------------------------------------------------------------------------------


def test_one_hidden_layer_is_eq43():
    m = 50
    model = ab.network((m,))
    params = jax.tree_util.tree_map(lambda a: a[0], ab.init_params(model, [0], m))
    x = np.linspace(-12, 12, 7)[:, None]
    w = np.asarray(params["layers"][0]["W"], np.float64)[:, 0]
    b = np.asarray(params["layers"][0]["b"], np.float64)
    v = np.asarray(params["v"], np.float64).T  # V ∈ ℝ^{3×m}
    ref = (v @ np.maximum(np.outer(w, x[:, 0]) + b[:, None], 0)).T / math.sqrt(m)
    np.testing.assert_allclose(np.asarray(model.apply(params, x)), ref, rtol=1e-5, atol=1e-5)
    assert ab.network((m,)) is model and ab.output_maps(m)["linear"] is model


def test_bottleneck_network_is_eq48_with_ntk_factor_and_biases():
    m, mb = 40, 3
    model = ab.network((m, mb, m))
    params = jax.tree_util.tree_map(lambda a: a[0], ab.init_params(model, [1], 7))
    x = np.linspace(-12, 12, 5)[:, None]
    (l1, l2, l3), v = params["layers"], np.asarray(params["v"], np.float64)
    w = [np.asarray(layer["W"], np.float64) for layer in (l1, l2, l3)]
    b = [np.asarray(layer["b"], np.float64) for layer in (l1, l2, l3)]
    h1 = np.maximum(x @ w[0].T + b[0], 0)
    h2 = h1 @ w[1].T / math.sqrt(m) + b[1]  # identity bottleneck
    h3 = np.maximum(h2 @ w[2].T / math.sqrt(mb) + b[2], 0)
    np.testing.assert_allclose(np.asarray(model.apply(params, x)), h3 @ v / math.sqrt(m), rtol=1e-4, atol=1e-4)


def test_init_params_keys_are_those_of_the_archive():
    """Run s with salt c draws one N(0, 1) vector from fold_in(fold_in(key(0), c), s) (the keys of the archived pieces),
    the same for a seed alone or in a block."""
    model = ab.network((8,))
    a = ab.init_params(model, [0, 1, 2], 8)
    b = ab.init_params(model, [2], 8)
    np.testing.assert_array_equal(a["v"][2], b["v"][0])
    assert not np.array_equal(a["v"][0], a["v"][1])
    key = jax.random.fold_in(jax.random.fold_in(jax.random.key(0), 8), 2)
    leaves = jax.tree_util.tree_leaves(jax.tree_util.tree_map(lambda t: t[0], b))
    z = np.asarray(jax.random.normal(key, (sum(leaf.size for leaf in leaves),)))
    np.testing.assert_array_equal(np.concatenate([np.ravel(leaf) for leaf in leaves]), z)


# ---------------------------------------------------------------------------------------------
# The swish curvature, the terms A and B
# ---------------------------------------------------------------------------------------------


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


def _local_curvature(f, y):
    """β_t of the cross-entropy rule from the logits, in NumPy: min(1/2, 2 max(1 − p_y)), floored."""
    p = np.exp(f - f.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return max(min(0.5, 2 * np.max(1 - np.sum(p * y, axis=1))), 1e-4 * 0.5)


def test_swish_loss_hessian_is_the_second_derivative():
    f = np.linspace(-40, 40, 801).reshape(-1, 1) * np.ones((1, 3))
    y = np.tile(np.eye(3), (267, 1))[:801]
    got = np.asarray(ab.swish_loss_hessian(jnp.asarray(f, jnp.float32), jnp.asarray(y, jnp.float32)))
    np.testing.assert_allclose(got, _swish_hessian(f, y), atol=2e-6)
    second = jax.vmap(jax.grad(jax.grad(lambda z, t: 0.5 * (ab.PAPER_SWISH(z) - t) ** 2)))
    auto = np.asarray(second(jnp.asarray(f.ravel()), jnp.asarray(y.ravel(), jnp.float32))).reshape(f.shape)
    np.testing.assert_allclose(got, np.maximum(auto, 0), atol=2e-6)


def test_swish_curvature_bound_between_refreshes():
    """Between two measurements of the kernel the step uses λ̂_t = λ_max(D_r^½K_rD_r^½) + ‖d_t − d_r‖∞λ_max(K_r)
    (Weyl), which bounds λ_max(D_t^½K_rD_t^½); at a refresh step the state is measured again."""
    m = 24
    model = ab.network((m,))
    data = ab.paper_data(60, 0)
    rule = ab.LocalCurvatureStep(lambda w: model.apply(w, data.x), data.y, "swish",
                                 kernel=lambda w: kernels.empirical_ntk(model.apply, w, data.x, flat=True))
    p0, p1 = (jax.tree_util.tree_map(lambda a, i=i: a[i], ab.init_params(model, [3, 4], m)) for i in range(2))
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


@pytest.mark.parametrize("output", ["softmax", "swish"])
def test_output_change_split_against_dense_block_matrices(output):
    """A and B of Section 4 with J_φ assembled as a dense block-diagonal matrix (scipy), on random kernels."""
    from scipy.linalg import block_diag

    rng = np.random.default_rng(2)
    n, k = 5, 3
    g0, gt = rng.normal(size=(2, n * k, 7)), rng.normal(size=(2, n * k, 7))
    k0 = g0 @ np.swapaxes(g0, 1, 2)
    kt = k0 + 0.1 * gt @ np.swapaxes(gt, 1, 2)
    f0, ft = rng.normal(size=(2, n, k)) * 3, rng.normal(size=(2, n, k)) * 3
    a, b = ab.output_change_split(output, k0, kt, f0, ft)
    for r in range(2):
        j0 = block_diag(*ab.output_jacobians(output, f0[r]))
        jt = block_diag(*ab.output_jacobians(output, ft[r]))
        tilde0 = j0 @ k0[r] @ j0.T
        assert a[r] == pytest.approx(np.linalg.norm(jt @ k0[r] @ jt.T - tilde0) / np.linalg.norm(tilde0), rel=1e-12)
        assert b[r] == pytest.approx(np.linalg.norm(jt @ (kt[r] - k0[r]) @ jt.T) / np.linalg.norm(tilde0), rel=1e-12)
    p = np.exp(f0[0, 0]) / np.exp(f0[0, 0]).sum()
    if output == "softmax":
        np.testing.assert_allclose(ab.output_jacobians(output, f0)[0, 0], np.diag(p) - np.outer(p, p), atol=1e-15)


# ---------------------------------------------------------------------------------------------
# Training one piece against an independent loop
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("training", ["cross_entropy", "swish"])
def test_train_runs_matches_a_python_loop(training):
    """ΔK at every step, the step size of the rule and the loss in the paper's units, against plain
    GD on the paper's loss (Eq. 46 or Eq. 47) with Jacobian-contraction kernels."""
    m, steps = 16, 5
    settings = scales.get("nonlinear_output", "ci").replace(max_steps=steps, swish_max_steps=steps)
    data = ab.paper_data(60, 0)
    maps = ab.output_maps(m)
    rows = ab.train_runs(maps["linear"], [0, 1], m, data, training=training, settings=settings,
                         record_steps=np.arange(steps + 1))
    params = ab.init_params(maps["linear"], [0, 1], m)
    x, y = data.x, data.y
    names = ab.KERNELS[training]
    kernel = {n: jax.jit(lambda q, n=n: kernels.flatten_ntk(nb.empirical_ntk(maps[n].apply, q, x, method="jacobian")))
              for n in ("linear", *names)}
    for r in range(2):
        p = jax.tree_util.tree_map(lambda a, r=r: a[r], params)
        k_f = kernel["linear"](p)
        lam = np.linalg.eigvalsh(np.asarray(k_f, np.float64))[-1]
        if training == "cross_entropy":
            lr = 60 / (0.5 * lam)

            def paper_loss(q):
                return -jnp.sum(y * jax.nn.log_softmax(maps["linear"].apply(q, x), axis=-1)) / 60
        else:  # the measured curvature at w₀, for Eq. (47) = (1/N)Σ‖·‖² (half the step of training.py's loss)
            lr = settings.swish_lr_factor * 60 / _gn_lambda_max(k_f, maps["linear"].apply(p, x), y) / 2

            def paper_loss(q):
                return jnp.sum((maps["swish"].apply(q, x) - y) ** 2) / 60
        run = rows[rows.seed == r].set_index("output")
        assert run.lr.iloc[0] == pytest.approx(lr, rel=1e-4)
        k0 = {n: kernel[n](p) for n in names}
        grad = jax.jit(jax.grad(paper_loss))
        sup = dict.fromkeys(names, 0.0)
        for t in range(steps + 1):
            for n in names:
                change = float(kernels.relative_change(kernel[n](p), k0[n]))
                sup[n] = max(sup[n], change)
                assert run.curve[n][t] == pytest.approx(change, rel=2e-3, abs=1e-5)
            if t < steps:
                f_t = np.asarray(maps["linear"].apply(p, x))
                if training == "cross_entropy":
                    step = lr * 0.5 / _local_curvature(f_t, np.asarray(y))
                else:  # before the first refresh interval the kernel is measured at every step
                    step = settings.swish_lr_factor * 60 / _gn_lambda_max(kernel["linear"](p), f_t, np.asarray(y)) / 2
                p = jax.tree_util.tree_map(lambda a, g, step=step: a - step * g, p, grad(p))
        for n in names:
            assert run.delta_k[n] == pytest.approx(sup[n], rel=2e-3, abs=1e-5)
        assert run.final_loss.iloc[0] == pytest.approx(float(paper_loss(p)), rel=1e-3)
        assert run.steps.iloc[0] == steps and run.cap_hit.iloc[0]
    assert set(rows.columns) == set(ab.COLUMNS)


def test_pieces_of_both_figures():
    s1 = scales.get("nonlinear_output", "ci").replace(widths=(10, 20), runs=3, runs_per_piece=2)
    assert nonlinear_output.pieces(s1) == [
        {"width": m, "training": t, "first_seed": s} for m in (10, 20) for t in ("cross_entropy", "swish")
        for s in (0, 2)]
    assert ab.block(2, s1) == [2] and ab.block(0, s1) == [0, 1]
    s2 = scales.get("bottleneck", "ci")
    assert bottleneck.pieces(s2) == [{"bottleneck_width": mb, "first_seed": 0} for mb in s2.bottleneck_widths]


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
    from ntkbook import parallel, scales
    from ntkbook.reproductions import appendix_b as ab
    assert jax.device_count() == 2, jax.devices()
    tree, runs = parallel.shard_runs({"w": np.arange(6.0).reshape(3, 2)})
    assert runs == 3 and tree["w"].shape == (4, 2) and len(tree["w"].sharding.device_set) == 2
    s = scales.get("nonlinear_output", "ci").replace(max_steps=20)
    model, data = ab.network((32,)), ab.paper_data(60, 0)
    both = ab.train_runs(model, [0, 1, 2], 32, data, training="cross_entropy", settings=s)
    one = ab.train_runs(model, [0, 1, 2], 32, data, training="cross_entropy", settings=s, devices=jax.devices()[:1])
    print(json.dumps({"both": both.delta_k.tolist(), "one": one.delta_k.tolist(),
                      "loss_both": both.final_loss.tolist(), "loss_one": one.final_loss.tolist()}))
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
    np.testing.assert_allclose(res["both"], res["one"], rtol=1e-4)
    assert len(res["both"]) == 6  # three runs, two kernels (linear, softmax)
    np.testing.assert_allclose(res["loss_both"], res["loss_one"], rtol=1e-4)


# ---------------------------------------------------------------------------------------------
# Both reproductions at ci scale (table, resume), and the archive
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["nonlinear-output", "bottleneck"])
def test_reproduction_at_ci_scale_and_resume(name, tmp_path, monkeypatch):
    # the ci settings with short step caps (the runs stop at the cap) and two small sizes: the table's layout and
    # the resume do not depend on how many or how large
    original = scales.get
    short = ({"max_steps": 40, "swish_max_steps": 30, "widths": (10, 20), "trajectory_width": 20}
             if name == "nonlinear-output" else {"max_steps": 40, "width": 100, "bottleneck_widths": (3, 10)})
    monkeypatch.setattr(scales, "get", lambda experiment, scale: original(experiment, scale).replace(**short))
    first = reproduce.run(name, "ci", tmp_path)
    on_disk = json.loads((tmp_path / f"{name}.json").read_text())
    assert on_disk == first and (tmp_path / f"{name}.png").stat().st_size > 1000
    settings = scales.get(name.replace("-", "_"), "ci")
    table = pd.DataFrame(first["table"])
    assert first["settings"]["max_steps"] == 40 and first["pieces"] == len(reproduce.get(name).sweep.pieces(settings))
    if name == "nonlinear-output":
        assert sorted(table.groupby(["width", "output"]).size().to_dict().items()) == [
            ((m, k), settings.runs) for m in (10, 20) for k in ("linear", "softmax", "swish")]
        ce = table[table.output != "swish"]  # f and softmax(f) share their path: same steps and losses per run
        assert (ce.groupby(["width", "seed"]).steps.nunique() == 1).all()
        assert ((table.output == "swish") | table.trapped.isin(["nan"])).all()  # z* matters for swish only
    else:
        assert table.groupby("bottleneck_width").size().to_dict() == {3: settings.runs, 10: settings.runs}
    assert table.steps.between(1, 40).all() and table.cap_hit.all()
    second = reproduce.run(name, "ci", tmp_path)  # every piece from the cache, identical numbers
    assert second["cached_pieces"] == second["pieces"] == first["pieces"]
    for key in set(first) - {"seconds", "cached_pieces", "compute_seconds"}:
        assert second[key] == first[key], key


def test_archive_cache_and_json_agree():
    """The archived bottleneck pieces (results/paper/.cache) are the table of results/paper/bottleneck.json, and the
    archived Figure 1 pieces are read without computing the missing ones."""
    table = reproduce.archived("bottleneck")
    recorded = pd.DataFrame(json.loads((reproduce.ARCHIVE / "bottleneck.json").read_text())["table"])
    assert table.attrs["pieces"] == 7 and len(table) == 70
    for column in ("bottleneck_width", "seed", "delta_k", "steps", "final_loss", "lr"):
        assert table[column].tolist() == recorded[column].tolist(), column
    assert (table.final_loss < 1e-4).all()
    figure1 = reproduce.archived("nonlinear-output")
    assert figure1.attrs["pieces"] == 9 and figure1.attrs["cached_pieces"] == 9
    assert sorted(figure1[figure1.output == "swish"].width.unique()) == [30, 100, 1000]
