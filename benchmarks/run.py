"""``make bench``: speed and memory of the package's hot paths and of the chapters, on this machine.

Sections (each can be chosen with ``--only``):

* ``ntk`` — empirical tangent kernels: the configuration neural-tangents publishes (fully connected
  ReLU net, 3 hidden layers of width 2048, input 3072, 8 outputs, 16 inputs, the full (16, 16, 8, 8)
  kernel, float32) for every method; and a width sweep m = 2⁶ … 2¹⁴ with N = 60 inputs, 3 outputs,
  with the fitted exponent a of time ∝ P^a per method.
* ``hessian`` — ``hessian_spectral_norm`` on two-hidden-layer tanh networks, P ≈ 10³ … 10⁷: Hessian-
  vector products, relative error (against dense ``eigvalsh`` where the Hessian can be formed, else
  against a tolerance-1e-9 float64 run for P ≤ 10⁵), seconds and peak memory (each size runs in a
  fresh process; peak resident memory from ``getrusage``).
* ``training`` — gradient descent with kernel tracking for 10 seeds: one ``train`` call over all seeds (grouped
  as on this machine by default, and all in one vmapped group) against a Python loop over the seeds,
  interleaved rounds, medians.
* ``chapters`` — wall time of every chapter notebook at ``ci`` and ``book`` scale (papermill).
* ``make-test`` — wall time of ``make test`` (only with ``--with-make-test``: it takes minutes).

JAX compilation is timed separately from running (first call vs the median of repeated calls, each
ended by ``block_until_ready``).  Writes ``benchmarks/results/latest.json`` (machine description and
every number) and ``benchmarks/results/latest.md`` (the tables shown on the book's Performance page).
Timings are measurements, never assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def machine() -> dict:
    import jax

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_gib, 1), "python": platform.python_version(),
            "jax": jax.__version__, "backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()],
            "platform": platform.platform()}


def timed(fn, repeats: int = 5) -> dict:
    """Compile + first run, then the median and minimum of ``repeats`` runs (seconds)."""
    import jax

    start = time.perf_counter()
    jax.block_until_ready(fn())
    first = time.perf_counter() - start
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        runs.append(time.perf_counter() - start)
    return {"first_call_s": first, "median_s": statistics.median(runs), "min_s": min(runs), "repeats": repeats}


# ---------------------------------------------------------------------------------------------
# sections
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Empirical NTK: ntkbook against neural-tangents, one run, interleaved repetitions
# ---------------------------------------------------------------------------------------------

NTK_CONFIG = {"width": 2048, "depth": 3, "input_dim": 3072, "outputs": 8, "inputs": 16}
"""neural-tangents' published benchmark: 3 hidden ReLU layers of width 2048 without bias, input 3072,
8 outputs, 16 inputs, the full (16, 16, 8, 8) kernel, float32, x2 = x1."""
NTK_METHODS = ("structured", "ntvp", "jacobian")
NTK_FIGURE = "bench-ntk-sweep.png"
"""Written next to latest.json; the book copies it to book/_generated/ for the Performance page."""
NT_IMPLEMENTATIONS = {"jacobian": "JACOBIAN_CONTRACTION", "ntvp": "NTK_VECTOR_PRODUCTS",
                      "structured": "STRUCTURED_DERIVATIVES"}
NT_VENV = ROOT / ".venv-nt"
NT_REQUIREMENTS = ["jax==0.4.25", "jaxlib==0.4.25", "numpy<2", "tf2jax==0.3.6", "tensorflow==2.18.1",
                   "neural-tangents==0.6.5"]
"""neural-tangents 0.6.5 runs only with these (Python 3.11); it lives in its own virtual environment."""

_NTK_WORKER = r"""
import gc, json, statistics, sys, time
import jax, jax.numpy as jnp
lib, cfg = sys.argv[1], json.loads(sys.argv[2])
w, depth, d, k, n = (cfg[a] for a in ("width", "depth", "input_dim", "outputs", "inputs"))
x = jax.random.normal(jax.random.PRNGKey(1), (n, d), jnp.float32)
if lib == "ntkbook":
    import ntkbook as nb
    model, params = nb.models.mlp(jax.random.PRNGKey(0), (w,) * depth, input_dim=d, output_dim=k, activation="relu")
    def make(method, variant):
        return lambda: nb.empirical_ntk(model.apply, params, x, method=method)
