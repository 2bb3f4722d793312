"""The reproduction runner: outputs, piece cache, resume after interruption, corrupted cache files; the
phase-transition reproduction's piece (Figure 2 of Oymak–Soltanolkotabi 2020) against a plain float64 GD."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import records, reproduce, scales, sweep
from ntkbook.activations import get_activation
from ntkbook.models.oymak_init import output_weights
from ntkbook.reproductions import phase_transition as pt


class Interrupt(Exception):
    pass


@dataclass(frozen=True, kw_only=True)
class Toy(scales.ExperimentSettings):
    n: int
    offset: float


@pytest.fixture
def toy(monkeypatch):
    """A registered sweep reproduction whose pieces square numbers and count their calls."""
    monkeypatch.setitem(scales.TABLE, "toy", {s: Toy(n=5, offset=0.5) for s in scales.SCALES})
    calls = []
    state = {"fail_at": None}

    def compute(coords, settings, key):
        if coords["i"] == state["fail_at"]:
            raise Interrupt
        calls.append(coords["i"])
        return {"square": (coords["i"] + settings.offset) ** 2}

    def figure(table, settings):
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        ax.plot(table["i"], table["square"])
        return fig

    r = reproduce.Reproduction(
        name="toy", experiment="toy", description="squares",
        sweep=sweep.Sweep(name="toy", pieces=lambda s: sweep.grid(i=range(s.n)), compute=compute,
                          columns={"square": "(i + offset)²"}),
        figure=figure,
        summary=lambda table, settings: {"total": float(table["square"].sum())},
    )
    monkeypatch.setitem(reproduce.REGISTRY, "toy", r)
    return calls, state


def test_outputs_and_keys(toy, tmp_path):
    calls, _ = toy
    result = reproduce.run("toy", "ci", tmp_path)
    on_disk = json.loads((tmp_path / "toy.json").read_text())
    assert on_disk == result
    for key in ("name", "scale", "settings", "seconds", "jax", "backend", "devices", "table", "summary"):
        assert key in on_disk
    assert on_disk["table"] == {"i": [0, 1, 2, 3, 4], "square": [0.25, 2.25, 6.25, 12.25, 20.25]}
    assert on_disk["summary"] == {"total": 41.25}
    assert on_disk["settings"] == {"n": 5, "offset": 0.5}
    assert (tmp_path / "toy.png").read_bytes()[:4] == b"\x89PNG" and calls == [0, 1, 2, 3, 4]
    assert not list(tmp_path.glob(".*.tmp")) and not list(tmp_path.glob(".toy*"))


def test_resume_after_interruption(toy, tmp_path):
    calls, state = toy
    state["fail_at"] = 3
    with pytest.raises(Interrupt):
        reproduce.run("toy", "ci", tmp_path)
    assert calls == [0, 1, 2] and not (tmp_path / "toy.json").exists()
    state["fail_at"] = None
    result = reproduce.run("toy", "ci", tmp_path)
    assert calls == [0, 1, 2, 3, 4]  # finished pieces were not recomputed
    assert result["cached_pieces"] == 3
    again = reproduce.run("toy", "ci", tmp_path)
    assert calls == [0, 1, 2, 3, 4] and again["cached_pieces"] == 5
    assert again["table"] == result["table"]


def test_shards_then_merge(toy, tmp_path):
    calls, _ = toy
    parts = [reproduce.run("toy", "ci", tmp_path, shard=(i, 2)) for i in range(2)]
    assert [p["pieces"] for p in parts] == [3, 2] and sorted(calls) == [0, 1, 2, 3, 4]
    assert not (tmp_path / "toy.json").exists()  # shards only fill the cache
    merged = reproduce.run("toy", "ci", tmp_path)
    assert merged["cached_pieces"] == 5 and len(calls) == 5 and (tmp_path / "toy.png").exists()
    with pytest.raises(ValueError, match="shard needs out"):
        reproduce.run("toy", "ci", shard=(0, 2))


_BOOKKEEPING = ("seconds", "compute_seconds", "cached_pieces")


def test_legacy_shards_then_merge_equal_one_run(tmp_path, monkeypatch):
    """A legacy reproduction (pieces/compute/assemble) at ci scale: shards 0/2 and 1/2 fill the piece cache,
    a call without a shard merges them, and every number of the JSON equals that of one unsharded run.  A toy
    (squares of its pieces), so that the test does not depend on which reproductions are still legacy."""
    name = "toy-legacy"
    monkeypatch.setitem(scales.TABLE, "toy", {s: Toy(n=5, offset=0.5) for s in scales.SCALES})

    def plot(result, path):
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        ax.plot(result["squares"])
        fig.savefig(path)
        plt.close(fig)

    monkeypatch.setitem(reproduce.REGISTRY, name, reproduce.Reproduction(
        name=name, experiment="toy", description="squares, legacy form",
        pieces=lambda s: [{"i": i} for i in range(s.n)],
        compute=lambda piece, s: {"square": (piece["i"] + s.offset) ** 2},
        assemble=lambda s, pieces, results: {"squares": [r["square"] for r in results]}, plot=plot))
    whole = reproduce.run(name, "ci", tmp_path / "whole", plot=False)
    assert whole["squares"] == [0.25, 2.25, 6.25, 12.25, 20.25]
    sharded = tmp_path / "sharded"
    parts = [reproduce.run(name, "ci", sharded, shard=(i, 2)) for i in range(2)]
    assert [p["pieces"] for p in parts] == [(whole["pieces"] + 1) // 2, whole["pieces"] // 2]
    assert [p["cached_pieces"] for p in parts] == [0, 0] and [p["shard"] for p in parts] == [[0, 2], [1, 2]]
    assert all(p["jax"] == whole["jax"] for p in parts)
    assert not (sharded / f"{name}.json").exists() and not (sharded / f"{name}.png").exists()
    merged = reproduce.run(name, "ci", sharded)
    assert merged["cached_pieces"] == merged["pieces"] == whole["pieces"] and (sharded / f"{name}.png").exists()
    assert json.loads((sharded / f"{name}.json").read_text()) == merged
    strip = {k: v for k, v in whole.items() if k not in _BOOKKEEPING}
    assert {k: v for k, v in merged.items() if k not in _BOOKKEEPING} == strip
    with pytest.raises(ValueError, match="shard must be"):
        reproduce.run(name, "ci", sharded, shard=(2, 2))


def test_settings_change_uses_a_new_cache(toy, tmp_path, monkeypatch):
    calls, _ = toy
    reproduce.run("toy", "ci", tmp_path)
    monkeypatch.setitem(scales.TABLE["toy"], "ci", Toy(n=5, offset=1.5))
    result = reproduce.run("toy", "ci", tmp_path)
    assert len(calls) == 10 and result["table"]["square"][0] == 2.25


def test_no_output_directory_writes_nothing(toy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = reproduce.run("toy", "book")
    assert result["scale"] == "book" and not list(tmp_path.iterdir())


def test_unknown_names_and_scales(toy):
    with pytest.raises(ValueError, match=r"unknown name 'nope'.*'toy'"):
        reproduce.run("nope", "ci")
    with pytest.raises(ValueError, match="unknown scale 'huge'"):
        reproduce.run("toy", "huge")


def test_command_line_list_and_errors():
    out = subprocess.run([sys.executable, "-m", "ntkbook", "list"], capture_output=True, text=True, check=True)
    assert "one-hidden-layer" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "ntkbook", "reproduce", "one-hidden-layer", "--scale", "huge"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "expected one of 'ci', 'book', 'paper'" in bad.stderr


# `python -m ntkbook reproduce one-hidden-layer --scale ci` (the command line's own entry point) with the ci
# sweep cut to two widths, three seeds and one input: six real pieces (width, seed), in that order.  The
# second width is above the reproduction's PAD (computed at its own size), so it compiles the solver again and
# the run pauses there between pieces 3 and 4, where the test kills it (the pieces of a compiled width take
# milliseconds); the resumed numbers are compared with an uninterrupted run.
_TINY_CLI = textwrap.dedent("""
    import sys
    from ntkbook import cli, scales
    ci = scales.TABLE["one_hidden_layer"]["ci"]
    scales.TABLE["one_hidden_layer"]["ci"] = ci.replace(widths=(8, 2000), seeds=3, inputs=(1.0,))
    sys.exit(cli.main(sys.argv[1:]))
