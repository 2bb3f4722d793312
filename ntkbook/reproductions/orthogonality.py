"""``orthogonality``: Figure 3 of Liu, Zhu & Belkin (2022, Appendix B) — mean |cos| between the gradients of
different neurons of one layer (Eq. 22) against the width (chapter 7b).

What chapter 7b and ``python -m ntkbook reproduce orthogonality`` share:

* :func:`neuron_gradient_grams` — G⁽ˡ⁾[i, j] = ⟨∇_θ α̃ᵢ⁽ˡ⁾(x), ∇_θ α̃ⱼ⁽ˡ⁾(x)⟩ for the hidden layers of an
  :class:`~ntkbook.models.dense.MLP` or a :class:`~ntkbook.models.densenet.DenseNet`, from the layer structure
  (no Jacobian is formed), :func:`cosine_matrix` and :func:`mean_abs_cos` (Eq. 22);
* :func:`clt_prediction` — E|cos θᵢⱼ| of two second-layer neurons at θ₀ from Lemma 1's Gaussian;
* :func:`piece` — one network trained by full-batch gradient descent: mean |cos θᵢⱼ| per hidden layer at θ₀ and
  after training; :data:`SWEEP` runs it over (kind, width, run) with the typed settings
  ``scales.get("orthogonality", scale)``;
* :func:`left_panel`, :func:`right_panel` — the one function per panel of the figure; :func:`figure` draws both.

Pieces are (kind, width, run): the equal-width 4-layer network ("fc", widths ``widths``) and the bottleneck
network ("bottleneck", m₁ = m₃ = ``bottleneck_outer``, m₂ = m_b in ``bottleneck_widths``), trained on 20
standardized 8×8 digit images of two classes (scikit-learn's digits replace CIFAR-10, which cannot be downloaded
here).  The JSON's table has one row per (kind, width, run, layer) with ``cos0`` and ``cos`` (mean |cos θᵢⱼ| at
θ₀ and after training), ``loss0``, ``loss``, ``lr`` and ``displacement`` ‖θ_T − θ₀‖.  The archive
``results/paper/orthogonality.json`` was written by the earlier layout of the same pieces (nested lists per
width and run, ``bottleneck_*`` keys); its numbers are the ``cos`` and ``cos0`` of this table.

Structure of the gradients.  Each weight matrix W⁽ˡ'⁾ enters only through z⁽ˡ'⁾ = W⁽ˡ'⁾c/√fan-in (c the
layer's input), so ∇_{W⁽ˡ'⁾} α̃ᵢ⁽ˡ⁾ = Jᵢ ⊗ c/√fan-in with J = ∂α̃⁽ˡ⁾/∂z⁽ˡ'⁾, and

    G⁽ˡ⁾ = Σ_{l' ≤ l} (‖c⁽ˡ'⁾‖²/fan-in_{l'}) · J_{l'} J_{l'}ᵀ        (+ J Jᵀ for a bias),

with J_l = I and J computed backwards through the network (m³ operations per layer and input).
"""

from __future__ import annotations

import math
from functools import cache, partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from .. import _validation as V
from .. import plotting
from ..activations import get_activation
from ..data import digits
from ..kernels import empirical_ntk
from ..models import MLP, mlp, shared_model
from ..models.densenet import DenseNet, densenet
from ..pytree import tree_norm, tree_sub
from ..quadrature import gaussian_expectation
from ..random import fold_key
from ..reproduce import Reproduction, register
from ..scales import Orthogonality
from ..sweep import Sweep
from ..training import step_size_from_kernel, train

Array = jax.Array
HIGHEST = jax.lax.Precision.HIGHEST
KINDS = ("fc", "bottleneck", "densenet")


# ---------------------------------------------------------------------------------------------
# Gram matrices of neuron gradients, Eq. 22
# ---------------------------------------------------------------------------------------------