else:
    import neural_tangents as nt
    from neural_tangents import stax
    layers = []
    for _ in range(depth):
        layers += [stax.Dense(w, b_std=None), stax.Relu()]
    init_fn, apply_fn, _ = stax.serial(*layers, stax.Dense(k, b_std=None))
    _, params = init_fn(jax.random.PRNGKey(0), x.shape)
    def make(method, variant):
        impl = getattr(nt.NtkImplementation, cfg["implementations"][method])
        f = jax.jit(nt.empirical_ntk_fn(apply_fn, trace_axes=(), vmap_axes=variant, implementation=impl))
        return lambda: f(x, None, params)
fn, ref = None, None
print(json.dumps({"ready": True, "jax": jax.__version__,
                  "params": int(sum(a.size for a in jax.tree_util.tree_leaves(params)))}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    out = {}
    if cmd["op"] == "prepare":
        fn = make(cmd["method"], cmd.get("variant"))
        start = time.perf_counter()
        kern = jax.block_until_ready(fn())
        out = {"first_s": time.perf_counter() - start, "shape": list(kern.shape)}
        if lib == "ntkbook":
            if ref is None:
                ref = make("structured", None)()
            out["rel_diff_vs_structured"] = float(jnp.abs(kern - ref).max() / jnp.abs(ref).max())
        del kern
    elif cmd["op"] == "run":
        start = time.perf_counter()
        jax.block_until_ready(fn())
        out = {"s": time.perf_counter() - start}
    elif cmd["op"] == "release":
        fn = None
        gc.collect()
    elif cmd["op"] == "gemm":
        m = cmd["size"]
        a = jax.random.normal(jax.random.PRNGKey(2), (m, m), jnp.float32)
        b = jax.random.normal(jax.random.PRNGKey(3), (m, m), jnp.float32)
        mm = jax.jit(lambda a, b: jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST))
        jax.block_until_ready(mm(a, b))
        runs = []
        for _ in range(cmd["repeats"]):
            start = time.perf_counter()
            jax.block_until_ready(mm(a, b))
            runs.append(time.perf_counter() - start)
        out = {"median_s": statistics.median(runs), "flops": 2 * m**3}
    print(json.dumps(out), flush=True)
"""


class NtkWorker:
    """A child process holding one library's network and compiled kernel function; asked to time one
    call at a time, so that two libraries' repetitions can be interleaved in one run."""

    def __init__(self, python: str, lib: str, cfg: dict, env: dict | None = None):
        self.proc = subprocess.Popen([python, "-c", _NTK_WORKER, lib, json.dumps(cfg)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        self.info = self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"benchmark worker ({self.proc.args[3]}) died (exit code {self.proc.poll()})")
        return json.loads(line)

    def ask(self, **cmd) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def ensure_nt_venv() -> str:
    """The Python of ``.venv-nt`` (neural-tangents 0.6.5 and its pins), created on first use."""
    python = NT_VENV / "bin" / "python"
    if not python.exists():
        base = "python3.11"
        print(f"creating {NT_VENV} ({base}, {' '.join(NT_REQUIREMENTS)}) ...", flush=True)
        subprocess.run([base, "-m", "venv", str(NT_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *NT_REQUIREMENTS], check=True)
    return str(python)


def ntk_flops(method: str, width: int, depth: int, input_dim: int, outputs: int, inputs: int) -> float:
    """Floating-point operations (a multiply-add = 2) of each ntkbook method on an MLP without bias,
    x2 = x1 (n inputs, k outputs, widths m, input d; P = dm + (L−1)m² + mk, P_h = P − dm the
    parameters above the first layer):

    * forward pass: F = 2nP;  backward signals of all k outputs: B = 2nk·P_h (δ through W⁽ˡ⁾, l ≥ 2);
    * structured: F + B + Σ_l 2n²(m_{l−1} + k²m_l) + 2n²m  (the Gram matrices of α and δ);
    * jacobian: F + B + nkP (one multiply per Jacobian entry: outer products) + 2(nk)²P (contraction);
    * ntvp: F + B + nkP (the per-input vector-Jacobian products) + 2k·R·(2P − dm), with
      R = Σ_c n_c·e_c the (row, column) pairs the symmetry blocks compute (n_c columns of block c,
      e_c rows up to its end) — each Jacobian-vector product on r rows costs 2r(2P − dm): the tangent of
      W and of α through every layer, except that the first layer's input has no tangent.
    """
    from ntkbook import kernels

    n, k, m, d = inputs, outputs, width, input_dim
    p = d * m + (depth - 1) * m * m + m * k
    p_hidden = p - d * m
    fwd, back = 2 * n * p, 2 * n * k * p_hidden
    if method == "structured":
        fans = [d] + [m] * (depth - 1)
        return fwd + back + sum(2 * n * n * (f + k * k * m) for f in fans) + 2 * n * n * m
    if method == "jacobian":
        return fwd + back + n * k * p + 2 * (n * k) ** 2 * p
    pairs = sum((stop - start) * stop for start, stop in kernels.symmetry_blocks(n))
    return fwd + back + n * k * p + 2 * k * pairs * (2 * p - d * m)


def bench_ntk(quick: bool, with_nt: bool = False, repeats: int = 5, methods: tuple[str, ...] = NTK_METHODS,
              sweep: bool = True) -> dict:
    """Each method on the published configuration: ntkbook (and neural-tangents in the same run,
    repetitions interleaved), the machine's float32 GEMM rate, and time against P over widths."""
    cfg = dict(NTK_CONFIG, width=256 if quick else NTK_CONFIG["width"])
    env = os.environ | {"PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    ours = NtkWorker(sys.executable, "ntkbook", cfg, env)
    nt = None
    nt_variants = (None, 0)  # neural-tangents' vmap_axes: None (its default) and 0 (batch axis)
    if with_nt:
        cfg_nt = cfg | {"implementations": NT_IMPLEMENTATIONS}
        nt = NtkWorker(ensure_nt_venv(), "neural_tangents", cfg_nt, env | {"PYTHONPATH": ""})
    gemm = ours.ask(op="gemm", size=2048, repeats=repeats)
    gemm_rate = gemm["flops"] / gemm["median_s"]
    print(f"float32 GEMM 2048³: {gemm['median_s'] * 1e3:.1f} ms, {gemm_rate / 1e9:.0f} GFLOP/s")
    out = {"config": cfg, "params": ours.info["params"], "gemm": gemm | {"flop_per_s": gemm_rate},
           "neural_tangents": None if nt is None else {"version": "0.6.5", "jax": nt.info["jax"]}, "methods": []}
    for method in methods:
        reps = repeats if method != "jacobian" else max(3, repeats - 2)
        contenders = [("ntkbook", ours, None)] + ([("neural-tangents", nt, v) for v in nt_variants] if nt else [])
        prepared = {}
        for name, worker, variant in contenders:
            prepared[(name, variant)] = worker.ask(op="prepare", method=method, variant=variant)
            worker.ask(op="run")  # one warm run each
        times = {key: [] for key in prepared}
        for r in range(reps):  # interleaved: A B C, then B C A, ... (no side always runs first)
            order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
            for name, worker, variant in order:
                times[(name, variant)].append(worker.ask(op="run")["s"])
        for _, worker, _ in contenders:
            worker.ask(op="release")
        flops = ntk_flops(method, **{a: cfg[a] for a in ("width", "depth", "input_dim", "outputs", "inputs")})
        row = {"method": method, "flops": flops, "results": []}
        for (name, variant), ts in times.items():
            res = {"library": name, "vmap_axes": variant, "median_s": statistics.median(ts), "min_s": min(ts),
                   "runs_s": ts, "first_call_s": prepared[(name, variant)]["first_s"]}
            if name == "ntkbook":
                res["flop_per_s"] = flops / res["median_s"]
                res["fraction_of_gemm"] = res["flop_per_s"] / gemm_rate
                res["rel_diff_vs_structured"] = prepared[(name, variant)]["rel_diff_vs_structured"]
            row["results"].append(res)
            tag = name if variant is None or name == "ntkbook" else f"{name} (vmap_axes={variant})"
            print(f"ntk {method:10s} {tag:34s} median {res['median_s'] * 1e3:9.1f} ms  "
                  f"(runs {', '.join(f'{t * 1e3:.0f}' for t in ts)}; first call {res['first_call_s']:.1f} s)")
        mine = row["results"][0]["median_s"]
        theirs = [r["median_s"] for r in row["results"][1:]]
        if theirs:
            row["best_neural_tangents_s"] = min(theirs)
            row["ratio"] = mine / min(theirs)
            print(f"ntk {method:10s} ratio ntkbook / best neural-tangents = {row['ratio']:.2f}")
        out["methods"].append(row)
    ours.close()
    if nt is not None:
        nt.close()
    head = [{"method": r["method"], "width": cfg["width"], "params": out["params"],
             "median_s": r["results"][0]["median_s"], "first_call_s": r["results"][0]["first_call_s"]}
            for r in out["methods"]]
    if sweep:
        out["sweep"] = bench_ntk_sweep(quick, cfg, env, repeats=3, measured=head)
    return out


def bench_ntk_sweep(quick: bool, cfg: dict, env: dict, repeats: int = 3, measured: list | None = None) -> dict:
    """Time against P: the published configuration at widths 2⁷ … 2¹¹ (one fresh worker per width; the
    width of ``cfg`` is taken from ``measured``, the head-to-head rows), and the fitted exponent a of
    time ∝ P^a per method (ntkbook.fitting.power_law_fit)."""
    from ntkbook.fitting import power_law_fit

    widths = (64, 128, 256) if quick else (128, 256, 512, 1024, 2048)
    rows = list(measured or [])
    for w in widths:
        if any(r["width"] == w for r in rows):
            continue
        worker = NtkWorker(sys.executable, "ntkbook", cfg | {"width": w}, env)
        for method in NTK_METHODS:
            first = worker.ask(op="prepare", method=method)
            ts = [worker.ask(op="run")["s"] for _ in range(repeats)]
            worker.ask(op="release")
            rows.append({"method": method, "width": w, "params": worker.info["params"],
                         "median_s": statistics.median(ts), "first_call_s": first["first_s"]})
            print(f"ntk sweep m={w:5d} P={worker.info['params']:>11,} {method:10s} "
                  f"median {rows[-1]['median_s'] * 1e3:9.1f} ms")
        worker.close()
    rows.sort(key=lambda r: (r["width"], NTK_METHODS.index(r["method"])))
    fits = {}
    for method in NTK_METHODS:
        pts = [r for r in rows if r["method"] == method]
        fit = power_law_fit([r["params"] for r in pts], [r["median_s"] for r in pts])
        fits[method] = {"slope": fit.slope, "stderr": fit.stderr, "intercept": fit.intercept, "n": fit.n}
    return {"rows": rows, "fits": fits}


def plot_ntk_sweep(sweep: dict, path: Path) -> None:
    """Time against P on log–log axes, one colour per method, with the fitted P^a lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(6, 4))
    for method in NTK_METHODS:
        pts = [r for r in sweep["rows"] if r["method"] == method]
        p = np.array([r["params"] for r in pts], float)
        t = np.array([r["median_s"] for r in pts], float)
        fit = sweep["fits"][method]
        line = ax.loglog(p, t, "o", label=f"{method}: time ∝ $P^{{{fit['slope']:.2f}}}$ (± {fit['stderr']:.2f})")[0]
        grid = np.geomspace(p.min(), p.max(), 50)
        ax.loglog(grid, np.exp(fit["intercept"]) * grid ** fit["slope"], "-", color=line.get_color(), lw=1)
    ax.set_xlabel("P (number of parameters)")
    ax.set_ylabel("median time per kernel (s)")
    ax.set_title("Empirical NTK, 3 hidden ReLU layers, d = 3072, k = 8, n = 16")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


_HESSIAN_CHILD = r"""
import json, resource, sys, time
import jax, jax.numpy as jnp
import ntkbook as nb
def peak_mib():  # this process's peak resident memory (VmHWM: reset at exec, unlike getrusage's maxrss)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
m, tol = int(sys.argv[1]), float(sys.argv[2])
model, params = nb.models.mlp(jax.random.key(0), (m, m), input_dim=4, activation="tanh")
x = jax.random.normal(jax.random.key(2), (4,))
def f(p, xi): return model.apply(p, xi[None])[0]
P = nb.pytree.num_params(params)
jax.block_until_ready(jax.jit(lambda p: f(p, x))(params))
baseline = peak_mib()
ref = None
if P <= 100_000:
    with jax.enable_x64(True):
        p64 = jax.tree_util.tree_map(lambda a: a.astype(jnp.float64), params)
        x64 = x.astype(jnp.float64)
        if P <= 5000:
            ref, how = nb.hessian.dense_spectral_norm(f, p64, x64), "dense eigvalsh (float64)"
        else:
            res = nb.hessian_spectral_norm(f, p64, args=(x64,), tol=1e-9, max_iter=5000)
            ref, how = res.value, "Lanczos tol 1e-9 (float64)"
start = time.perf_counter()
nb.hessian_spectral_norm(f, params, args=(x,), tol=tol)
first = time.perf_counter() - start
start = time.perf_counter()
r = nb.hessian_spectral_norm(f, params, args=(x,), tol=tol)
run = time.perf_counter() - start
print(json.dumps({"width": m, "params": P, "tol": tol, "products": r.products, "iterations": r.iterations,
                  "first_call_s": first, "seconds": run, "residual": r.residual, "converged": r.converged,
                  "rel_error": None if ref is None else abs(r.value - ref) / ref,
                  "reference": None if ref is None else how,
                  "peak_rss_mib": peak_mib(),
                  "baseline_rss_mib": baseline}))
"""


def bench_hessian(quick: bool) -> list[dict]:
    widths = (16, 32, 64, 256) if quick else (16, 32, 64, 224, 704, 2233, 3162)
    rows = []
    for m in widths:
        proc = subprocess.run([sys.executable, "-c", _HESSIAN_CHILD, str(m), "1e-6"], capture_output=True, text=True,
                              check=True)
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(row)
        err = "" if row["rel_error"] is None else f" rel.err {row['rel_error']:.1e}"
        print(f"hessian P={row['params']:>11,} products {row['products']:4d} {row['seconds']:8.2f} s "
              f"peak {row['peak_rss_mib']:7.0f} MiB (baseline {row['baseline_rss_mib']:.0f}) "
              f"residual {row['residual']:.1e}{err}")
    return rows


def bench_training(quick: bool, repeats: int = 7) -> list[dict]:
    """10 seeds × 1000 steps of cross-entropy GD (the Figure 1 network, N = 60, 3 outputs) with the kernel
    change tracked at the log-spaced steps: one ``train(..., runs=True)`` call (runs in groups of
    ``default_group_size``), the same call with all seeds in one vmapped group (``group_size=10``, the old
    behaviour), and a Python loop calling ``train`` once per seed.

    The variants are timed in interleaved rounds (A, B, C, A, B, C, …) after one compiling call each, and the
    medians over the rounds are compared, so that a machine shared with other work slows all of them alike.
    """
    import jax

    import ntkbook as nb

    seeds, steps = 10, (200 if quick else 1000)
    x = jax.random.normal(jax.random.key(0), (60, 1)) * 5
    y = jax.nn.one_hot(jax.random.randint(jax.random.key(1), (60,), 0, 3), 3)
    rows = []
    for m in ((32, 256) if quick else (32, 256, 2048)):
        model, _ = nb.models.mlp(jax.random.key(2), (m,), input_dim=1, output_dim=3, activation="relu", use_bias=True)

        def init(k, m=m):
            return nb.models.mlp(k, (m,), input_dim=1, output_dim=3, activation="relu", use_bias=True)[1]

        stacked = jax.vmap(init)(jax.random.split(jax.random.key(3), seeds))
        single = [jax.tree_util.tree_map(lambda a, i=i: a[i], stacked) for i in range(seeds)]
        kwargs = dict(lr=1.0, stop=steps, loss="cross_entropy", track={"model": nb.training.kernel_change(model.apply)})
        group = nb.training.default_group_size(seeds, nb.training.largest_intermediate_bytes(
            model.apply, single[0], x, y, "cross_entropy"))
        variants = {
            "grouped": lambda model=model, stacked=stacked, kwargs=kwargs: nb.training.train(
                model.apply, stacked, x, y, runs=True, **kwargs).sup("model"),
            "all_vmapped": lambda model=model, stacked=stacked, kwargs=kwargs: nb.training.train(
                model.apply, stacked, x, y, runs=True, group_size=seeds, **kwargs).sup("model"),
            "python_loop": lambda model=model, single=single, kwargs=kwargs: [nb.training.train(
                model.apply, p, x, y, **kwargs).sup("model") for p in single],
        }
        first = {}
        for name, fn in variants.items():
            start = time.perf_counter()
            fn()
            first[name] = time.perf_counter() - start
        wall = {name: [] for name in variants}
        cpu = {name: [] for name in variants}
        for _ in range(repeats):
            for name, fn in variants.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                fn()
                wall[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
        med = {name: statistics.median(v) for name, v in wall.items()}
        med_cpu = {name: statistics.median(v) for name, v in cpu.items()}
        row = {"seeds": seeds, "width": m, "steps": steps, "group_size": group, "repeats": repeats,
               "first_call_s": first, "samples_s": wall, "cpu_samples_s": cpu, "median_s": med, "median_cpu_s": med_cpu,
               "speedup": med["python_loop"] / med["grouped"],
               "speedup_all_vmapped": med["python_loop"] / med["all_vmapped"],
               "cpu_speedup": med_cpu["python_loop"] / med_cpu["grouped"],
               "cpu_speedup_all_vmapped": med_cpu["python_loop"] / med_cpu["all_vmapped"],
               "load_average": os.getloadavg()}
        rows.append(row)
        print(f"training m={m:5d} {seeds} seeds × {steps} steps: groups of {group} {med['grouped']:.2f} s, "
              f"all vmapped {med['all_vmapped']:.2f} s, loop {med['python_loop']:.2f} s — speed-up "
              f"{row['speedup']:.1f}x (all vmapped {row['speedup_all_vmapped']:.1f}x); process CPU time "
              f"{row['cpu_speedup']:.1f}x ({row['cpu_speedup_all_vmapped']:.1f}x); load {row['load_average'][0]:.1f}")
    return rows


def chapter_times_from_build(build_dir: Path) -> list[dict]:
    """Execution time of every notebook in the last ``make book`` (myst-nb's execution record).

    ``make book`` executes every chapter at ``book`` scale anyway; reading its record avoids running
    them a second time.  myst-nb keeps, per document, ``exec_data = {"runtime": seconds,
    "succeeded": bool, ...}`` in the Sphinx environment pickled under ``_build/.doctrees``.
    """
    import pickle

    env_file = build_dir / ".doctrees" / "environment.pickle"
    if not env_file.exists():
        raise SystemExit(f"{env_file} not found: run `make book` first")
    with env_file.open("rb") as fh:
        env = pickle.load(fh)
    rows = []
    for doc, data in sorted(getattr(env, "nb_metadata", {}).items()):
        exec_data = data.get("exec_data")
        if exec_data:
            rows.append({"chapter": doc.split("/")[-1], "scale": "book", "seconds": exec_data["runtime"],
                         "ok": bool(exec_data["succeeded"]), "source": "make book"})
    return rows


def bench_chapters(quick: bool, scales: tuple[str, ...] = ("ci", "book")) -> list[dict]:
    rows = []
    scales = ("ci",) if quick else scales
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        for scale in scales:
            with tempfile.TemporaryDirectory() as tmp:
                env = os.environ | {"NTKBOOK_PROGRESS": "0", "NTKBOOK_LEDGER_DIR": tmp}
                start = time.perf_counter()
                proc = subprocess.run([sys.executable, "-m", "papermill", str(path), str(Path(tmp) / path.name),
                                       "-p", "scale", scale, "--cwd", str(path.parent), "--no-progress-bar"],
                                      capture_output=True, text=True, env=env)
                seconds = time.perf_counter() - start
            rows.append({"chapter": path.stem, "scale": scale, "seconds": seconds, "ok": proc.returncode == 0,
                         "source": "papermill"})
            print(f"chapter {path.stem:40s} {scale:5s} {seconds:8.1f} s {'ok' if proc.returncode == 0 else 'FAILED'}")
    return rows


def bench_make_test() -> dict:
    start = time.perf_counter()
    proc = subprocess.run(["make", "test"], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    summary = [line for line in proc.stdout.splitlines() if " passed" in line or " failed" in line][-1:]
    print(f"make test: {seconds:.0f} s, {summary}")
    return {"seconds": seconds, "returncode": proc.returncode, "summary": summary[0] if summary else ""}


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------


def ntk_markdown(ntk: dict, machine: dict) -> list[str]:
    if "methods" not in ntk:  # a result file from before the head-to-head format
        return ["(The NTK section of this result file predates the current format: rerun "
                "`make bench BENCH_ARGS=\"--only ntk --with-neural-tangents\"`.)", ""]
    c = ntk["config"]
    gemm = ntk["gemm"]["flop_per_s"]
    note = [f"*{ntk['note']}*", ""] if ntk.get("note") else []
    nt = ntk.get("neural_tangents")
    lines = [f"**Empirical NTK, neural-tangents' configuration** ({c['depth']} hidden ReLU layers of width "
             f"{c['width']} without bias, input {c['input_dim']}, {c['outputs']} outputs, {c['inputs']} inputs, "
             f"x2 = x1, the full ({c['inputs']}, {c['inputs']}, {c['outputs']}, {c['outputs']}) kernel, float32, "
             f"jitted; P = "
             f"{ntk['params']:,}). Medians of interleaved repetitions after compilation; achieved FLOP/s from the "
             f"analytic operation count of each method (`ntk_flops` in benchmarks/run.py) against the float32 GEMM "
             f"rate measured in the same run ({gemm / 1e9:.0f} GFLOP/s, 2048 × 2048 × 2048).", "", *note]
    if nt:
        lines += [f"neural-tangents {nt['version']} (JAX {nt['jax']}) ran in its own environment in the same run; "
                  "both of its `vmap_axes` settings were timed and the faster is the reference of the ratio.", ""]
        lines += ["| method | ntkbook | neural-tangents, vmap_axes=None | neural-tangents, vmap_axes=0 | ratio "
                  "(ntkbook / faster nt) | ntkbook GFLOP | ntkbook GFLOP/s (% of GEMM) |",
                  "|---|---|---|---|---|---|---|"]
    else:
        lines += ["(neural-tangents not run: `make bench BENCH_ARGS=--with-neural-tangents` adds it.)", "",
                  "| method | ntkbook | GFLOP | GFLOP/s (% of GEMM) | compile + first call |", "|---|---|---|---|---|"]

    def ms(t: float) -> str:
        return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"

    for row in ntk["methods"]:
        ours = row["results"][0]
        rate = f"{ours['flop_per_s'] / 1e9:.0f} ({100 * ours['fraction_of_gemm']:.0f}%)"
        if nt:
            others = {r["vmap_axes"]: r["median_s"] for r in row["results"][1:]}
            lines.append(f"| {row['method']} | {ms(ours['median_s'])} | {ms(others[None])} | {ms(others[0])} | "
                         f"{row['ratio']:.2f} | {row['flops'] / 1e9:.1f} | {rate} |")
        else:
            lines.append(f"| {row['method']} | {ms(ours['median_s'])} | {row['flops'] / 1e9:.1f} | {rate} | "
                         f"{ours['first_call_s']:.1f} s |")
    if "sweep" not in ntk:
        return [*lines, ""]
    fits = ntk["sweep"]["fits"]
    widths = sorted({r["width"] for r in ntk["sweep"]["rows"]})
    when = f", measured on {ntk['sweep_date']}" if ntk.get("sweep_date") else ""
    lines += ["", f"Time against P (the same network at widths {', '.join(map(str, widths))}{when}; figure "
              "below): time ∝ P^a with "
              + ", ".join(f"a = {f['slope']:.2f} ± {f['stderr']:.2f} ({k})" for k, f in fits.items()) + ".", "",
              # a MyST figure with its caption (the page is included by the book's Performance page,
              # from which _generated/ is where the build copies the figure)
              f"```{{figure}} _generated/{NTK_FIGURE}", ":alt: time against P, log-log, three methods", "",
              "Time of each empirical-NTK method against the number of parameters P (log–log), with the "
              "fitted P^a lines.", "```", ""]
    return lines


def markdown(result: dict) -> str:
    m = result["machine"]
    lines = [f"Measured on {result['date']}: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, "
             f"JAX {m['jax']} on `{m['backend']}` ({', '.join(m['devices'])}), Python {m['python']}.", ""]
    if "ntk" in result:
        lines += ntk_markdown(result["ntk"], m)
    dates = result.get("section_dates", {})

    def dated(name: str) -> list[str]:  # a section kept from an earlier run says when it was measured
        d = dates.get(name)
        return [f"*This section was measured on {d}.*", ""] if d and d != result["date"] else []

    if "hessian" in result:
        lines += dated("hessian")
        lines += ["**Hessian spectral norm** (`hessian_spectral_norm`, Lanczos, tol 1e-6, two hidden tanh layers, "
                  "one input, float32):", "",
                  "| P | products | run | peak memory (above the process baseline) | relative error | reference |",
                  "|---|---|---|---|---|---|"]
        for r in result["hessian"]:
            err = "—" if r["rel_error"] is None else f"{r['rel_error']:.1e}"
            extra = r["peak_rss_mib"] - r["baseline_rss_mib"]
            lines.append(f"| {r['params']:,} | {r['products']} | {r['seconds']:.2f} s | {r['peak_rss_mib']:.0f} MiB "
                         f"(+{extra:.0f}) | {err} | {r['reference'] or '—'} |")
        lines.append("")
    if "training" in result:
        lines += ["**Seeds in parallel**: gradient descent with kernel tracking (`nb.training.train`), 10 seeds, "
                  "cross-entropy, the Figure 1 network; one call with the runs in groups of the default size vs "
                  "one call with all seeds in one vmapped group vs a Python loop over the seeds. Medians of "
                  "interleaved rounds, wall time (and, in brackets, the speed-up in this process's CPU time, "
                  "which other work on a shared machine disturbs less):", "",
                  "| width | steps | group size | grouped | all vmapped | loop | speed-up (grouped) | "
                  "speed-up (all vmapped) | load average |", "|---|---|---|---|---|---|---|---|---|"]
        for t in result["training"]:
            med = t.get("median_s")
            if med is None:  # results written before the grouped loop
                lines.append(f"| {t['width']} | {t['steps']} | {t['seeds']} | — | {t['vmapped']['median_s']:.2f} s | "
                             f"{t['python_loop']['median_s']:.2f} s | — | {t['speedup']:.1f}× | — |")
                continue
            lines.append(f"| {t['width']} | {t['steps']} | {t['group_size']} | {med['grouped']:.2f} s | "
                         f"{med['all_vmapped']:.2f} s | {med['python_loop']:.2f} s | {t['speedup']:.1f}× "
                         f"({t['cpu_speedup']:.1f}×) | {t['speedup_all_vmapped']:.1f}× "
                         f"({t['cpu_speedup_all_vmapped']:.1f}×) | {t['load_average'][0]:.1f} |")
        lines.append("")
    if "chapters" in result:
        lines += dated("chapters")
        lines += ["**Chapters** (wall time of executing each notebook):", "",
                  "| chapter | scale | seconds | how |", "|---|---|---|---|"]
        lines += [f"| {r['chapter']} | {r['scale']} | {r['seconds']:.0f}{'' if r['ok'] else ' (failed)'} | "
                  f"{r.get('source', 'papermill')} |" for r in result["chapters"]]
        lines.append("")
    if "make_test" in result:
        mt = result["make_test"]
        lines += [f"**make test**: {mt['seconds'] / 60:.1f} min ({mt['summary']}).", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="ntkbook benchmarks")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--only", nargs="*", choices=("ntk", "hessian", "training", "chapters"),
                        help="run only these sections")
    parser.add_argument("--with-make-test", action="store_true", help="also time `make test`")
    parser.add_argument("--with-neural-tangents", action="store_true",
                        help="also time neural-tangents 0.6.5 in the same run (its own environment .venv-nt, "
                             "created on first use)")
    parser.add_argument("--ntk-methods", nargs="*", default=list(NTK_METHODS), choices=NTK_METHODS,
                        help="the empirical-NTK methods to time")
    parser.add_argument("--no-ntk-sweep", action="store_true", help="skip the time-against-P sweep")
    parser.add_argument("--note", default="", help="a sentence printed with the NTK results (e.g. the machine's load)")
    parser.add_argument("--out", default=str(RESULTS / "latest"), help="output path without extension")
    parser.add_argument("--chapter-scales", nargs="*", default=["ci", "book"], choices=("ci", "book", "paper"),
                        help="scales at which the chapters section runs each notebook")
    parser.add_argument("--book-times-from-build", metavar="BUILD_DIR",
                        help="take the book-scale chapter times from the last `make book` in BUILD_DIR "
                             "(e.g. _build) instead of running every chapter again")
    parser.add_argument("--fresh", action="store_true",
                        help="start a new result file instead of keeping the sections not rerun")
    args = parser.parse_args()
    sections = args.only or ["ntk", "hessian", "training", "chapters"]
    out = Path(args.out)
    result = {}
    if not args.fresh and out.with_suffix(".json").exists():  # keep earlier sections, each with its date
        result = json.loads(out.with_suffix(".json").read_text())
    result |= {"date": time.strftime("%Y-%m-%d"), "machine": machine(), "quick": args.quick}
    scales = tuple(s for s in args.chapter_scales if not (s == "book" and args.book_times_from_build))
    runners = {"ntk": lambda quick: bench_ntk(quick, with_nt=args.with_neural_tangents, methods=tuple(args.ntk_methods),
                                              sweep=not args.no_ntk_sweep), "hessian": bench_hessian,
               "training": bench_training,
               "chapters": lambda quick: bench_chapters(quick, scales)}
    for name, fn in runners.items():
        if name in sections:
            result[name] = fn(args.quick)
            result.setdefault("section_dates", {})[name] = result["date"]
    if "ntk" in sections and args.note:
        result["ntk"]["note"] = args.note
    if "chapters" in sections and args.book_times_from_build:
        result["chapters"] += chapter_times_from_build(Path(args.book_times_from_build))
    if args.with_make_test:
        result["make_test"] = bench_make_test()
    out.parent.mkdir(parents=True, exist_ok=True)
    from ntkbook.records import atomic_write_bytes, atomic_write_json

    if "ntk" in sections and "sweep" in result["ntk"]:
        plot_ntk_sweep(result["ntk"]["sweep"], out.parent / NTK_FIGURE)
    atomic_write_json(out.with_suffix(".json"), result)
    atomic_write_bytes(out.with_suffix(".md"), (markdown(result) + "\n").encode())
    print(f"\nwrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
