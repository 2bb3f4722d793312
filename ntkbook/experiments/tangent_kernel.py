"""Chapter 1 — the tangent kernel and linearity (Liu, Zhu & Belkin 2020, Section 2).

* :func:`symbolic_examples` — K(w) and H(w) of small models in sympy (Proposition 2.2);
* :func:`kernel_along_paths` — kernels of a linear-in-w model and of a tanh network along a straight
  line and along a gradient-descent path;
* :func:`norm_model` — f(w; x) = x‖w‖, whose kernel is constant on ℝ^p∖{0} although f is not linear;
* :func:`kernel_change_in_ball` — Proposition 2.3 measured: |K(w) − K(w₀)| against
  ε‖w − w₀‖(‖∇f(w₀; x)‖ + ‖∇f(w; z)‖) with ε the largest Hessian norm on the segment [w₀, w];
* :func:`level_set_inequality` — the step to Eq. (53) of App. C, corrected and as printed;
* :func:`single_point_taylor` — supp. Eq. (40) (one intermediate point) against Eq. (56) (integral form).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validation as V
from ..ball import random_direction
from ..hessian import at_input, hessian_spectral_norm
from ..kernels import empirical_ntk, relative_change
from ..linearization import linearize
from ..models import mlp, random_features
from ..progress import progress
from ..pytree import num_params, tree_axpy, tree_norm, tree_sub
from ..scales import KernelAlongPaths, Prop23
from ..tables import Table, markdown, quantities, show
from ..training import step_size_from_kernel, train

Array = jax.Array


# ---------------------------------------------------------------------------------------------
# Proposition 2.2 in sympy
# ---------------------------------------------------------------------------------------------


def symbolic_examples() -> list[dict[str, Any]]:
    """Small models f(w; x) with their tangent kernel and Hessian, computed symbolically.

    Returns one dict per model: ``name``, ``model``, ``kernel`` (sympy expressions),
    ``kernel_constant``, ``hessian_zero`` and ``differentiable_everywhere`` (False only for the norm
    model, whose gradient is undefined at w = 0).
    """
    import sympy as sp

    from ..symbolic import analyse

    w1, w2, w3 = sp.symbols("w_1 w_2 w_3", real=True)
    x, z = sp.symbols("x z", real=True)
    cases = [
        ("linear in w, non-linear features", w1 * sp.sin(x) + w2 * x**2 + w3 * sp.exp(-x**2) + sp.cos(x),
         [w1, w2, w3], True),
        ("one tanh neuron", w2 * sp.tanh(w1 * x), [w1, w2], True),
        ("product of two weights", w1 * w2 * x, [w1, w2], True),
        ("quadratic in w", (w1**2 + w2) * x, [w1, w2], True),
        ("width-2 network, fixed output", (sp.tanh(w1 * x) - sp.tanh(w2 * x)) / sp.sqrt(2), [w1, w2], True),
        ("norm of w times x", x * sp.sqrt(w1**2 + w2**2), [w1, w2], False),
    ]
    rows = []
    for name, f, params, smooth in cases:
        a = analyse(f, params, x, z)
        rows.append(dict(name=name, model=f, kernel=a.kernel, hessian=a.hessian, kernel_constant=a.kernel_constant,
                         hessian_zero=a.hessian_zero, differentiable_everywhere=smooth))
    return rows


# ---------------------------------------------------------------------------------------------
# Kernels along paths
# ---------------------------------------------------------------------------------------------


def _straight_path(params, direction, radii):
    return jax.vmap(lambda t: tree_axpy(t, direction, params))(radii)


def kernel_along_paths(settings: KernelAlongPaths, key: Array) -> dict[str, dict[str, dict[str, np.ndarray]]]:
    """Relative kernel change ‖K(w_t) − K(w₀)‖_F / ‖K(w₀)‖_F along two paths, for three models.

    Models (width m = ``settings.width``, inputs in ℝ^d, n random Gaussian inputs):

    * ``"random features"`` — wᵀφ(x) + f₀(x), linear in w;
    * ``"tanh network"`` — one hidden layer, NTK parameterization, both layers trained;
    * ``"linearized network"`` — the first-order Taylor model of the tanh network at w₀.

    Paths: a straight line w₀ + t·u (u uniform on the unit sphere, t ∈ [0, radius]) and
    ``path_steps`` steps of gradient descent on the square loss with random labels, step size
    η = n / λ_max(K(w₀)).

    Returns:
        ``result[model][path]`` with arrays ``distance`` (‖w_t − w₀‖), ``change`` (relative kernel
        change) and, for gradient descent, ``loss``.
    """
    m, n, d = settings.width, settings.num_inputs, settings.input_dim
    steps, radius = settings.path_steps, float(settings.radius)
    k_x, k_y, k_rf, k_net, k_dir = jax.random.split(key, 5)
    x = jax.random.normal(k_x, (n, d))
    y = jax.random.normal(k_y, (n,))
    rf, rf_params = random_features(k_rf, m, input_dim=d)
    net, net_params = mlp(k_net, (m,), input_dim=d, activation="tanh")
    cases = {
        "random features": (rf.apply, rf_params),
        "tanh network": (net.apply, net_params),
        "linearized network": (linearize(net.apply, net_params), net_params),
    }
    out: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    for name, (apply_fn, params) in progress(cases.items(), desc="models", total=len(cases)):
        k0 = empirical_ntk(apply_fn, params, x, method="jacobian")
        lr = step_size_from_kernel(k0, n)
        line = _straight_path(params, random_direction(k_dir, params), jnp.linspace(0.0, radius, steps + 1))
        run = train(apply_fn, params, x, y, lr=lr, stop=steps, keep_path=True, record_steps=np.arange(steps + 1))
        gd, losses = run.path, run.losses
        out[name] = {}
        for path_name, path in (("straight line", line), ("gradient descent", gd)):
            ks = jax.lax.map(lambda p, f=apply_fn: empirical_ntk(f, p, x, method="jacobian"), path)
            change = jax.vmap(lambda k, k0=k0: relative_change(k, k0))(ks)
            dist = jax.vmap(lambda p, p0=params: tree_norm(tree_sub(p, p0)))(path)
            out[name][path_name] = {"distance": np.asarray(dist), "change": np.asarray(change)}
        out[name]["gradient descent"]["loss"] = np.asarray(losses)
        out[name]["gradient descent"]["step_size"] = np.asarray(lr)
    return out


# ---------------------------------------------------------------------------------------------
# The pitfall: constant gradient norm without linearity
# ---------------------------------------------------------------------------------------------


def norm_model(key: Array, *, dim: int = 5, samples: int = 200) -> dict[str, np.ndarray]:
    """f(w; x) = x·‖w‖ on ℝ^p (p = ``dim``), evaluated at random points w ≠ 0 (float64).

    Returns per-sample arrays: ``grad_norm`` (‖∇_w f(w; 1)‖, = 1), ``kernel`` (K_{(x,z)} for x = 1.3,
    z = −0.4, = xz), ``hessian_norm`` (‖H‖ = 1/‖w‖), ``w_norm``, and ``midpoint_defect``
    (f(a) + f(b) − 2 f((a+b)/2), which a linear function keeps at 0).
    """
    dim = V.positive_int("dim", dim, minimum=2)
    samples = V.positive_int("samples", samples)
    with jax.enable_x64(True):
        k_w, k_a, k_b = jax.random.split(key, 3)
        scales = jnp.exp(jax.random.uniform(k_w, (samples, 1), jnp.float64, -3.0, 3.0))
        ws = scales * jax.random.normal(jax.random.fold_in(k_w, 1), (samples, dim), jnp.float64)

        def f(w, x):
            return x * jnp.linalg.norm(w)

        grad = jax.vmap(jax.grad(f), in_axes=(0, None))
        g1, gx, gz = grad(ws, 1.0), grad(ws, 1.3), grad(ws, -0.4)
        hess_norm = jax.vmap(lambda w: hessian_spectral_norm(f, w, args=(1.0,), method="dense").value)(ws)
        a = jax.random.normal(k_a, (samples, dim), jnp.float64)
        b = jax.random.normal(k_b, (samples, dim), jnp.float64)
        fa = jax.vmap(f, in_axes=(0, None))
        defect = fa(a, 1.0) + fa(b, 1.0) - 2 * fa(0.5 * (a + b), 1.0)
        return {
            "w_norm": np.asarray(jnp.linalg.norm(ws, axis=1)),
            "grad_norm": np.asarray(jnp.linalg.norm(g1, axis=1)),
            "kernel": np.asarray(jnp.sum(gx * gz, axis=1)),
            "hessian_norm": np.asarray(hess_norm),
            "midpoint_defect": np.asarray(defect),
        }


# ---------------------------------------------------------------------------------------------
# Proposition 2.3: small Hessian in a ball ⇒ small kernel change
# ---------------------------------------------------------------------------------------------


DIRECTIONS = ("random", "gradient", "top eigenvector")
"""The directions of the segments of :func:`kernel_change_in_ball`, in the order of their ``direction`` index."""


def kernel_change_in_ball(settings: Prop23, key: Array) -> dict[str, np.ndarray]:
    """Measure both sides of Proposition 2.3 for two-hidden-layer tanh networks.

    For each width m, radius R and direction u (uniform random; the normalized gradient ∇f(w₀; x);
    the top Hessian eigenvector of f(·; x) at w₀) the point is w = w₀ + R·u.  For the three kernel
    entries (a, b) ∈ {(x, x), (x, z), (z, z)}:

    * measured: |K_{(a,b)}(w) − K_{(a,b)}(w₀)|;
    * bound (the proof of Prop. 2.3, App. D of the paper): ε·‖w − w₀‖·(‖∇f(w₀; a)‖ + ‖∇f(w; b)‖), where
      ε = max over ``segment_points`` equally spaced points ξ of [w₀, w] of max(‖H_a(ξ)‖, ‖H_b(ξ)‖),
      each Hessian norm from :func:`ntkbook.hessian_spectral_norm` with ``operator="auto"``: ARPACK on the
      compressed operator QᵀHQ over the range of H (:mod:`ntkbook.hessian_compressed`; the same non-zero
      eigenvalues as the Hessian-vector-product Lanczos of ``operator="full"``, 20× faster at m = 1024),
      relative tolerance ``tol``.

    Returns a dict of equal-length arrays (one entry per (width, radius, direction, sample, pair)):
    ``width``, ``params``, ``radius``, ``direction`` (index into :data:`DIRECTIONS`), ``pair``
    (0, 1, 2), ``delta_k``, ``eps``, ``bound``, ``k0`` (K(w₀) of that pair), and
    ``max_residual`` (largest relative eigen-solver residual behind ε, measured on QᵀHQ).
    """
    d = settings.input_dim
    k_in, key = jax.random.split(key)
    inputs = jax.random.normal(k_in, (2, d))
    inputs = inputs / jnp.linalg.norm(inputs, axis=1, keepdims=True) * jnp.sqrt(d)
    pairs = ((0, 0), (0, 1), (1, 1))
    ts = np.linspace(0.0, 1.0, settings.segment_points)
    rows: dict[str, list] = {k: [] for k in ("width", "params", "radius", "direction", "pair", "delta_k", "eps",
                                             "bound", "k0", "max_residual")}
    for width in progress(settings.widths, desc="widths"):
        k_net, key = jax.random.split(key)
        model, w0 = mlp(k_net, (width, width), input_dim=d, activation="tanh")

        def f(p, xi, model=model):
            return model.apply(p, xi[None])[0]

        grad = jax.jit(jax.grad(f))

        def segment_max(u, radius, xi, start, model=model, w0=w0):
            """max ‖H‖ over the segment points, each eigen-solver run warm-started from the last."""
            values, residuals = [], []
            for t in ts:
                r = hessian_spectral_norm(at_input(model.apply, xi), tree_axpy(t * radius, u, w0), operator="auto",
                                          tol=settings.tol, max_iter=2000, start=start)
                start = r.eigenvector if r.eigenvector is not None else start
                values.append(r.value)
                residuals.append(r.residual)
            return max(values), max(residuals)

        k0 = empirical_ntk(model.apply, w0, inputs, method="auto")
        g0 = [grad(w0, xi) for xi in inputs]
        g0_norm = [float(tree_norm(g)) for g in g0]
        tops = [hessian_spectral_norm(at_input(model.apply, xi), w0, operator="auto", tol=settings.tol,
                                      max_iter=2000).eigenvector for xi in inputs]
        top = tops[0]
        unit_grad = jax.tree_util.tree_map(lambda a, n=g0_norm[0]: a / n, g0[0])
        for radius in settings.radii:
            for kind, direction_name in enumerate(DIRECTIONS):
                n_samples = settings.samples if direction_name == "random" else 1
                for _ in range(n_samples):
                    if direction_name == "random":
                        k_dir, key = jax.random.split(key)
                        u = random_direction(k_dir, w0)
                    else:
                        u = unit_grad if direction_name == "gradient" else top
                    w = tree_axpy(radius, u, w0)
                    dist = float(tree_norm(tree_sub(w, w0)))
                    k1 = empirical_ntk(model.apply, w, inputs, method="auto")
                    g1_norm = [float(tree_norm(grad(w, xi))) for xi in inputs]
                    seg = [segment_max(u, radius, xi, tops[i]) for i, xi in enumerate(inputs)]
                    seg_eps = [v for v, _ in seg]
                    seg_res = max(r for _, r in seg)
                    for pair_index, (a, b) in enumerate(pairs):
                        eps = max(seg_eps[a], seg_eps[b])
                        rows["width"].append(width)
                        rows["params"].append(num_params(w0))
                        rows["radius"].append(radius)
                        rows["direction"].append(kind)
                        rows["pair"].append(pair_index)
                        rows["delta_k"].append(abs(float(k1[a, b] - k0[a, b])))
                        rows["eps"].append(eps)
                        rows["bound"].append(eps * dist * (g0_norm[a] + g1_norm[b]))
                        rows["k0"].append(float(k0[a, b]))
                        rows["max_residual"].append(seg_res)
    return {k: np.asarray(v) for k, v in rows.items()}


# ---------------------------------------------------------------------------------------------
# Tables for the chapter
# ---------------------------------------------------------------------------------------------


def symbolic_table(rows: Sequence[Mapping[str, Any]]) -> Any:
    """The rows of :func:`symbolic_examples` as a Markdown table (the cells hold LaTeX: model, kernel,
    "K constant in w", "H ≡ 0"), displayed as a notebook's rich output.

    Raises:
        TypeError: if ``rows`` is not a list of dicts.
        ValueError: if a row lacks ``model``, ``kernel``, ``kernel_constant`` or ``hessian_zero``.
    """
    import sympy as sp

    V.records("rows", rows, ("model", "kernel", "kernel_constant", "hessian_zero"))
    yes_no = {True: "yes", False: "no"}
    return markdown(
        ["model $f(w;x)$", "tangent kernel $K_{(x,z)}(w)$", "$K$ constant in $w$", "$H\\equiv 0$"],
        [[f"${sp.latex(r['model'])}$", f"${sp.latex(r['kernel'])}$", yes_no[r["kernel_constant"]],
          yes_no[r["hessian_zero"]]] for r in rows],
    )


def paths_table(paths: dict[str, dict[str, dict[str, np.ndarray]]], settings: KernelAlongPaths) -> Table:
    """One row per (model, path) of :func:`kernel_along_paths`: distance reached, largest relative kernel
    change, final loss (gradient descent only); the caption names the width and number of inputs.

    Raises:
        TypeError: if ``paths`` is not a nested mapping or ``settings`` not a ``KernelAlongPaths``.
        ValueError: if a path lacks ``distance`` or ``change``.
    """
    V.instance("settings", settings, KernelAlongPaths)
    for model, by_path in V.mapping("paths", paths).items():
        for path, v in V.mapping(f"paths[{model!r}]", by_path).items():
            V.mapping(f"paths[{model!r}][{path!r}]", v, ("distance", "change"))
    rows = [{"model": model, "path": path, "distance reached": float(v["distance"][-1]),
             "max relative kernel change": float(v["change"].max()),
             "final loss": float(v["loss"][-1]) if "loss" in v else float("nan")}
            for model, by_path in paths.items() for path, v in by_path.items()]
    return show(rows, caption=f"Kernel change along two paths, width {settings.width}, "
                f"{settings.num_inputs} inputs.")


def path_kernel_changes(paths: dict[str, dict[str, dict[str, np.ndarray]]]) -> tuple[float, float]:
    """The largest relative kernel change of :func:`kernel_along_paths` over both paths: ``(linear,
    network)`` — the largest over the two models linear in w (random features and the linearized
    network), and the largest of the tanh network.

    Raises:
        TypeError: if ``paths`` is not a mapping.
        ValueError: if it lacks one of the three models or one of the two paths.
    """
    models = ("random features", "linearized network", "tanh network")
    V.mapping("paths", paths, models)
    for m in models:
        V.mapping(f"paths[{m!r}]", paths[m], ("straight line", "gradient descent"))
    linear = max(paths[m][p]["change"].max() for m in ("random features", "linearized network")
                 for p in ("straight line", "gradient descent"))
    network = max(paths["tanh network"][p]["change"].max() for p in ("straight line", "gradient descent"))
    return linear, network


def norm_model_table(pit: dict[str, np.ndarray]) -> Table:
    """Min and max over the sample points of the quantities of :func:`norm_model` (6 digits); the
    caption gives the number of points and the range of ‖w‖.

    Raises:
        TypeError: if ``pit`` is not a mapping.
        ValueError: if it lacks a column of :func:`norm_model`.
    """
    V.mapping("pit", pit, ("grad_norm", "kernel", "hessian_norm", "w_norm", "midpoint_defect"))
    columns = {
        "‖∇f(w; 1)‖": pit["grad_norm"],
        "K_(1.3, −0.4)(w)": pit["kernel"],
        "‖H(w)‖·‖w‖": pit["hessian_norm"] * pit["w_norm"],
        "|f(a)+f(b)−2f((a+b)/2)|": np.abs(pit["midpoint_defect"]),
    }
    data = {"quantity": list(columns), "min": [float(v.min()) for v in columns.values()],
            "max": [float(v.max()) for v in columns.values()]}
    return show(data, caption=f"f(w; x) = x‖w‖ at {pit['w_norm'].size} random points with ‖w‖ "
                f"from {pit['w_norm'].min():.2g} to {pit['w_norm'].max():.2g} (float64).", digits=6)


def ball_summary(ball: dict[str, np.ndarray], settings: Prop23) -> Table:
    """Per (width, radius) of :func:`kernel_change_in_ball`: largest kernel change, ε, bound, and worst
    ratio |ΔK| / bound; the caption gives the number of samples and the eigen-solver's tolerance.

    Raises:
        TypeError: if ``ball`` is not a mapping or ``settings`` not a ``Prop23``.
        ValueError: if ``ball`` lacks a column of :func:`kernel_change_in_ball`.
    """
    V.instance("settings", settings, Prop23)
    V.mapping("ball", ball, ("width", "radius", "delta_k", "eps", "bound"))
    ratio = ball["delta_k"] / ball["bound"]
    rows = []
    for m in np.unique(ball["width"]):
        for r in np.unique(ball["radius"]):
            sel = (ball["width"] == m) & (ball["radius"] == r)
            rows.append({"width m": int(m), "parameters": int(ball["params"][sel][0]), "R": float(r),
                         "max |ΔK|": float(ball["delta_k"][sel].max()),
                         "max ε on segments": float(ball["eps"][sel].max()),
                         "max bound": float(ball["bound"][sel].max()),
                         "worst |ΔK| / bound": float(ratio[sel].max())})
    return show(rows, caption=f"Proposition 2.3 on {ball['delta_k'].size} (point, kernel entry) "
                f"pairs; Hessian norms by ARPACK on the compressed operator, relative tolerance {settings.tol:g}.")


def max_eps_by_width(ball: dict[str, np.ndarray]) -> tuple[np.ndarray, list[float]]:
    """``(widths, eps)``: the widths of :func:`kernel_change_in_ball` in increasing order, and for each the
    largest ε (Hessian norm on a segment) over all its radii, directions and kernel entries.

    Raises:
        TypeError: if ``ball`` is not a mapping.
        ValueError: if it lacks ``width`` or ``eps``.
    """
    V.mapping("ball", ball, ("width", "eps"))
    widths = np.unique(ball["width"])
    return widths, [ball["eps"][ball["width"] == m].max() for m in widths]


# ---------------------------------------------------------------------------------------------
# Two steps of the appendix proofs, measured
# ---------------------------------------------------------------------------------------------


def level_set_inequality(key: Array, *, c: float = 2.0, dim: int = 4, t_max: float = 100.0,
                         points: int = 41) -> dict[str, np.ndarray]:
    """The step from Eq. (52) to Eq. (53) of App. C (proof of Prop. 2.2), on f(w) = c·aᵀw, ‖a‖ = 1.

    For w₀ random and v ≠ w₀ on the level set of w₀ (⟨a, v − w₀⟩ = 0), at t ∈ [−t_max, t_max]:

    * ``path_bound``: c|t| ≤ ‖v − w₀ − t∇f(w₀)‖ (the correct form of the path-length inequality,
      ∇f(w₀) by autodiff);
    * ``corrected``: c²t² ≤ ‖v − w₀‖² + c²t² − 2t⟨v − w₀, ∇f(w₀)⟩ (its square, expanded);
    * ``printed``: c⁴t² ≤ ‖v − w₀‖² + t² + 2t⟨v − w₀, ∇f(w₀)⟩ (as printed in the paper).

    Returns ``t`` and, for each form, ``<form>_lhs`` and ``<form>_rhs`` (float64).
    """
    c = V.positive_float("c", c)
    dim = V.positive_int("dim", dim, minimum=2)
    points = V.positive_int("points", points, minimum=2)
    with jax.enable_x64(True):
        out = _level_set_terms(key, c, t_max, dim, points)
        return {k: np.asarray(v_) for k, v_ in out.items()}


@partial(jax.jit, static_argnames=("dim", "points"))
def _level_set_terms(key: Array, c: float, t_max: float, dim: int, points: int) -> dict[str, Array]:
    """Both sides of the three forms of :func:`level_set_inequality` — one compiled program (call inside
    ``enable_x64``)."""
    k_a, k_w, k_v = jax.random.split(key, 3)
    a = jax.random.normal(k_a, (dim,), jnp.float64)
    a = a / jnp.linalg.norm(a)
    w0 = jax.random.normal(k_w, (dim,), jnp.float64)
    g = jax.random.normal(k_v, (dim,), jnp.float64)
    v = w0 + g - jnp.dot(g, a) * a

    def f(w):
        return c * jnp.dot(a, w)

    grad0 = jax.grad(f)(w0)
    t = jnp.linspace(-t_max, t_max, points)
    d = v - w0
    dd, dg = jnp.dot(d, d), jnp.dot(d, grad0)
    return {
        "t": t,
        "path_bound_lhs": c * jnp.abs(t),
        "path_bound_rhs": jnp.linalg.norm(d[None] - t[:, None] * grad0[None], axis=1),
        "corrected_lhs": c**2 * t**2,
        "corrected_rhs": dd + c**2 * t**2 - 2 * t * dg,
        "printed_lhs": c**4 * t**2,
        "printed_rhs": dd + t**2 + 2 * t * dg,
    }


_LEVEL_SET_COLUMNS = ("t", *(f"{form}_{side}" for form in ("path_bound", "corrected", "printed")
                             for side in ("lhs", "rhs")))
"""The columns of :func:`level_set_inequality`."""


def level_set_table(lsi: dict[str, np.ndarray]) -> Table:
    """The largest lhs / rhs over t of each form of :func:`level_set_inequality` (≤ 1: the inequality
    holds at every t), one column per form.

    Raises:
        TypeError: if ``lsi`` is not a mapping.
        ValueError: if it lacks a column of :func:`level_set_inequality`.
    """
    t_max = float(np.abs(V.mapping("lsi", lsi, _LEVEL_SET_COLUMNS)["t"]).max())
    return show({form: [float((lsi[f"{form}_lhs"] / lsi[f"{form}_rhs"]).max())]
                 for form in ("path_bound", "corrected", "printed")},
                caption=f"Largest lhs / rhs over t ∈ [{-t_max:g}, {t_max:g}] for f(w) = c·aᵀw "
                "(≤ 1 means the inequality holds at every t).".replace("-", "−"))


def corrected_level_set_sides(lsi: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(lhs, rhs)``: both correct forms of :func:`level_set_inequality` (the path bound c|t| and its
    square c²t²) stacked, shape ``(2·points,)`` each, so that one bound claim covers both.

    Raises:
        TypeError: if ``lsi`` is not a mapping.
        ValueError: if it lacks a column of :func:`level_set_inequality`.
    """
    V.mapping("lsi", lsi, _LEVEL_SET_COLUMNS)
    return (np.concatenate([lsi["path_bound_lhs"], lsi["corrected_lhs"]]),
            np.concatenate([lsi["path_bound_rhs"], lsi["corrected_rhs"]]))