def neuron_gradient_grams(model: MLP | DenseNet, params: Any, x: Any, neurons: int | None = None,
                          layers: tuple[int, ...] | None = None) -> list[Array]:
    """G⁽ˡ⁾ for the hidden layers l: inner products of the gradients (with respect to all parameters) of the
    pre-activations α̃ᵢ⁽ˡ⁾(x) (see the module docstring).  Usable inside ``jit`` (``neurons``, ``layers``
    static).

    Args:
        model, params: an :class:`~ntkbook.models.dense.MLP` or :class:`~ntkbook.models.densenet.DenseNet`.
        x: inputs (n, d).
        neurons: only the first ``neurons`` neurons of each layer (all when None or larger than the layer).
            Neurons of a layer are exchangeable (i.i.d. rows at initialization), so the pairs among the first
            k are a uniform sample of all pairs; the cost falls from m³ to k·m² per layer and input.
        layers: the hidden layers l (1-based) whose Gram matrices are wanted (all when None); the others are
            not computed (the Gram of a wide first layer alone costs m₁³ per input).

    Returns:
        One array (n, k_l, k_l) per requested hidden layer (in the order of ``layers``), k_l = min(m_l, neurons).
    """
    if not isinstance(model, (MLP, DenseNet)):
        raise TypeError(f"model must be an MLP or a DenseNet, got {type(model).__name__}")
    x = V.array("x", x, ndim=2)
    if neurons is not None:
        neurons = V.positive_int("neurons", neurons)
    if layers is None:
        layers = tuple(range(1, model.depth + 1))
    else:
        if not isinstance(layers, (tuple, list)) or not layers:
            raise TypeError(f"layers must be a non-empty tuple of hidden-layer indices, got {layers!r}")
        layers = tuple(V.positive_int("layers", lay) for lay in layers)
        if max(layers) > model.depth:
            raise ValueError(f"layers must lie in 1..{model.depth} (the hidden layers), got {layers!r}")
    return list(_grams(model, params, x, neurons, layers))


@partial(jax.jit, static_argnames=("neurons", "layers"))
def _grams(model, params, x, neurons, layers):
    if isinstance(model, DenseNet):
        return _densenet_grams(model, params, x, neurons, layers)
    fp = model.forward(params, x)
    out = {}
    for layer in sorted({lay - 1 for lay in layers}):
        m = model.widths[layer]
        k = m if neurons is None else min(m, neurons)
        jac = jnp.broadcast_to(jnp.eye(m, dtype=x.dtype)[:k], (x.shape[0], k, m))
        gram = jnp.zeros((x.shape[0], k, k), x.dtype)
        for lp in range(layer, -1, -1):  # weight matrix W⁽ˡᵖ⁺¹⁾ reads post[lp]
            c = fp.post[lp]
            jj = jnp.matmul(jac, jnp.swapaxes(jac, 1, 2), precision=HIGHEST)
            factor = jnp.sum(c * c, axis=1) / c.shape[1] + (1.0 if model.use_bias else 0.0)
            gram = gram + jj * factor[:, None, None]
            if lp > 0:
                w = params["layers"][lp]["W"]
                jac = jnp.matmul(jac, w, precision=HIGHEST) / math.sqrt(w.shape[1])
                jac = jac * model.activations[lp - 1].derivative(fp.pre[lp - 1])[:, None, :]
        out[layer + 1] = gram
    return [out[lay] for lay in layers]


def _densenet_grams(model: DenseNet, params, x, neurons, layers):
    fp = model.forward(params, x)
    n = x.shape[0]
    out = {}
    for layer in sorted(set(layers)):
        m = model.widths[layer - 1]
        k = m if neurons is None else min(m, neurons)
        jacs = {layer: jnp.broadcast_to(jnp.eye(m, dtype=x.dtype)[:k], (n, k, m))}
        for lp in range(layer - 1, 0, -1):  # ∂α̃⁽ˡ⁾/∂z⁽ˡᵖ⁾ through every later layer that reads α⁽ˡᵖ⁾
            acc = 0.0
            for consumer in range(lp + 1, layer + 1):
                w = params["layers"][consumer - 1]["W"][:, model.column_slice(consumer, lp)]
                acc = acc + jnp.matmul(jacs[consumer], w, precision=HIGHEST) / math.sqrt(model.fan_in(consumer))
            jacs[lp] = acc * model.activation.derivative(fp.pre[lp - 1])[:, None, :]
        gram = 0.0
        for lp in range(1, layer + 1):
            c = fp.concat[lp - 1]
            jj = jnp.matmul(jacs[lp], jnp.swapaxes(jacs[lp], 1, 2), precision=HIGHEST)
            gram = gram + jj * (jnp.sum(c * c, axis=1) / c.shape[1])[:, None, None]
        out[layer] = gram
    return [out[lay] for lay in layers]


