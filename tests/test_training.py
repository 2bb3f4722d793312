"""The one training loop (ntkbook.training) against plain Python loops written independently here."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import ntkbook as nb
from ntkbook import hessian, kernels, models, training


def _mlp(key, width=6, input_dim=2, output_dim=1, dtype=jnp.float64):
    return models.mlp(key, (width,), input_dim=input_dim, output_dim=output_dim, use_bias=True, dtype=dtype)


def _data(n=5, d=2, k=1):
    x = jax.random.normal(jax.random.key(1), (n, d), jnp.float64)
    y = jax.random.normal(jax.random.key(2), (n,) if k == 1 else (n, k), jnp.float64)
    return x, y


def _square(f, y):  # written out again here: (1/2n) Σ ‖f_i − y_i‖²
    return 0.5 * jnp.sum((f - y) ** 2) / f.shape[0]


def _cross_entropy(f, y):  # −(1/n) Σ_i Σ_c y_ic log softmax(f_i)_c
    logp = f - jax.scipy.special.logsumexp(f, axis=1, keepdims=True)
    return -jnp.sum(y * logp) / f.shape[0]


def _plain_gd(apply_fn, params, x, y, lr, steps, loss=_square):
    """w ← w − η∇L(w), returning the iterates and losses w_0..w_steps."""
    value = jax.jit(lambda p: loss(apply_fn(p, x), y))
    step = jax.jit(lambda p: jax.tree_util.tree_map(lambda a, g: a - lr * g, p, jax.grad(value)(p)))
    path = [params]
    for _ in range(steps):
        path.append(step(path[-1]))
    return path, np.asarray([float(value(p)) for p in path])


def _assert_trees_close(a, b, rtol=1e-12, atol=1e-14):
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=rtol, atol=atol)


def _take(tree, i):
    return jax.tree_util.tree_map(lambda a: a[i], tree)


def test_record_schedule():
    s = training.record_schedule(10_000, per_decade=10)
    assert s[0] == 0 and s[-1] == 10_000 and np.all(np.diff(s) > 0)
    assert set(range(11)) <= set(s.tolist())
    assert len(s) < 60  # log-spaced, not every step


def test_losses_are_the_stated_formulas(x64):
    f = jnp.asarray(np.random.default_rng(0).normal(size=(4, 3)))
    y = jax.nn.one_hot(jnp.arange(4) % 3, 3, dtype=jnp.float64)
    sq = float(np.sum((np.asarray(f) - np.asarray(y)) ** 2) / (2 * 4))
    p = np.exp(np.asarray(f)) / np.exp(np.asarray(f)).sum(1, keepdims=True)
    ce = float(-np.sum(np.asarray(y) * np.log(p)) / 4)
    assert float(training.loss_of_outputs(f, y, "square")) == pytest.approx(sq, rel=1e-14)
    assert float(training.loss_of_outputs(f, y, "cross_entropy")) == pytest.approx(ce, rel=1e-14)
    model, params = _mlp(jax.random.key(0), output_dim=3)
    x, _ = _data(4)
    out = np.asarray(model.apply(params, x))
    assert float(training.loss_value(model.apply, params, x, y)) == pytest.approx(
        float(np.sum((out - np.asarray(y)) ** 2) / 8), rel=1e-13)


def test_step_size_rule_is_the_stability_limit_of_the_linear_model(x64):
    """f(w) = Xw has K = XXᵀ: GD on (1/2n)Σ multiplies the residual's top eigen-component by 1 − ηλ_max/n,
    so η = c·n/λ_max contracts it for c < 2 and amplifies it for c > 2."""
    x = jax.random.normal(jax.random.key(0), (6, 4), jnp.float64)
    y = jax.random.normal(jax.random.key(1), (6,), jnp.float64)
    k = np.asarray(x @ x.T)
    lam, vecs = np.linalg.eigh(k)
    apply_fn = lambda p, xx: xx @ p["w"]  # noqa: E731
    for factor, shrinks in ((1.9, True), (2.1, False)):
        eta = training.step_size_from_kernel(k, 6, factor=factor)
        assert eta == pytest.approx(factor * 6 / lam[-1], rel=1e-14)
        run = training.train(apply_fn, {"w": jnp.zeros(4)}, x, y, lr=eta, stop=40, record_steps=[0, 40],
                             track={"r": lambda p, xx, yy: xx @ p["w"] - yy})
        top = np.abs(run.tracked["r"] @ vecs[:, -1])
        assert top[1] / top[0] == pytest.approx(abs(1 - factor) ** 40, rel=1e-8)
        assert (top[1] < top[0]) == shrinks
    # the same step from a traced kernel, inside jit (the experiments compute it per seed under vmap)
    traced = jax.jit(lambda kk: training.step_size_from_kernel(kk, 6, factor=1.5))(jnp.asarray(k))
    assert float(traced) == pytest.approx(1.5 * 6 / lam[-1], rel=1e-12)


def test_a_papers_step_is_the_books_step_times_the_loss_scale(x64):
    """GD on ½Σ(f − y)² with step η and on (1/n)Σ(f − y)² with step η make the same update as GD on the book's
    (1/2n)Σ(f − y)² with steps n·η and 2η (training.book_step)."""
    x = jax.random.normal(jax.random.key(2), (5, 3), jnp.float64)
    y = jax.random.normal(jax.random.key(3), (5,), jnp.float64)
    w = jax.random.normal(jax.random.key(4), (3,), jnp.float64)
    for convention, paper_loss in (("half-sum", lambda v: 0.5 * jnp.sum((x @ v - y) ** 2)),
                                   ("mean", lambda v: jnp.mean((x @ v - y) ** 2)),
                                   ("book", lambda v: 0.5 * jnp.mean((x @ v - y) ** 2))):
        paper = w - 0.01 * jax.grad(paper_loss)(w)
        book = w - training.book_step(0.01, convention, 5) * jax.grad(lambda v: 0.5 * jnp.mean((x @ v - y) ** 2))(w)
        np.testing.assert_allclose(book, paper, rtol=1e-13)
    assert training.loss_scale("half-sum", 7) == 7.0
    with pytest.raises(ValueError, match="unknown convention"):
        training.loss_scale("sum", 7)


@pytest.mark.parametrize("loss", ["square", "cross_entropy"])
def test_loop_equals_a_plain_python_loop(x64, loss):
    k = 1 if loss == "square" else 3
    model, p0 = _mlp(jax.random.key(0), output_dim=k)
    x, y = _data(5, k=k)
    if loss == "cross_entropy":
        y = jax.nn.one_hot(jnp.arange(5) % 3, 3, dtype=jnp.float64)
    ref_path, ref_losses = _plain_gd(model.apply, p0, x, y, 0.3, 12, _square if loss == "square" else _cross_entropy)
    run = training.train(model.apply, p0, x, y, lr=0.3, stop=12, loss=loss, keep_path=True,
                         record_steps=np.arange(13))
    np.testing.assert_allclose(run.losses, ref_losses, rtol=1e-12)
    assert run.loss == pytest.approx(ref_losses[-1], rel=1e-12) and run.steps == 12
    _assert_trees_close(run.params, ref_path[-1])
    for t in (0, 5, 12):
        _assert_trees_close(_take(run.path, t), ref_path[t])
    assert not run.converged and not run.diverged


def test_linear_model_in_closed_form_with_path_length(x64):
    """f(w) = Xw: w_{t+1} = w_t − (η/n) Xᵀ(Xw_t − y); the update norms and path length of the loop."""
    rng = np.random.default_rng(0)
    a, y = rng.normal(size=(5, 3)), rng.normal(size=5)
    w, eta, norms, dists = np.zeros(3), 0.2, [], [0.0]
    for _ in range(30):
        step = eta / 5 * a.T @ (a @ w - y)
        norms.append(np.linalg.norm(step))
        w = w - step
        dists.append(np.linalg.norm(w))
    run = training.train(lambda p, xx: xx @ p["w"], {"w": jnp.zeros(3)}, jnp.asarray(a), jnp.asarray(y), lr=eta,
                         stop=30, record_steps=np.arange(31), measure_updates=True,
                         track={"distance": training.distance_from_start()})
    np.testing.assert_allclose(run.params["w"], w, rtol=1e-12)
    np.testing.assert_allclose(run.update_norms[:-1], norms, rtol=1e-12)
    assert np.isnan(run.update_norms[-1])  # no update at the last step
    assert run.path_length == pytest.approx(sum(norms), rel=1e-12)
    np.testing.assert_allclose(run.tracked["distance"], dists, rtol=1e-12, atol=1e-15)


def test_stopping_rule_per_run(x64):
    """Each run stops at the first t with L(w_t) < its tolerance (converged), or with L(w_t) above the
    divergence threshold (diverged), or at the cap; its parameters are frozen from then on."""
    model, _ = _mlp(jax.random.key(0))
    x, y = _data(5)
    stacked = jax.vmap(lambda k: _mlp(k)[1])(jax.random.split(jax.random.key(3), 4))
    lrs = np.array([0.3, 0.5, 0.4, 60.0])
    below = np.array([0.15, 0.05, 1e-9, 0.05])
    stop = training.StopRule(120, loss_below=below, diverge_above=1e3)
    run = training.train(model.apply, stacked, x, y, lr=lrs, stop=stop, runs=True, record_steps=np.arange(121))
    for r in range(4):
        path, losses = _plain_gd(model.apply, _take(stacked, r), x, y, lrs[r], 120)
        hit = np.nonzero((losses < below[r]) | ~(losses <= 1e3))[0]
        t = int(hit[0]) if hit.size else 120
        assert run.steps[r] == t
        assert run.converged[r] == (losses[t] < below[r])
        assert run.diverged[r] == (not losses[t] <= 1e3)
        _assert_trees_close(_take(run.params, r), path[t], rtol=1e-10)
        np.testing.assert_allclose(run.losses[r, :t + 1], losses[:t + 1], rtol=1e-10)
        assert np.all(np.isnan(run.losses[r, t + 1:]))
        assert run.loss[r] == pytest.approx(losses[t], rel=1e-10)
    assert run.converged[:2].all() and run.steps[2] == 120 and not run.converged[2] and run.diverged[3]


def test_stall_rule_stops_a_plateau_at_the_first_qualifying_recorded_step(x64):
    """A least-squares fit that cannot interpolate (a linear model, 2 parameters, 5 targets) converges to
    L* > 0, so its loss stops falling: the stall rule stops it at the first recorded step t ≥ stall_after
    with L(w_t) > (1 − f)·L(w_h), h the last recorded step ≤ t/2 — found here from a plain GD loop run to
    the cap.  A run that interpolates stops by its tolerance at the same step with or without the rule."""
    x, y = _data(5)
    linear = lambda p, xx: xx @ p  # noqa: E731
    p0 = jnp.zeros((2, 2), jnp.float64)
    lrs, frac, after, cap = np.array([0.05, 0.2]), 0.01, 8, 400
    stop = training.StopRule(cap, stall_below=frac, stall_after=after)
    run = training.train(linear, p0, x, y, lr=lrs, stop=stop, runs=True)
    rec = [int(s) for s in run.record_steps]
    reference = [max((j for j, s in enumerate(rec) if s <= t // 2), default=-1) for t in rec]
    np.testing.assert_array_equal(training.stall_reference(rec), reference)
    with pytest.raises(ValueError, match="increasing"):
        training.stall_reference([0, 4, 2])
    for r in range(2):
        _, losses = _plain_gd(linear, p0[r], x, y, lrs[r], cap)
        qualifying = [t for t in rec if t >= after and t >= 2
                      and losses[t] > (1 - frac) * losses[max(s for s in rec if s <= t // 2)]]
        assert qualifying and qualifying[0] < cap  # the rule has something to find before the cap
        t = qualifying[0]
        assert run.steps[r] == t and run.stalled[r] and not run.converged[r] and not run.diverged[r]
        assert run.loss[r] == pytest.approx(losses[t], rel=1e-10)
    model, _ = _mlp(jax.random.key(0))
    stacked = jax.vmap(lambda k: _mlp(k)[1])(jax.random.split(jax.random.key(3), 4)[:2])
    below = [0.15, 0.05]
    plain = training.train(model.apply, stacked, x, y, lr=[0.3, 0.5], stop=training.StopRule(120, loss_below=below),
                           runs=True)
    ruled = training.train(model.apply, stacked, x, y, lr=[0.3, 0.5], runs=True,
                           stop=training.StopRule(120, loss_below=below, stall_below=frac, stall_after=after))
    assert plain.converged.all() and ruled.converged.all() and not ruled.stalled.any()
    np.testing.assert_array_equal(plain.steps, ruled.steps)


@pytest.mark.parametrize("group_size", [1, 3, 4])
def test_vmapped_runs_equal_individual_runs(x64, group_size):
    model, _ = _mlp(jax.random.key(0))
    x, y = _data(5)
    stacked = jax.vmap(lambda k: _mlp(k)[1])(jax.random.split(jax.random.key(3), 4))
    lrs = [0.2, 0.3, 0.4, 0.5]
    track = {"kernel": training.kernel_change(model.apply)}
    stop = training.StopRule(60, loss_below=0.08)
    together = training.train(model.apply, stacked, x, y, lr=lrs, stop=stop, runs=True, track=track,
                              group_size=group_size)
    for r in range(4):
        alone = training.train(model.apply, _take(stacked, r), x, y, lr=lrs[r], stop=stop, track=track)
        assert together.steps[r] == alone.steps
        _assert_trees_close(_take(together.params, r), alone.params)
        np.testing.assert_allclose(together.losses[r], alone.losses, rtol=1e-12)
        np.testing.assert_allclose(together.tracked["kernel"][r], alone.tracked["kernel"], rtol=1e-10, atol=1e-14)
        assert together.final["kernel"][r] == pytest.approx(float(alone.final["kernel"]), rel=1e-10)


def test_traced_loop_inside_vmap_equals_train(x64):
    model, _ = _mlp(jax.random.key(0))
    x, y = _data(5)
    keys = jax.random.split(jax.random.key(3), 3)

    @jax.jit
    def inside(keys):
        def one(key):
            params = _mlp(key)[1]
            return training.train_traced(model.apply, params, x, y, lr=0.3, stop=25,
                                         track={"distance": training.distance_from_start()})
        return jax.vmap(one)(keys)

    traced = inside(keys)
    stacked = jax.vmap(lambda k: _mlp(k)[1])(keys)
    run = training.train(model.apply, stacked, x, y, lr=0.3, stop=25, runs=True,
                         track={"distance": training.distance_from_start()})
    _assert_trees_close(traced["params"], run.params)
    np.testing.assert_allclose(traced["losses"], run.losses, rtol=1e-12)
    np.testing.assert_allclose(traced["tracked"]["distance"], run.tracked["distance"], rtol=1e-12)
    np.testing.assert_array_equal(traced["record_steps"][0], run.record_steps)


@pytest.mark.parametrize("per_run", [False, True])
def test_sgd_with_index_sequences_equals_a_hand_written_loop(x64, per_run):
    """Step t uses the mini-batch B_t with loss (1/2|B_t|) Σ_{i∈B_t} ‖f(x_i) − y_i‖²; recorded losses are full-batch."""
    model, _ = _mlp(jax.random.key(0))
    x, y = _data(7)
    stacked = jax.vmap(lambda k: _mlp(k)[1])(jax.random.split(jax.random.key(3), 2))
    rng = np.random.default_rng(1)
    batches = rng.integers(0, 7, size=(2, 30, 2) if per_run else (30, 2))
    run = training.train(model.apply, stacked, x, y, lr=0.2, stop=30, batches=batches, runs=True,
                         record_steps=[0, 10, 30])
    for r in range(2):
        p = _take(stacked, r)
        seq = batches[r] if per_run else batches
        step = jax.jit(lambda q, idx: jax.tree_util.tree_map(
            lambda a, b: a - 0.2 * b, q, jax.grad(lambda w: _square(model.apply(w, x[idx]), y[idx]))(q)))
        full = [float(_square(model.apply(p, x), y))]
        for t in range(30):
            p = step(p, seq[t])
            full.append(float(_square(model.apply(p, x), y)))
        _assert_trees_close(_take(run.params, r), p)
        np.testing.assert_allclose(run.losses[r], np.asarray(full)[[0, 10, 30]], rtol=1e-12)


def test_optax_update_rules(x64):
    """The update rule is an optax transformation built from each run's step: heavy-ball momentum here."""
    model, p0 = _mlp(jax.random.key(0))
    x, y = _data(5)
    run = training.train(model.apply, p0, x, y, lr=0.1, stop=15,
                         optimizer=lambda eta: optax.sgd(eta, momentum=0.9))
    grad = jax.grad(lambda q: _square(model.apply(q, x), y))
    p, m = p0, jax.tree_util.tree_map(jnp.zeros_like, p0)
    for _ in range(15):
        m = jax.tree_util.tree_map(lambda mi, gi: 0.9 * mi + gi, m, grad(p))
        p = jax.tree_util.tree_map(lambda a, mi: a - 0.1 * mi, p, m)
    _assert_trees_close(run.params, p)


