"""Chapter 5b — optimization without linearity (Liu, Zhu & Belkin 2020, Section 5, Theorem 5.1).

* :func:`theorem_5_1_sweep` — gradient descent (the one loop of :mod:`ntkbook.training`, loss
  L(w) = (1/2n) Σᵢ (φ(f(w; xᵢ)) − yᵢ)², 1/n times the ½Σ of Theorem 5.1) for a wide network f with the
  output map φ of :data:`~ntkbook.models.output_maps.PHI` (|φ'| ≥ ρ = ½),
  tracking at every step the loss, the extreme eigenvalues of the tangent kernels K̃ of φ(f) and K of
  f, the smallest |φ'(f)| on the training set, and the relative change of K̃ and of K;
* :func:`geometric_rate` — the rate q of L(w_t) ≈ C qᵗ fitted on the tail of a loss curve;
* :func:`theorem_5_1_summary` — per run: μ, ρ, the bound (1 − ημρ²), the fitted rate and the rate
  predicted by the conditioning at the solution.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validation as V
from ..activations import Activation
from ..data.circle import circle_data
from ..eigen import extreme_eigenpairs, lambda_max, lambda_min
from ..fitting import fit_geometric_rate
from ..kernels import empirical_ntk, relative_change
from ..models.dense import mlp
from ..models.output_maps import PHI, phi_derivatives
from ..models.wrappers import nonlinear_output
from ..progress import progress
from ..random import fold_key
from ..scales import OptimizationTheorem51
from ..tables import Table, geometric_means, show
from ..training import train_traced

Array = jax.Array

TRACK_FIELDS = ("loss", "lambda_min_tilde", "lambda_max_tilde", "lambda_min_base", "rho", "change_tilde",
                "change_base")
"""The quantities :func:`theorem_5_1_sweep` tracks along every run."""


def theorem_5_1_sweep(settings: OptimizationTheorem51, key: Array, *, phi: Activation = PHI) -> dict[str, Any]:
    """Train f̃ = φ(f) (f: one hidden tanh layer, trained W and v, d = 2) by GD, across widths and seeds.

    The step is η = ``lr_factor``/(L_φ² λ_max(K(w₀))) for Theorem 5.1's loss ½Σ(φ(f) − y)² (n·η on the book's
    loss (1/2n)Σ, the same iteration): since K̃ = D K D with D = diag(φ'(f)) and |φ'| ≤ L_φ, this keeps
    η λ_max(K̃) ≤ ``lr_factor`` along the whole path as long as λ_max(K) does not grow (it is nearly
    constant for the wide linear-output f).

    Returns a dict with ``widths`` (W,), ``lr`` (W, S) (η of Theorem 5.1) and, for each of :data:`TRACK_FIELDS`,
    an array (W, S, T + 1) over widths, seeds and steps t = 0..T: ``loss`` L(w_t) = (1/2n)Σ(φ(f(w_t; xᵢ)) − yᵢ)²
    (only ratios L_t/L_0 enter the summary); ``lambda_min_tilde``,
    ``lambda_max_tilde`` of K̃(w_t); ``lambda_min_base`` of K(w_t); ``rho`` = minᵢ |φ'(f(w_t; xᵢ))|;
    ``change_tilde`` = ‖K̃(w_t) − K̃(w₀)‖_F/‖K̃(w₀)‖_F and ``change_base`` likewise for K.

    Settings: ``widths``, ``seeds``, ``num_inputs``, ``radius``, ``steps``, ``lr_factor``.
    """
    x, y = circle_data(settings.num_inputs, radius=settings.radius)
    out: dict[str, list] = {k: [] for k in (*TRACK_FIELDS, "lr")}
    for m in progress(settings.widths, desc="widths", total=len(settings.widths)):
        keys = jnp.stack([fold_key(key, m, s) for s in range(settings.seeds)])
        res = _theorem_5_1_width(keys, x, y, int(m), phi, int(settings.steps), float(settings.lr_factor))
        for k in out:
            out[k].append(np.asarray(res[k], np.float64))
    return {"widths": np.asarray(settings.widths), **{k: np.stack(v) for k, v in out.items()}}


@partial(jax.jit, static_argnames=("m", "phi", "steps"))
def _theorem_5_1_width(keys, x, y, m, phi, steps, lr_factor):
    def one(key):
        base, p0 = mlp(key, m, input_dim=x.shape[1])
        tilde = nonlinear_output(base, phi)
        k0 = empirical_ntk(base.apply, p0, x)
        d0 = phi_derivatives(phi, base.apply(p0, x))[0]
        kt0 = d0[:, None] * k0 * d0[None, :]

        def track(p):
            k = empirical_ntk(base.apply, p, x)
            d1 = phi_derivatives(phi, base.apply(p, x))[0]
            kt = d1[:, None] * k * d1[None, :]  # Eq. (27), off-diagonal form
            ev_t = extreme_eigenpairs(kt, which="BE", method="dense", vectors=False)
            return {"lambda_min_tilde": ev_t.lambda_min, "lambda_max_tilde": ev_t.lambda_max,
                    "lambda_min_base": lambda_min(k), "rho": jnp.min(jnp.abs(d1)),
                    "change_tilde": relative_change(kt, kt0), "change_base": relative_change(k, k0)}

        lr = lr_factor / (phi.lipschitz**2 * lambda_max(k0))  # for ½Σ(φ(f) − y)², Theorem 5.1
        run = train_traced(tilde.apply, p0, x, y, lr=x.shape[0] * lr, stop=steps, record_steps=np.arange(steps + 1),
                           track={"path": lambda p, xx, yy: track(p)})
        return {"loss": run["losses"], "lr": lr, **run["tracked"]["path"]}

    return jax.vmap(one)(keys)


def geometric_rate(loss: Any, *, start: float = 1e-3, stop: float = 1e-9) -> tuple[float, np.ndarray]:
    """The rate q of L_t ≈ C qᵗ: least-squares slope of log L_t on the steps where
    ``stop`` ≤ L_t / L_0 ≤ ``start`` (the tail, after the fast eigen-directions have converged and
    before float32 rounding).  Returns (q, the steps used)."""
    loss = V.numpy_array("loss", loss, ndim=1)
    rel = loss / loss[0]
    sel = (rel <= start) & (rel >= stop) & (loss > 0)
    if sel.sum() < 3:
        raise ValueError(f"loss: fewer than 3 steps with L_t/L_0 in [{stop}, {start}]; train longer")
    t = np.nonzero(sel)[0]
    return fit_geometric_rate(t, loss[sel]), t


def theorem_5_1_summary(sweep: Mapping[str, Any], *, rho: float = 0.5) -> dict[str, np.ndarray]:
    """Per run (width, seed), flattened: the constants of Theorem 5.1 and the measured rates.

    * ``mu`` = min_t λ_min(K(w_t)) of the linear-output f along the path (the μ of Theorem 5.1);
    * ``rho_path`` = min_t minᵢ |φ'(f(w_t; xᵢ))| (≥ ``rho``, the guaranteed floor);
    * ``bound_rate`` = 1 − η μ ρ² (with the floor ``rho``), ``bound_rate_path`` with ``rho_path``;
    * ``fitted_rate`` = :func:`geometric_rate` of the loss; ``local_rate`` = (1 − η λ)² with λ the
      smallest λ_min(K̃(w_t)) over the steps of the fit: no eigen-direction of the linearized dynamics
      decays more slowly, so fitted ≤ local (up to the kernel's drift inside the window);
    * ``bound_violation`` = max_{t ≥ 1} L_t / ((1 − ημρ²)ᵗ L_0) (≤ 1 when the bound holds; t = 0, where the
      ratio is 1 by definition, is left out so that the margin shows);
    * ``min_lambda_tilde`` = min_t λ_min(K̃(w_t)), ``sup_change_tilde``, ``sup_change_base``,
      ``final_loss_ratio`` = L_T/L_0.
    """
    w, s, _ = sweep["loss"].shape
    lr = sweep["lr"]
    out: dict[str, list] = {k: [] for k in ("width", "seed", "lr", "mu", "rho_path", "bound_rate",
                                            "bound_rate_path", "fitted_rate", "local_rate", "bound_violation",
                                            "min_lambda_tilde", "sup_change_tilde", "sup_change_base",
                                            "final_loss_ratio")}
    for i in range(w):
        for j in range(s):
            loss = sweep["loss"][i, j]
            eta = float(lr[i, j])
            mu = float(sweep["lambda_min_base"][i, j].min())
            rho_path = float(sweep["rho"][i, j].min())
            bound_rate = 1 - eta * mu * rho**2
            t = np.arange(loss.size)
            with np.errstate(under="ignore"):
                bound = loss[0] * bound_rate**t
            fitted, window = geometric_rate(loss)
            values = dict(width=int(sweep["widths"][i]), seed=j, lr=eta, mu=mu, rho_path=rho_path,
                          bound_rate=bound_rate, bound_rate_path=1 - eta * mu * rho_path**2, fitted_rate=fitted,
                          local_rate=(1 - eta * float(sweep["lambda_min_tilde"][i, j, window].min())) ** 2,
                          bound_violation=float(np.max(loss[1:] / np.maximum(bound[1:], np.finfo(np.float64).tiny))),
                          min_lambda_tilde=float(sweep["lambda_min_tilde"][i, j].min()),
                          sup_change_tilde=float(sweep["change_tilde"][i, j].max()),
                          sup_change_base=float(sweep["change_base"][i, j].max()),
                          final_loss_ratio=float(loss[-1] / loss[0]))
            for k, v in values.items():
                out[k].append(v)
    return {k: np.asarray(v) for k, v in out.items()}


_SUMMARY_COLUMNS = {"mu": "μ = min λ_min(K)", "rho_path": "min |φ'|", "bound_rate": "bound 1−ημρ²",
                    "fitted_rate": "fitted rate", "local_rate": "(1−ηλ_min(K̃))²", "min_lambda_tilde": "min λ_min(K̃)",
                    "sup_change_tilde": "sup ΔK̃", "sup_change_base": "sup ΔK of f"}
"""Column of :func:`theorem_5_1_summary` → its header in :func:`theorem_5_1_table`."""


def theorem_5_1_table(summ: Mapping[str, np.ndarray], settings: OptimizationTheorem51) -> Table:
    """Per width of :func:`theorem_5_1_summary`, geometric means over seeds (5 digits): μ, min |φ'| on the path,
    the guaranteed rate 1 − ημρ², the fitted and the local rate, min λ_min(K̃) and the largest kernel changes of
    f̃ and f; the caption gives the largest final loss ratio.

    Raises:
        TypeError: if ``summ`` is not a mapping or ``settings`` not a ``OptimizationTheorem51``.
        ValueError: if ``summ`` lacks a column of :func:`theorem_5_1_summary`.
    """
    V.instance("settings", settings, OptimizationTheorem51)
    V.mapping("summ", summ, ("width", *_SUMMARY_COLUMNS, "final_loss_ratio"))
    sm = geometric_means(summ, "width", tuple(_SUMMARY_COLUMNS))
    data = {"m": sm["width"], **{name: sm[c] for c, name in _SUMMARY_COLUMNS.items()}}
    return show(data, caption=f"Geometric means over {settings.seeds} seeds, {settings.steps} steps. Rates are per "
                "step; ρ = 1/2 in the bound. Largest final loss ratio L_T/L_0 = "
                f"{summ['final_loss_ratio'].max():.1e}.", digits=5)