""")


def test_killed_command_resumes_without_recomputing(tmp_path):
    """Kill the reproduction command mid-run; the rerun reuses every finished piece, and the result
    is identical to an uninterrupted run."""
    import os
    import signal
    import time

    env = os.environ | {"NTKBOOK_PROGRESS": "0"}
    cmd = [sys.executable, "-c", _TINY_CLI, "reproduce", "one-hidden-layer", "--scale", "ci"]
    out = tmp_path / "interrupted"
    proc = subprocess.Popen([*cmd, "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    cache = out / ".cache" / "one_hidden_layer"  # the sweep engine's cache: <sweep>/<settings digest>/<piece>
    while time.time() < deadline and len(list(cache.glob("*/*.json"))) < 3:
        assert proc.poll() is None, "the run finished before it could be interrupted"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = {p: p.stat().st_mtime_ns for p in cache.glob("*/*.json")}
    assert 3 <= len(finished) < 6 and not (out / "one-hidden-layer.json").exists()
    for p in finished:  # a kill during a write can leave a stray .tmp file, never a partial piece
        record = json.loads(p.read_text())
        assert record["sha256"] == records.digest(record["columns"])  # the sweep engine's piece-cache format

    subprocess.run([*cmd, "--out", str(out)], env=env, check=True, capture_output=True)
    resumed = json.loads((out / "one-hidden-layer.json").read_text())
    assert resumed["pieces"] == 6 and resumed["cached_pieces"] == len(finished)
    assert all(p.stat().st_mtime_ns == t for p, t in finished.items()), "finished pieces were rewritten"

    fresh = tmp_path / "fresh"
    subprocess.run([*cmd, "--out", str(fresh)], env=env, check=True, capture_output=True)
    uninterrupted = json.loads((fresh / "one-hidden-layer.json").read_text())
    assert uninterrupted["cached_pieces"] == 0
    assert resumed["table"] == uninterrupted["table"] and resumed["summary"] == uninterrupted["summary"]

# ---------------------------------------------------------------------------------------------
# The phase-transition reproduction (Figure 2 of Oymak–Soltanolkotabi 2020): its piece against a plain
# float64 GD, its plumbing at a tiny grid
# ---------------------------------------------------------------------------------------------


def _plain_gd_residuals(x, y, w, v, lr, activation, steps):
    """‖f(W_τ) − y‖, τ = 0..steps, of a hand-written float64 GD on ½‖φ(XWᵀ)v − y‖² (Eq. 2.1) — independent of
    ntkbook.training.  φ and φ' are the reproduction's (the registry's ``value_and_prime``, tested against jax.nn in test_activations;
    φ' = 1{z ≥ 0} for ReLU, the paper's generalized derivative), evaluated in float64."""
    pair = jax.jit(get_activation(activation).value_and_prime)  # compiled once per shape: 1500 steps, no dispatch cost
    out = []
    with jax.enable_x64(True):
        for _ in range(steps + 1):
            z = x @ w.T
            phi, dphi = (np.asarray(a) for a in pair(jnp.asarray(z)))
            r = phi @ v - y
            out.append(np.linalg.norm(r))
            w = w - lr * ((r[:, None] * v[None, :]) * dphi).T @ x
    return np.asarray(out)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("activation", ["softplus", "relu"])
def test_phase_transition_piece_agrees_with_plain_gradient_descent(activation, dtype):
    """Every (k, trial) of a column: the engine stops at the first iteration at which a plain float64 GD has
    relative residual < tol, and reports that GD's residual when it hits the cap.

    In float64 the engine must reproduce the reference: the same iteration, and the residual to 1e-6 (the
    constant step amplifies evaluation-order differences of 1e-16: by 1e9 over 1500 steps for one of these
    networks, trial 0 with k = 8, whose residual agrees to 1.7e-7; the others agree to 1e-15).  In
    float32 (the book's precision) the iteration may differ by one, and the residual at the cap is compared
    for softplus only: for ReLU, a unit whose pre-activation crosses the kink during training turns a 1e-7
    float32 difference into a ~1e-3 difference of the trajectory (measured with two evaluation orders of the
    same update, both 2.3e-3 from float64 at τ = 800 in the relu case here), so there only the float64 run
    can check the residual."""
    n, d, ks, trials, tol, steps = 12, 5, [2, 5, 8], 2, 2.5e-2, 1500
    lr = pt.PAPER_STEP_SIZES[activation]
    exact = dtype == "float64"
    with jax.enable_x64(exact):
        out = pt.fit_column(activation, n, d, ks, trials=trials, lr=lr, max_iters=steps, tol=tol,
                            key=jax.random.key(3), chunk=400, dtype=np.dtype(dtype))
    x, y, w0 = pt.column_data(jax.random.key(3), n, d, ks, trials)
    for t in range(trials):
        for j, k in enumerate(ks):
            xx, yy = x[t].astype(np.float64), y[t].astype(np.float64)
            v = np.asarray(output_weights(k, float(np.linalg.norm(yy)), n), np.float64)
            rel = _plain_gd_residuals(xx, yy, w0[t, k].astype(np.float64), v, lr, activation, steps) \
                / np.linalg.norm(yy)
            hit = np.nonzero(rel < tol)[0]
            if hit.size and abs(rel[hit[0]] - tol) > 1e-4 * tol:  # not a float32/float64 photo finish
                assert out["success"][j, t] and abs(out["iterations"][j, t] - hit[0]) <= (0 if exact else 1)
                if exact:
                    assert out["rel_error"][j, t] == pytest.approx(rel[hit[0]], rel=1e-6)
            elif not hit.size:
                assert not out["success"][j, t] and out["iterations"][j, t] == steps
                if exact or activation == "softplus":
                    assert out["rel_error"][j, t] == pytest.approx(rel[steps], rel=1e-6 if exact else 1e-3)


def test_phase_transition_workers_and_width_classes_do_not_change_results(monkeypatch):
    kw = dict(trials=3, lr=0.1, max_iters=600, tol=5e-2, key=jax.random.key(0), chunk=200)
    one_class = pt.fit_column("relu", 10, 4, [2, 4, 6], workers=1, **kw)  # a small column: one width class
    monkeypatch.setattr(pt, "CLASS_WORK", 1)  # as many width classes as WIDTH_CLASSES allows
    one = pt.fit_column("relu", 10, 4, [2, 4, 6], workers=1, **kw)
    two = pt.fit_column("relu", 10, 4, [2, 4, 6], workers=2, **kw)
    for k in one:
        np.testing.assert_array_equal(one[k], two[k])  # threads: bit for bit
    # classes pad to other widths: the same outcomes and stopping iterations, residuals to float32 rounding
    np.testing.assert_array_equal(one["success"], one_class["success"])
    np.testing.assert_array_equal(one["iterations"], one_class["iterations"])
    np.testing.assert_allclose(one["rel_error"], one_class["rel_error"], rtol=1e-4)


def test_phase_transition_unstable_step_is_declared_diverged_early():
    # d = 1: the inputs are ±1, ‖X‖² = n, λ_max(JJᵀ) ≈ n·E[σ(g)]² = n/4, and η = 0.15 > 2/(n/4) for n = 100
    out = pt.fit_column("softplus", 100, 1, [2, 4], trials=2, lr=0.15, max_iters=5000, tol=2.5e-3,
                        key=jax.random.key(0))
    assert not out["success"].any()
    assert np.all(out["iterations"] < 5000) and np.all(out["rel_error"] > pt.DIVERGED)


def test_phase_transition_column_data_is_uniform_on_the_sphere_and_nested():
    x5, y5, w5 = pt.column_data(jax.random.key(0), 7, 5, [3], 2, d_max=8)
    _x8, y8, w8 = pt.column_data(jax.random.key(0), 7, 8, [3], 2, d_max=8)
    np.testing.assert_allclose(np.linalg.norm(x5, axis=2), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(y5, y8)
    np.testing.assert_array_equal(w5[0, 3], w8[0, 3][:, :5])


def test_phase_transition_outputs_and_resume(tmp_path, monkeypatch):
    """The ``phase-transition`` reproduction's plumbing on a tiny grid: JSON = result, figure, shapes, per-trial
    outcomes behind the probabilities, resume from the piece cache.  (Its numbers at ci are the chapter's claims
    fig-2/*-n20-fails-below and fig-2/*-n20-succeeds-above, which run the same reproduction.)"""
    s = scales.get("phase_transition", "ci").replace(n_values=(8,), ks=(1, 2, 8), ds=(1, 4), trials=2,
                                                     max_iters=300, chunk=300)
    monkeypatch.setitem(scales.TABLE, "phase_transition", {name: s for name in scales.SCALES})
    result = reproduce.run("phase-transition", "ci", tmp_path)
    on_disk = json.loads((tmp_path / "phase-transition.json").read_text())
    assert on_disk == result
    for key in ("n_values", "activations", "ks", "ds", "success", "settings", "seconds", "name", "scale", "backend"):
        assert key in on_disk
    assert (tmp_path / "phase-transition.png").stat().st_size > 1000
    assert on_disk["ks"] == list(s.ks) and on_disk["ds"] == list(s.ds)
    for a in s.activations:
        prob = np.asarray(on_disk["success"][a]["8"])
        trials = np.asarray(on_disk["trial_success"][a]["8"])
        assert prob.shape == (len(s.ks), len(s.ds)) and trials.shape == (*prob.shape, s.trials)
        np.testing.assert_array_equal(prob, trials.mean(axis=2))
    again = reproduce.run("phase-transition", "ci", tmp_path)  # resumes entirely from the cache
    assert again["cached_pieces"] == again["pieces"] and again["success"] == result["success"]