def test_tracking_equals_recomputation_at_the_recorded_steps(x64):
    base, _ = _mlp(jax.random.key(0), width=8, input_dim=1, output_dim=3)
    soft = models.nonlinear_output(base, "softmax")
    x = 3 * jax.random.normal(jax.random.key(2), (6, 1), jnp.float64)
    y = jax.nn.one_hot(jnp.arange(6) % 3, 3, dtype=jnp.float64)
    stacked = jax.vmap(lambda k: _mlp(k, width=8, input_dim=1, output_dim=3)[1])(jax.random.split(jax.random.key(1), 2))
    lrs, tol, rec = [0.5, 0.9], 0.35, [0, 1, 3, 7, 20, 40]
    track = {"logits": training.kernel_change(base.apply), "softmax": training.kernel_change(soft.apply),
             "hessian": training.hessian_norm(base.apply, input_index=2, num_steps=40, steps=(0, 5)),
             "norm": lambda p, xx, yy: jnp.sqrt(sum(jnp.sum(a * a) for a in jax.tree_util.tree_leaves(p)))}
    run = training.train(base.apply, stacked, x, y, lr=lrs, loss="cross_entropy", runs=True, record_steps=rec,
                         stop=training.StopRule(40, loss_below=tol), track=track)
    np.testing.assert_array_equal(run.tracked_steps["hessian"], [0, 5])

    def kernel(fn, p):
        return kernels.flatten_ntk(nb.empirical_ntk(fn, p, x, method="jacobian"))

    for r in range(2):
        p0 = _take(stacked, r)
        path, losses = _plain_gd(base.apply, p0, x, y, lrs[r], 40, _cross_entropy)
        t_stop = int(np.nonzero(losses < tol)[0][0]) if np.any(losses < tol) else 40
        assert run.steps[r] == t_stop

        def expected(name, p, p0=p0):
            if name in ("logits", "softmax"):
                fn = base.apply if name == "logits" else soft.apply
                k0, k = kernel(fn, p0), kernel(fn, p)
                return float(jnp.linalg.norm(k - k0) / jnp.linalg.norm(k0))
            if name == "hessian":
                return hessian.dense_spectral_norm(lambda q, xi: base.apply(q, xi[None])[0, 0], p, x[2])
            return float(np.sqrt(sum(np.sum(np.asarray(a) ** 2) for a in jax.tree_util.tree_leaves(p))))

        for name in track:
            steps = run.tracked_steps[name]
            for i, t in enumerate(steps):
                value = run.tracked[name][r, i]
                if t > t_stop:
                    assert np.isnan(value)
                else:
                    rtol = 1e-6 if name == "hessian" else 1e-9  # Lanczos (40 steps) against dense eigvalsh
                    assert value == pytest.approx(expected(name, path[t]), rel=rtol, abs=1e-12)
            rtol = 1e-6 if name == "hessian" else 1e-9
            assert run.final[name][r] == pytest.approx(expected(name, path[t_stop]), rel=rtol, abs=1e-12)
        assert run.sup("logits")[r] == pytest.approx(
            np.nanmax(np.r_[run.tracked["logits"][r], run.final["logits"][r]]))


