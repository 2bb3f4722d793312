"""Speed of the foundation's two hot paths: empirical tangent kernels and matrix-free Hessian norms.

Run:  .venv/bin/python benchmarks/foundation.py [--quick] [--out benchmarks/results/foundation.json]

Measures, on whatever JAX backend is present, with compilation separated from run time
(``block_until_ready``, median of repeats):

1. ``empirical_ntk`` with ``method="jacobian"`` and ``"ntvp"`` for fully connected tanh networks of
   several widths (3 hidden layers, 16 inputs of dimension 32, 8 outputs: the (16, 16, 8, 8) kernel);
2. ``hessian_spectral_norm`` (Lanczos and ARPACK) for two-hidden-layer tanh networks from P ≈ 10³ to
   10⁷ parameters: products used, seconds, and the relative error against dense ``eigvalsh`` where
   P is small enough to form the Hessian.

Writes a JSON file with the machine description and every number, and prints a Markdown table.
Timings are measurements, never assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import ntkbook as nb


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "jax": jax.__version__,
            "backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()]}


def timed(fn, repeats: int) -> tuple[float, float]:
    """(first call incl. compilation, median of ``repeats`` further calls), seconds."""
    start = time.perf_counter()
    jax.block_until_ready(fn())
    first = time.perf_counter() - start
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        runs.append(time.perf_counter() - start)
    return first, statistics.median(runs)


def bench_ntk(widths, repeats) -> list[dict]:
    rows = []
    x = jax.random.normal(jax.random.key(1), (16, 32))
    for m in widths:
        model, params = nb.models.mlp(jax.random.key(0), (m, m, m), input_dim=32, output_dim=8, activation="tanh")
        ref = None
        for method in ("jacobian", "ntvp"):
            first, run = timed(lambda method=method, model=model, params=params: nb.empirical_ntk(
                model.apply, params, x, method=method), repeats)
            k = np.asarray(nb.empirical_ntk(model.apply, params, x, method=method))
            ref = k if ref is None else ref
            rows.append({"width": m, "params": nb.pytree.num_params(params), "method": method,
                         "compile_and_first_s": first, "run_s": run,
                         "rel_diff_vs_jacobian": float(np.abs(k - ref).max() / np.abs(ref).max())})
            print(f"ntk m={m:5d} P={rows[-1]['params']:>10,} {method:8s} first {first:7.3f}s  run {run:8.4f}s")
    return rows


def bench_hessian(widths, tol) -> list[dict]:
    rows = []
    for m in widths:
        model, params = nb.models.mlp(jax.random.key(0), (m, m), input_dim=4, activation="tanh")
        x = jax.random.normal(jax.random.key(2), (4,))

        def f(p, xi, model=model):
            return model.apply(p, xi[None])[0]

        p = nb.pytree.num_params(params)
        ref = None
        if p <= 4000:
            with jax.enable_x64(True):
                p64 = jax.tree_util.tree_map(lambda a: a.astype(jnp.float64), params)
                ref = nb.hessian.dense_spectral_norm(f, p64, x.astype(jnp.float64))
        for method in ("lanczos", "arpack"):
            if method == "arpack" and p > 2_000_000:
                continue
            nb.hessian_spectral_norm(f, params, args=(x,), tol=tol, method=method)  # compile
            start = time.perf_counter()
            res = nb.hessian_spectral_norm(f, params, args=(x,), tol=tol, method=method)
            seconds = time.perf_counter() - start
            rows.append({"width": m, "params": p, "method": method, "tol": tol, "value": res.value,
                         "products": res.products, "iterations": res.iterations, "seconds": seconds,
                         "residual": res.residual, "converged": res.converged,
                         "rel_error_vs_dense": None if ref is None else abs(res.value - ref) / ref})
            err = "" if ref is None else f" rel.err {rows[-1]['rel_error_vs_dense']:.1e}"
            print(f"hessian m={m:5d} P={p:>11,} {method:8s} products {res.products:4d} {seconds:8.3f}s "
                  f"residual {res.residual:.1e}{err}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    parser.add_argument("--out", default="benchmarks/results/foundation.json")
    args = parser.parse_args()
    ntk_widths = (64, 256) if args.quick else (64, 256, 1024, 2048)
    hess_widths = (16, 64, 256) if args.quick else (16, 32, 64, 256, 1024, 2048, 3162)
    result = {"machine": machine(), "date": time.strftime("%Y-%m-%d"),
              "ntk": bench_ntk(ntk_widths, repeats=3),
              "hessian": bench_hessian(hess_widths, tol=1e-6)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(out)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