def cosine_matrix(gram: Any) -> Array:
    """cos θᵢⱼ = Gᵢⱼ/√(GᵢᵢGⱼⱼ) (Eq. 22), same shape as ``gram`` (…, m, m)."""
    d = jnp.sqrt(jnp.diagonal(gram, axis1=-2, axis2=-1))
    return gram / d[..., :, None] / d[..., None, :]


def mean_abs_cos(gram: Any) -> Array:
    """Mean of |cos θᵢⱼ| over the pairs i ≠ j, for each input: shape (n,) for a (n, m, m) Gram (Eq. 22).

    A layer with one neuron has no pairs: the result is nan.
    """
    c = jnp.abs(cosine_matrix(gram))
    m = c.shape[-1]
    if m < 2:
        return jnp.full(c.shape[:-2], jnp.nan, c.dtype)
    off = jnp.sum(c, axis=(-2, -1)) - jnp.trace(c, axis1=-2, axis2=-1)
    return off / (m * (m - 1))


@cache
def _gaussian_moments(activation: str) -> tuple[float, float, float]:
    """(E[σ'(z)⁴], E[σ(z)²], E[σ'(z)²]) for z ~ N(0, 1), by Gauss–Hermite quadrature (float64)."""
    act = get_activation(activation)
    return (gaussian_expectation(lambda z: act.numpy(z, 1) ** 4), gaussian_expectation(lambda z: act.numpy(z) ** 2),
            gaussian_expectation(lambda z: act.numpy(z, 1) ** 2))


def clt_prediction(width: Any = None, *, extra_inputs: float = 0.0, activation: str = "tanh") -> Any:
    """E|cos θᵢⱼ| between two second-layer neurons at initialization, to leading order (inputs with ‖x‖² = d).

    From Lemma 1 / Eq. (23): for i ≠ j only the shared parameters θ⁽¹⁾ contribute,
    Gᵢⱼ = (1/fan)Σₖ Wᵢₖ Wⱼₖ σ'(zₖ)² with fan = m + e the fan-in of layer 2 (e = ``extra_inputs``, the input
    dimension d for the DenseNet, whose second layer also reads x; 0 for the network of Eq. 8), so
    Gᵢⱼ ≈ N(0, m E[σ'⁴]/fan²), while Gᵢᵢ → (m E[σ²] + e + m E[σ'²])/fan (z ~ N(0, 1)); E|N(0, s²)| = s√(2/π).
    Hence E|cos| ≈ √(2/π)·√(m E[σ'⁴]) / (m(E[σ²] + E[σ'²]) + e), a float (or an array for an array of widths).

    Without ``width``: the constant c = lim √m·E|cos| = √(2/π)·√E[σ'⁴] / (E[σ²] + E[σ'²]).
    """
    e4, e_sig2, e_d2 = _gaussian_moments(activation)
    if width is None:
        return math.sqrt(2 / math.pi) * math.sqrt(e4) / (e_sig2 + e_d2)
    m = np.asarray(V.numpy_array("width", width, integers=True), np.float64)
    if np.any(m < 1):
        raise ValueError(f"width must be ≥ 1, got {width!r}")
    out = math.sqrt(2 / math.pi) * np.sqrt(m * e4) / (m * (e_sig2 + e_d2) + float(extra_inputs))
    return float(out) if out.ndim == 0 else out


