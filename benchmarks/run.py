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
NEURAL_TANGENTS_CPU = {"jacobian": 13.5, "ntvp": 2.1, "structured": 0.015}
"""neural-tangents 0.6.5 (JAX 0.4.25, numpy < 2) on this same 2-core CPU, float32, jit, median of 5 — seconds."""


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


def fit_exponent(sizes, times) -> float:
    import numpy as np

    return float(np.polyfit(np.log(sizes), np.log(times), 1)[0])


# ---------------------------------------------------------------------------------------------
# sections
# ---------------------------------------------------------------------------------------------


def bench_ntk(quick: bool) -> dict:
    import jax

    import ntkbook as nb

    out = {"config1": [], "sweep": []}
    widths = 256 if quick else 2048
    model, params = nb.models.mlp(jax.random.key(0), (widths,) * 3, input_dim=3072, output_dim=8, activation="relu")
    x = jax.random.normal(jax.random.key(1), (16, 3072))
    reference = None
    for method in ("structured", "ntvp", "jacobian"):
        t = timed(lambda method=method: nb.empirical_ntk(model.apply, params, x, method=method),
                  repeats=5 if method == "structured" else 3)
        k = nb.empirical_ntk(model.apply, params, x, method=method)
        reference = k if reference is None else reference
        err = float(abs(k - reference).max() / abs(reference).max())
        row = {"method": method, "width": widths, "params": nb.pytree.num_params(params), **t,
               "rel_diff_vs_structured": err, "neural_tangents_s": NEURAL_TANGENTS_CPU[method]}
        out["config1"].append(row)
        print(f"ntk config1 {method:10s} median {t['median_s'] * 1e3:9.1f} ms  (first {t['first_call_s']:.2f} s)")
    exps = range(6, 11) if quick else range(6, 15)
    xs = jax.random.normal(jax.random.key(2), (60, 1))
    for e in exps:
        m = 2**e
        model, params = nb.models.mlp(jax.random.key(3), (m,), input_dim=1, output_dim=3, activation="relu",
                                      use_bias=True)
        p = nb.pytree.num_params(params)
        for method in ("structured", "ntvp", "jacobian"):
            if method != "structured" and p > 5e6:
                continue
            t = timed(lambda method=method, model=model, params=params: nb.empirical_ntk(model.apply, params, xs,
                                                                                    method=method), repeats=3)
            out["sweep"].append({"method": method, "width": m, "params": p, **t})
            print(f"ntk sweep m=2^{e:<2d} P={p:>9,} {method:10s} median {t['median_s'] * 1e3:9.2f} ms")
    out["sweep_exponents"] = {}
    for method in ("structured", "ntvp", "jacobian"):
        rows = [r for r in out["sweep"] if r["method"] == method and r["params"] >= 1e4]
        if len(rows) >= 2:
            out["sweep_exponents"][method] = fit_exponent([r["params"] for r in rows], [r["median_s"] for r in rows])
    return out


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


def markdown(result: dict) -> str:
    m = result["machine"]
    lines = [f"Measured on {result['date']}: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, "
             f"JAX {m['jax']} on `{m['backend']}` ({', '.join(m['devices'])}), Python {m['python']}.", ""]
    if "ntk" in result:
        lines += ["**Empirical NTK, neural-tangents' configuration** (3 hidden ReLU layers of width "
                  f"{result['ntk']['config1'][0]['width']}, input 3072, 8 outputs, 16 inputs, full (16, 16, 8, 8) "
                  "kernel, float32):", "",
                  "| method | compile + first call | run (median) | neural-tangents 0.6.5 | ratio to it |",
                  "|---|---|---|---|---|"]
        for r in result["ntk"]["config1"]:
            lines.append(f"| {r['method']} | {r['first_call_s']:.2f} s | {r['median_s'] * 1e3:.1f} ms | "
                         f"{r['neural_tangents_s'] * 1e3:.0f} ms | {r['median_s'] / r['neural_tangents_s']:.2f} |")
        exps = result["ntk"]["sweep_exponents"]
        lines += ["", "Width sweep (one hidden ReLU layer with bias, N = 60, 3 outputs): time ∝ P^a with "
                  + ", ".join(f"a = {v:.2f} ({k})" for k, v in exps.items()) + ".", ""]
    if "hessian" in result:
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
    runners = {"ntk": bench_ntk, "hessian": bench_hessian, "training": bench_training,
               "chapters": lambda quick: bench_chapters(quick, scales)}
    for name, fn in runners.items():
        if name in sections:
            result[name] = fn(args.quick)
            result.setdefault("section_dates", {})[name] = result["date"]
    if "chapters" in sections and args.book_times_from_build:
        result["chapters"] += chapter_times_from_build(Path(args.book_times_from_build))
    if args.with_make_test:
        result["make_test"] = bench_make_test()
    out.parent.mkdir(parents=True, exist_ok=True)
    from ntkbook.records import atomic_write_bytes, atomic_write_json

    atomic_write_json(out.with_suffix(".json"), result)
    atomic_write_bytes(out.with_suffix(".md"), (markdown(result) + "\n").encode())
    print(f"\nwrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