def printed_level_set_violations(lsi: dict[str, np.ndarray]) -> dict[str, Any]:
    """Where the printed form c⁴t² ≤ ‖v−w₀‖² + t² + 2t⟨v−w₀,∇f(w₀)⟩ of :func:`level_set_inequality`
    fails: ``violated_points`` (int, the number of t where lhs > rhs), ``points`` (int) and
    ``worst_ratio`` (float, the largest lhs / rhs).

    Raises:
        TypeError: if ``lsi`` is not a mapping.
        ValueError: if it lacks a column of :func:`level_set_inequality`.
    """
    V.mapping("lsi", lsi, _LEVEL_SET_COLUMNS)
    fails = lsi["printed_lhs"] > lsi["printed_rhs"]
    return {"violated_points": int(fails.sum()), "points": int(fails.size),
            "worst_ratio": float((lsi["printed_lhs"] / lsi["printed_rhs"]).max())}


def single_point_taylor(*, points: int = 2001) -> dict[str, float]:
    """supp. Eq. (40) against Eq. (56) on f(w₁, w₂) = (1 + w₂) sin w₁, w₀ = 0, w = 2π e₁ (float64).

    supp. Eq. (40) claims ∇f(w) − ∇f(w₀) = H(ξ)(w − w₀) for one ξ on the segment; here
    ‖H(ξ)(w − w₀)‖ = 2π for every ξ while ∇f(w) − ∇f(w₀) = 0.  Returns ``gradient_change``
    (‖∇f(w) − ∇f(w₀)‖, autodiff), ``min_single_point_residual`` (min over ``points`` equally spaced ξ
    of ‖H(ξ)(w − w₀) − (∇f(w) − ∇f(w₀))‖, dense autodiff Hessians) and ``integral_residual``
    (‖∫₀¹ H(w₀ + s(w − w₀))(w − w₀) ds − (∇f(w) − ∇f(w₀))‖, 64-point Gauss–Legendre).
    """
    points = V.positive_int("points", points, minimum=2)
    with jax.enable_x64(True):
        change, hv, integral = _taylor_terms(points)
        return {
            "gradient_change": float(jnp.linalg.norm(change)),
            "min_single_point_residual": float(jnp.min(jnp.linalg.norm(hv - change[None], axis=1))),
            "integral_residual": float(jnp.linalg.norm(integral - change)),
        }