# ---------------------------------------------------------------------------------------------
# The piece: one network of Figure 3 (or of Appendix E), trained by full-batch gradient descent
# ---------------------------------------------------------------------------------------------


def network(key: Array, kind: str, width: int, input_dim: int, *, depth: int = 3,
            outer: int | None = None) -> tuple[Any, Any]:
    """The networks of Figure 3 and Appendix E (tanh, NTK parameterization, N(0, 1) weights, float32):
    ``"fc"`` — ``depth`` hidden layers of width m; ``"bottleneck"`` — (m₁, m_b, m₃) = (``outer``, width,
    ``outer``); ``"densenet"`` — ``depth`` layers of m new neurons each (Eq. 37).  One model object per
    architecture (``ntkbook.models.shared_model``: one compiled training loop)."""
    V.choice("kind", kind, KINDS)
    width = V.positive_int("width", width)
    if kind == "bottleneck":
        outer = V.positive_int("outer", outer)
    if kind == "densenet":
        model, params = densenet(key, (width,) * depth, input_dim=input_dim)
    else:
        widths = (width,) * depth if kind == "fc" else (outer, width, outer)
        model, params = mlp(key, widths, input_dim=input_dim, activation="tanh")
    return shared_model(model), params


@jax.jit
def _layer_mean_abs_cos(grams):
    """The mean over inputs of :func:`mean_abs_cos` for each layer's Gram, in one compiled call."""
    return [jnp.mean(mean_abs_cos(g)) for g in grams]


def piece(key: Array, kind: str, width: int, x: Any, y: Any, *, neurons: int, steps: int, lr_factor: float = 1.0,
          depth: int = 3, outer: int | None = None) -> dict[str, Any]:
    """One network of Figure 3: mean |cos θᵢⱼ| (Eq. 22) per hidden layer over the pairs of the first ``neurons``
    neurons and all inputs, at θ₀ and after ``steps`` steps of full-batch gradient descent on the square loss
    (1/2n)Σ(f − y)² with η = ``lr_factor``·n/λ_max(K(θ₀)).

    Returns columns (one row per hidden layer): ``layer``, ``cos0``, ``cos``, and ``loss0``, ``loss``, ``lr``,
    ``displacement`` ‖θ_T − θ₀‖ (the same on every row).
    """
    model, params = network(key, kind, width, x.shape[1], depth=depth, outer=outer)
    g0 = neuron_gradient_grams(model, params, x, neurons)
    kernel = np.asarray(empirical_ntk(model.apply, params, x), np.float64)
    lr = step_size_from_kernel(kernel, x.shape[0], factor=lr_factor)
    run = train(model.apply, params, x, y, lr=lr, stop=steps, record_steps=[0])
    gt = neuron_gradient_grams(model, run.params, x, neurons)
    return {"layer": list(range(1, len(g0) + 1)), "cos0": [float(v) for v in _layer_mean_abs_cos(g0)],
            "cos": [float(v) for v in _layer_mean_abs_cos(gt)], "loss0": float(run.losses[0]),
            "loss": float(run.loss), "lr": lr, "displacement": float(tree_norm(tree_sub(run.params, params)))}


def _pieces(s: Orthogonality) -> list[dict[str, Any]]:
    return [{"kind": kind, "width": int(m), "run": r}
            for kind, widths in (("fc", s.widths), ("bottleneck", s.bottleneck_widths))
            for m in widths for r in range(s.runs)]


def _compute(coords: dict[str, Any], s: Orthogonality, _key: Array) -> dict[str, Any]:
    # The archive's keys (results/paper/orthogonality.json): fold_in(key(seed), kind, width, run), not the
    # sweep's piece key, so that every archived number is what this piece computes.
    key = fold_key(jax.random.key(s.seed), KINDS.index(coords["kind"]), coords["width"], coords["run"])
    x, y = digits.two_classes(tuple(s.classes), s.n_per_class, seed=s.data_seed)
    return piece(key, coords["kind"], coords["width"], x, y, neurons=s.sampled_neurons, steps=s.gd_steps,
                 lr_factor=s.lr_factor, depth=s.depth, outer=s.bottleneck_outer)