def test_group_size_rule():
    assert training.default_group_size(10, 1 << 10, backend="gpu") == 10
    assert training.default_group_size(10, training.CPU_STACK_BYTES, backend="cpu", cores=1) == 10
    assert training.default_group_size(10, training.CPU_STACK_BYTES, backend="cpu", cores=2) == 5
    assert training.default_group_size(10, training.CPU_STACK_BYTES, backend="cpu", cores=3) == 4
    assert training.default_group_size(1000, training.CPU_STACK_BYTES, backend="cpu", cores=1) == \
        training.CPU_GROUP_BYTES // training.CPU_STACK_BYTES
    assert training.default_group_size(10, training.CPU_STACK_BYTES + 1, backend="cpu", cores=1) == 1
    model, params = models.mlp(jax.random.key(0), (32,), input_dim=1, output_dim=3)
    x, y = jnp.ones((60, 1)), jnp.ones((60, 3))
    # the largest array of ∇L for this network: the (60, 32) hidden activations, float32
    assert training.largest_intermediate_bytes(model.apply, params, x, y) == 60 * 32 * 4


def test_training_validates():
    model, p = models.mlp(jax.random.key(0), (4,), input_dim=1)
    x, y = jnp.ones((3, 1)), jnp.ones(3)
    stacked = jax.tree_util.tree_map(lambda a: a[None], p)
    cases = [
        (lambda: training.train(model.apply, p, x, y, lr=0.1, stop=5, loss="hinge"), ValueError, "unknown loss 'hinge'"),
        (lambda: training.train(model.apply, p, x, y, lr=0.1, stop=5, record_steps=[0, 9]), ValueError,
         "record_steps must lie"),
        (lambda: training.train(model.apply, p, x, y, lr=0.1, stop=5, track={"a": training.Tracker(
            lambda q, xx, yy: 0.0, steps=(7,))}), ValueError, "steps must lie"),
        (lambda: training.train(model.apply, p, x, y, lr=0.1, stop=training.StopRule(5, loss_below=0.1),
                                keep_path=True), ValueError, "keep_path needs a fixed number of steps"),
        (lambda: training.train(model.apply, p, x, y, lr=0.1, stop=training.StopRule(5, loss_below=0.1),
                                batches=np.zeros((5, 1), int)), ValueError, "fixed number of steps"),
        (lambda: training.train(model.apply, p, x, y, lr=0.1, stop=5, batches=np.full((5, 1), 3)), ValueError,
         "index the n = 3"),
        (lambda: training.train(model.apply, p, x, y, lr=0.1, stop=5, batches=np.zeros((4, 1), int)), ValueError,
         "fewer than max_steps"),
        (lambda: training.train(model.apply, p, x, y, lr=0.1, stop=5, per_run_data=True), ValueError,
         "per_run_data needs runs=True"),
        (lambda: training.train(model.apply, stacked, x, y, lr=0.1, stop=5, runs=True,
                                stop_rule=None), TypeError, "unexpected keyword"),
        (lambda: training.train(model.apply, p, x, y, lr=0.1, stop=5, optimizer="sgd"), TypeError,
         "optimizer must be callable"),
        (lambda: training.StopRule(-1), ValueError, "max_steps must be an integer >= 0"),
        (lambda: training.StopRule(5, loss_below=[[1.0]]), ValueError, "loss_below must be a number"),
        (lambda: training.StopRule(5, stall_below=1.0), ValueError, "stall_below must be a fraction"),
        (lambda: training.StopRule(5, stall_below=0.01, stall_after=0), ValueError, "stall_after must be"),
        (lambda: training.train(model.apply, stacked, x, y, lr=0.1, runs=True,
                                stop=training.StopRule(5, loss_below=[0.1, 0.2])), ValueError,
         "stop.loss_below must be a number or one per run"),
    ]
    for fn, err, match in cases:
        with pytest.raises(err, match=match):
            fn()