def taylor_table(mvt: dict[str, float]) -> Table:
    """The three numbers of :func:`single_point_taylor`, one row each (quantity, value).

    Raises:
        TypeError: if ``mvt`` is not a mapping.
        ValueError: if it lacks a number of :func:`single_point_taylor`.
    """
    V.mapping("mvt", mvt, ("gradient_change", "min_single_point_residual", "integral_residual"))
    return quantities(mvt, caption="supp. Eq. 40 (one ξ, over 2001 points of the segment) "
                      "against Eq. 56 (64-point Gauss–Legendre), float64.")


@partial(jax.jit, static_argnames="points")
def _taylor_terms(points: int) -> tuple[Array, Array, Array]:
    """∇f(w) − ∇f(w₀), H(ξ)(w − w₀) at ``points`` equally spaced ξ and ∫₀¹ H(ξ_s)(w − w₀) ds (64-point
    Gauss–Legendre) for :func:`single_point_taylor` — one compiled program (call inside ``enable_x64``)."""

    def f(w):
        return (1.0 + w[1]) * jnp.sin(w[0])

    w0 = jnp.zeros(2, jnp.float64)
    w = jnp.array([2 * np.pi, 0.0], jnp.float64)
    grad, hess = jax.grad(f), jax.hessian(f)
    change = grad(w) - grad(w0)
    s = jnp.linspace(0.0, 1.0, points)
    hv = jax.vmap(lambda si: hess(w0 + si * (w - w0)) @ (w - w0))(s)
    nodes, weights = np.polynomial.legendre.leggauss(64)
    s_q, w_q = (nodes + 1) / 2, weights / 2
    integral = jnp.einsum("q,qi->i", w_q, jax.vmap(lambda si: hess(w0 + si * (w - w0)) @ (w - w0))(s_q))
    return change, hv, integral