SWEEP = Sweep("orthogonality", _pieces, _compute, columns={
    "layer": "hidden layer l", "cos0": "mean |cos θᵢⱼ| of layer l at θ₀", "cos": "the same after training",
    "loss0": "square loss at θ₀", "loss": "square loss after training", "lr": "step size η",
    "displacement": "‖θ_T − θ₀‖"})
"""Figure 3 over (kind, width, run): the chapter runs ``nb.sweep.run(SWEEP, scales.get("orthogonality", scale))``."""


# ---------------------------------------------------------------------------------------------
# The figure: one function per panel
# ---------------------------------------------------------------------------------------------


def left_panel(ax: Any, rows: pd.DataFrame, *, title: str | None = None, ylabel: bool = True) -> None:
    """Figure 3 (left): mean |cos θᵢⱼ| after training against the width m of the equal-width network, layers 2 and
    3 (layer 1 is exactly orthogonal, Remark 4; points: runs, power-law fits, slope −1/2 dashed), and Lemma 1's
    second-layer prediction c/√m dotted.  ``rows``: columns ``width``, ``layer``, ``cos`` (a piece's rows)."""
    for layer, color in zip((2, 3), plotting.PALETTE[1:], strict=False):
        sel = rows[rows.layer == layer]
        plotting.power_law(ax, sel.width, sel.cos, label=f"layer {layer}", color=color,
                           reference_slope=-0.5 if layer == 2 else None)
    widths = np.unique(rows.width).astype(float)
    ax.plot(widths, clt_prediction() / np.sqrt(widths), ":", color=plotting.PALETTE[1])
    if title is not None:
        ax.set_title(title)
    ax.set_xlabel("width $m$")
    if ylabel:
        ax.set_ylabel(r"mean $|\cos\theta_{ij}|$")
    ax.legend(fontsize=7)


def right_panel(ax: Any, rows: pd.DataFrame, *, outer: int) -> None:
    """Figure 3 (right): the bottleneck network (m₁ = m₃ = ``outer``, m₂ = m_b) — mean |cos θᵢⱼ| of layer 3
    (assembled from the m_b bottleneck neurons, slope −1/2 dashed) and of layer 2 (the bottleneck, assembled from
    the m₁ neurons of layer 1) against m_b, with the level c/√m₁ dotted.  ``rows`` as for :func:`left_panel`."""
    for layer, color, label in ((3, plotting.PALETTE[2], "layer 3 (assembled from the bottleneck)"),
                                (2, plotting.PALETTE[1], "layer 2 (the bottleneck)")):
        sel = rows[rows.layer == layer]
        plotting.power_law(ax, sel.width, sel.cos, label=label, color=color,
                           reference_slope=-0.5 if layer == 3 else None)
    ax.axhline(clt_prediction() / math.sqrt(outer), color=plotting.PALETTE[1], linestyle=":")
    ax.set_xlabel("bottleneck width $m_b$")
    ax.set_ylabel(r"mean $|\cos\theta_{ij}|$")
    ax.legend(fontsize=7)


def figure(table: pd.DataFrame, settings: Orthogonality) -> Any:
    """Both panels of Figure 3 from :data:`SWEEP`'s table."""
    fig, (ax_l, ax_r) = plotting.subplots(2, width=5.0, height=4.0)
    left_panel(ax_l, table[table.kind == "fc"], title="4-layer network, equal widths")
    right_panel(ax_r, table[table.kind == "bottleneck"], outer=settings.bottleneck_outer)
    ax_r.set_title(f"bottleneck network, m₁ = m₃ = {settings.bottleneck_outer}")
    fig.tight_layout()
    return fig


register(Reproduction(
    name="orthogonality",
    experiment="orthogonality",
    description="mean |cos| of neuron gradients vs width, equal-width and bottleneck networks "
                "(Liu et al. 2022, App. B, Fig. 3)",
    sweep=SWEEP,
    figure=figure,
    summary=lambda table, settings: {"clt_constant_layer2": clt_prediction()},
))
