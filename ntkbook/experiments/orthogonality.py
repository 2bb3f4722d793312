"""Chapter 7, second half — deep networks as multi-level assemblies (Liu, Zhu & Belkin 2022, Section 3,
Appendices B, D, E).

The network of Eq. (8) (:func:`ntkbook.models.dense.mlp`, tanh, NTK parameterization, linear output layer) and the
DenseNet of Eq. (37) (:mod:`ntkbook.models.densenet`):

* :func:`neuron_gradient_grams` — G⁽ˡ⁾[i, j] = ⟨∇_θ α̃ᵢ⁽ˡ⁾(x), ∇_θ α̃ⱼ⁽ˡ⁾(x)⟩ for every hidden layer, from the
  layer structure (no Jacobian is formed), and :func:`mean_abs_cos`, the orthogonality metric of Eq. (22);
* :func:`orthogonality_piece` / :func:`orthogonality_sweep` — Figure 3 of Appendix B: mean |cos θᵢⱼ| against
  the width, at initialization and after full-batch gradient descent, for the equal-width network (left), the
  bottleneck network (right) and the DenseNet (Appendix E), drawn by :func:`figure_3_left_panel` and
  :func:`figure_3_right_panel` (the chapter and the command line);
* :func:`clt_prediction` — the m → ∞ constant of √m·E|cos θᵢⱼ| for the second layer (Lemma 1's Gaussian);
* :func:`turn_piece` — Theorem 2: how far the gradient direction of a post-activation neuron turns within the
  ball B(θ₀, R);
* :func:`quadratic_term_piece` — Theorem 4: the worst-case quadratic term of a next-layer pre-activation
  (and of the output) with the next layer's weights fixed, against βR² max|w|/(2√m_l), with β at θ₀ and over
  the segment [θ₀, θ₀ + Δ] on which the remainder's ξ lies (:func:`segment_profile`, :func:`grid_resolution`),
  and Appendix D's cross term when those weights move too (:func:`cross_term`, Eq. 36);
* :func:`densenet_hessian_piece` — the output Hessian norm of the DenseNet across widths.

Structure of the gradients.  Each weight matrix W⁽ˡ'⁾ enters only through z⁽ˡ'⁾ = W⁽ˡ'⁾c/√fan-in (c the
layer's input), so ∇_{W⁽ˡ'⁾} α̃ᵢ⁽ˡ⁾ = Jᵢ ⊗ c/√fan-in with J = ∂α̃⁽ˡ⁾/∂z⁽ˡ'⁾, and

    G⁽ˡ⁾ = Σ_{l' ≤ l} (‖c⁽ˡ'⁾‖²/fan-in_{l'}) · J_{l'} J_{l'}ᵀ        (+ J Jᵀ for a bias),

with J_l = I and J computed backwards through the network (m³ operations per layer and input).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validation as V
from .. import plotting
from ..activations import get_activation
from ..data import digits as digits_data
from ..data import gaussian as gaussian_data
from ..eigen import lambda_max, lanczos_fixed
from ..hessian import hessian_spectral_norm, hvp
from ..kernels import empirical_ntk
from ..models import MLP, mlp, shared_model
from ..models.densenet import DenseNet, densenet
from ..progress import progress
from ..pytree import tree_dot, tree_norm, tree_normal_like, tree_scale, tree_sub
from ..quadrature import gaussian_expectation
from ..scales import Densenet, FrameLimit, NeuronGeometry, Orthogonality, OrthogonalityGaussian
from ..sweep import Sweep, grid
from ..training import step_size_from_kernel, train

Array = jax.Array
OrthogonalitySettings = Orthogonality | OrthogonalityGaussian | Densenet | NeuronGeometry
"""The settings that describe this chapter's data and networks (``dataset``, widths, runs, GD steps)."""
PyTree = Any
HIGHEST = jax.lax.Precision.HIGHEST
KINDS = ("fc", "bottleneck", "densenet")
DATASETS = ("digits", "gaussian")


# ---------------------------------------------------------------------------------------------
# Data and networks
# ---------------------------------------------------------------------------------------------


def load_data(settings: OrthogonalitySettings, dtype: Any = jnp.float32) -> tuple[Array, Array]:
    """The training set of Appendix B: 20 inputs of two classes with labels ±1 (‖x‖ = √d).

    ``settings.dataset``: ``"digits"`` (:func:`ntkbook.data.digits.two_classes` with ``classes`` and
    ``n_per_class``, images chosen with ``data_seed``) or ``"gaussian"`` (:func:`ntkbook.data.gaussian.two_classes`
    with n = 2·``n_per_class`` points in d = 64 dimensions, key ``data_seed``).
    """
    dataset = V.choice("dataset", settings.dataset, DATASETS)
    n_per_class = int(settings.n_per_class)
    if dataset == "digits":
        return digits_data.two_classes(tuple(settings.classes), n_per_class, seed=int(settings.data_seed),
                                       dtype=dtype)
    return gaussian_data.two_classes(jax.random.key(int(settings.data_seed)), 2 * n_per_class,
                                     digits_data.INPUT_DIM, dtype=dtype)


def make_network(kind: str, width: int, run: int, settings: OrthogonalitySettings, input_dim: int,
                 dtype: Any = jnp.float32) -> tuple[Any, PyTree]:
    """The networks of Figure 3 and Appendix E, all tanh, NTK parameterization, N(0, 1) weights.

    * ``"fc"``: ``depth`` hidden layers of equal width m (with the output layer, the "4-layer" network for
      depth 3);
    * ``"bottleneck"``: three hidden layers (m₁, m_b, m₃) = (``bottleneck_outer``, width, ``bottleneck_outer``);
    * ``"densenet"``: ``depth`` layers of m new neurons each (Eq. 37).

    The key is ``fold_in(fold_in(fold_in(key(seed), kind), width), run)``.
    """
    V.choice("kind", kind, KINDS)
    width = V.positive_int("width", width)
    key = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(jax.random.key(int(settings.seed)),
                                                                   KINDS.index(kind)), width), run)
    depth = int(settings.depth)
    if kind == "densenet":
        model, params = densenet(key, (width,) * depth, input_dim=input_dim, dtype=dtype)
    else:
        widths = (width,) * depth if kind == "fc" else (int(settings.bottleneck_outer), width,
                                                        int(settings.bottleneck_outer))
        model, params = mlp(key, widths, input_dim=input_dim, activation="tanh", dtype=dtype)
    return shared_model(model), params  # one compiled training loop per architecture



# ---------------------------------------------------------------------------------------------
# Gram matrices of neuron gradients
# ---------------------------------------------------------------------------------------------


def neuron_gradient_grams(model: MLP | DenseNet, params: PyTree, x: Any, neurons: int | None = None,
                          layers: tuple[int, ...] | None = None) -> list[Array]:
    """G⁽ˡ⁾ for every hidden layer l = 1..L: inner products of the gradients (with respect to all parameters)
    of the pre-activations α̃ᵢ⁽ˡ⁾(x) (see the module docstring).

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
    V.pytree_of_arrays("params", params)
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
        grams = _densenet_grams(model, params, x, neurons, layers)
        return [grams[lay] for lay in layers]
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
    return out


def cosine_matrix(gram: Any) -> Array:
    """cos θᵢⱼ = Gᵢⱼ/√(GᵢᵢGⱼⱼ) (Eq. 22), same shape as ``gram`` (…, m, m)."""
    gram = V.array("gram", gram, ndim=(2, 3))
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


def frame_constant(gram: Any) -> Array:
    """λ_max of the cosine matrix, per input: the constant in Σᵢ((θ−θ₀)ᵀnᵢ)² ≤ λ_max‖θ−θ₀‖² (Eq. 18 assumes 1)."""
    return lambda_max(cosine_matrix(gram))


def _frame_limit_piece(coords: Mapping[str, Any], settings: FrameLimit, key: Array) -> dict[str, float]:
    x, _ = digits_data.two_classes()
    model, params = mlp(key, (int(coords["lower_width"]), int(settings.upper_width)), input_dim=x.shape[1],
                        activation="tanh")
    gram = neuron_gradient_grams(model, params, x[:1], layers=(2,))[0][0]  # layer 1's m₁ × m₁ Gram unused
    return {"λ_max(C)": float(frame_constant(gram))}


#: Eq. 18 in the paper's sequential limit — the frame constant λ_max(C) of the m₂ = ``upper_width``
#: normals of layer 2 of a two-hidden-layer tanh network (widths (m₁, m₂), first digit image), for
#: m₁ in ``lower_widths`` and ``runs`` initializations.  C = aI + WDWᵀ/m₁ normalized (W the m₂ × m₁
#: second-layer weights, D = diag σ'(z)²): a Gram matrix whose spread is of order √(m₂/m₁), so
#: λ_max(C) → 1 as m₁ → ∞ at fixed m₂, while for m₁ = m₂ it stays ≈ 3.
FRAME_LIMIT = Sweep(
    "frame_limit",
    lambda s: grid(lower_width=s.lower_widths, run=range(int(s.runs))),
    _frame_limit_piece,
    columns={"λ_max(C)": "largest eigenvalue of the cosine matrix of the layer-2 normals (Eq. 18 takes 1)"},
)


@cache
def _gaussian_moments(activation: str) -> tuple[float, float, float]:
    """(E[σ'(z)⁴], E[σ(z)²], E[σ'(z)²]) for z ~ N(0, 1), by Gauss–Hermite quadrature (float64)."""
    act = get_activation(activation)
    return (gaussian_expectation(lambda z: act.numpy(z, 1) ** 4), gaussian_expectation(lambda z: act.numpy(z) ** 2),
            gaussian_expectation(lambda z: act.numpy(z, 1) ** 2))


def clt_prediction(width: int | None = None, *, extra_inputs: float = 0.0, activation: str = "tanh") -> float:
    """E|cos θᵢⱼ| between two second-layer neurons at initialization, to leading order (inputs with ‖x‖² = d).

    From Lemma 1 / Eq. (23): for i ≠ j only the shared parameters θ⁽¹⁾ contribute,
    Gᵢⱼ = (1/fan)Σₖ Wᵢₖ Wⱼₖ σ'(zₖ)² with fan = m + e the fan-in of layer 2 (e = ``extra_inputs``, the input
    dimension d for the DenseNet, whose second layer also reads x; 0 for the network of Eq. 8), so
    Gᵢⱼ ≈ N(0, m E[σ'⁴]/fan²), while Gᵢᵢ → (m E[σ²] + e + m E[σ'²])/fan (z ~ N(0, 1)); E|N(0, s²)| = s√(2/π).
    Hence E|cos| ≈ √(2/π)·√(m E[σ'⁴]) / (m(E[σ²] + E[σ'²]) + e).

    Without ``width``: the constant c = lim √m·E|cos| = √(2/π)·√E[σ'⁴] / (E[σ²] + E[σ'²]).
    """
    e4, e_sig2, e_d2 = _gaussian_moments(activation)
    if width is None:
        return math.sqrt(2 / math.pi) * math.sqrt(e4) / (e_sig2 + e_d2)
    m = V.positive_int("width", width)
    return math.sqrt(2 / math.pi) * math.sqrt(m * e4) / (m * (e_sig2 + e_d2) + float(extra_inputs))


def clt_predictions(widths: Any, *, extra_inputs: float = 0.0, activation: str = "tanh") -> np.ndarray:
    """:func:`clt_prediction` at each width of ``widths`` (shape (W,)): E|cos θᵢⱼ| of two second-layer
    neurons at θ₀ to leading order, fan-in m + ``extra_inputs``; returns shape (W,), float64.

    Raises:
        TypeError, ValueError: if ``widths`` is not a non-empty one-dimensional array of integers ≥ 1 (and
            as :func:`clt_prediction` for the other arguments).
    """
    arr = np.asarray(widths)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"widths must be a non-empty one-dimensional array, got shape {arr.shape}")
    return np.array([clt_prediction(m, extra_inputs=extra_inputs, activation=activation)
                     for m in V.int_tuple("widths", arr.tolist())])


# ---------------------------------------------------------------------------------------------
# Full-batch gradient descent (Appendix B)
# ---------------------------------------------------------------------------------------------


def _train(model: Any, params: PyTree, x: Array, y: Array, lr: float, steps: int) -> tuple[PyTree, float, float]:
    """``steps`` full-batch GD steps (:func:`ntkbook.training.train`, square loss (1/2n)Σ(f(xᵢ) − yᵢ)²), keeping
    the last iterate only.  Returns ``(params_T, L(θ₀), L(θ_T))``."""
    run = train(model.apply, params, x, y, lr=lr, stop=steps, record_steps=[0])
    return run.params, float(run.losses[0]), float(run.loss)


@jax.jit
def _tree_dist_jit(a: PyTree, b: PyTree) -> Array:
    return jnp.sqrt(sum(jnp.sum((u - v) ** 2) for u, v in zip(jax.tree_util.tree_leaves(a),
                                                              jax.tree_util.tree_leaves(b), strict=True)))


def _tree_dist(a: PyTree, b: PyTree) -> float:
    return float(_tree_dist_jit(a, b))


@jax.jit
def _layer_mean_abs_cos(grams: list[Array]) -> list[Array]:
    """The mean over inputs of :func:`mean_abs_cos` for each layer's Gram (one compiled call per network shape
    instead of a dozen small eager operations per layer)."""
    return [jnp.mean(mean_abs_cos(g)) for g in grams]


# ---------------------------------------------------------------------------------------------
# Figure 3: orthogonality against width
# ---------------------------------------------------------------------------------------------


def orthogonality_pieces(settings: OrthogonalitySettings, kinds: tuple[str, ...] = ("fc", "bottleneck")
                         ) -> list[dict[str, Any]]:
    """Independent pieces (kind, width, run): ``widths`` for "fc" and "densenet", ``bottleneck_widths`` for
    "bottleneck", ``runs`` each."""
    out = []
    for kind in kinds:
        V.choice("kind", kind, KINDS)
        widths = settings.bottleneck_widths if kind == "bottleneck" else settings.widths
        out += [{"kind": kind, "width": int(m), "run": r} for m in widths for r in range(int(settings.runs))]
    return out


def orthogonality_piece(piece: Mapping[str, Any], settings: OrthogonalitySettings) -> dict[str, Any]:
    """One network of Figure 3: mean |cos θᵢⱼ| (Eq. 22) per hidden layer, averaged over the pairs i ≠ j of the
    first ``sampled_neurons`` neurons (all pairs when the layer is not wider; see :func:`neuron_gradient_grams`)
    and over all training inputs, at initialization and after ``gd_steps`` steps of full-batch gradient descent
    on the square loss with step η = ``lr_factor``·n/λ_max(K(θ₀)) (:func:`ntkbook.training.step_size_from_kernel`).

    Returns per-layer lists ``mean_abs_cos_init``, ``mean_abs_cos`` (trained), and ``loss_init``,
    ``loss_final``, ``lr``, ``displacement`` ‖θ_T − θ₀‖.
    """
    x, y = load_data(settings)
    model, params = make_network(piece["kind"], piece["width"], piece["run"], settings, x.shape[1])
    k = int(settings.sampled_neurons)
    g0 = neuron_gradient_grams(model, params, x, k)
    # "auto": the structured kernel for the MLPs; for the DenseNet the Jacobian contraction while the
    # Jacobians fit in memory (one reverse pass per input, far cheaper to compile than NTK-vector products)
    kernel = np.asarray(empirical_ntk(model.apply, params, x), np.float64)
    lr = step_size_from_kernel(kernel, x.shape[0], factor=float(settings.lr_factor))
    params_t, loss0, loss_t = _train(model, params, x, y, lr, int(settings.gd_steps))
    gt = neuron_gradient_grams(model, params_t, x, k)
    return {
        "mean_abs_cos_init": [float(v) for v in _layer_mean_abs_cos(g0)],
        "mean_abs_cos": [float(v) for v in _layer_mean_abs_cos(gt)],
        "loss_init": loss0,
        "loss_final": loss_t,
        "lr": lr,
        "displacement": _tree_dist(params, params_t),
    }


def assemble_orthogonality(settings: OrthogonalitySettings, pieces: list[Mapping[str, Any]],
                           results: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Figure 3 as nested lists [[per run] per width] (and [[[per layer] per run] per width]).

    ``mean_abs_cos``: the equal-width network after training, pairs pooled over its hidden layers (every layer
    has m neurons, so this is the mean of the per-layer values; layer 1 contributes exact zeros, Remark 4).
    ``bottleneck_mean_abs_cos``: the bottleneck network after training, neurons of the bottleneck layer itself
    (layer 2), the metric of the paper's Figure 3 (right) — by Lemma 1 set by m_{l−1} = m₁, which is fixed;
    ``bottleneck_assembled_mean_abs_cos``: the layer that *assembles* the bottleneck (layer 3, whose sub-models
    are the m_b bottleneck neurons, so that m_{l−1} = m_b in Lemma 1).  Every layer is in
    ``bottleneck_mean_abs_cos_by_layer``.
    """
    out: dict[str, Any] = {"dataset": settings.dataset}
    runs = int(settings.runs)
    for kind, prefix in (("fc", ""), ("bottleneck", "bottleneck_"), ("densenet", "densenet_")):
        sel = [(p, r) for p, r in zip(pieces, results, strict=True) if p["kind"] == kind]
        if not sel:
            continue
        widths = sorted({int(p["width"]) for p, _ in sel})
        table = {(int(p["width"]), int(p["run"])): r for p, r in sel}

        def grid(field: str, layer: int | None = None, widths=widths, table=table):
            return [[(table[(m, r)][field] if layer is None else table[(m, r)][field][layer])
                     for r in range(runs)] for m in widths]

        out[f"{prefix}widths" if prefix else "widths"] = widths
        out[f"{prefix}mean_abs_cos_by_layer"] = grid("mean_abs_cos")
        out[f"{prefix}mean_abs_cos_init_by_layer"] = grid("mean_abs_cos_init")
        for field in ("loss_init", "loss_final", "lr", "displacement"):
            out[f"{prefix}{field}"] = grid(field)
        if kind == "bottleneck":
            out["bottleneck_mean_abs_cos"] = grid("mean_abs_cos", 1)
            out["bottleneck_mean_abs_cos_init"] = grid("mean_abs_cos_init", 1)
            out["bottleneck_assembled_mean_abs_cos"] = grid("mean_abs_cos", 2)
            out["bottleneck_assembled_mean_abs_cos_init"] = grid("mean_abs_cos_init", 2)
        else:
            pooled = [[float(np.mean(v)) for v in row] for row in grid("mean_abs_cos")]
            pooled0 = [[float(np.mean(v)) for v in row] for row in grid("mean_abs_cos_init")]
            out[f"{prefix}mean_abs_cos"] = pooled
            out[f"{prefix}mean_abs_cos_init"] = pooled0
    out["settings"] = {"clt_constant_layer2": clt_prediction()}
    return out


@dataclass(frozen=True)
class LayerCosines:
    """Mean |cos θᵢⱼ| (Eq. 22) of one network kind of :func:`assemble_orthogonality`, per width, run and layer.

    Attributes:
        widths: the widths m (for "bottleneck": m_b), shape (W,).
        after: after gradient descent, shape (W, runs, L) (L hidden layers; index 0 is layer 1).
        init: at initialization θ₀, shape (W, runs, L).
    """

    widths: np.ndarray
    after: np.ndarray
    init: np.ndarray

    @property
    def m(self) -> np.ndarray:
        """The width of every run, shape (W·runs,), in the order of ``after[:, :, l].ravel()`` (the x of a
        rate fit)."""
        return np.repeat(self.widths, self.after.shape[1])


def layer_cosines(result: Mapping[str, Any], kind: str = "fc") -> LayerCosines:
    """The per-layer mean |cos θᵢⱼ| of network ``kind`` ("fc", "bottleneck" or "densenet") in ``result``
    (:func:`orthogonality_sweep` or the JSON of ``reproduce orthogonality``) as arrays (:class:`LayerCosines`).

    Raises:
        TypeError, ValueError: if ``kind`` is not one of ``KINDS``, or ``result`` lacks its fields
            (``{prefix}widths``, ``{prefix}mean_abs_cos_by_layer``, ``{prefix}mean_abs_cos_init_by_layer``).
    """
    V.choice("kind", kind, KINDS)
    prefix = "" if kind == "fc" else f"{kind}_"
    V.fields("result", result, (f"{prefix}widths", f"{prefix}mean_abs_cos_by_layer",
                                f"{prefix}mean_abs_cos_init_by_layer"))
    return LayerCosines(widths=np.asarray(result[f"{prefix}widths"]),
                        after=np.asarray(result[f"{prefix}mean_abs_cos_by_layer"]),
                        init=np.asarray(result[f"{prefix}mean_abs_cos_init_by_layer"]))


def figure_3_left_panel(ax: Any, result: Mapping[str, Any], *, title: str | None = None,
                        ylabel: bool = True) -> None:
    """Figure 3 (left) of Liu, Zhu & Belkin (2022) on one axes: mean |cos θᵢⱼ| after training against the
    width of the equal-width network, layers 2 and 3 (layer 1 is exactly orthogonal, Remark 4; points: runs,
    :func:`ntkbook.plotting.power_law` fits, slope −1/2 dashed), and the second-layer prediction c/√m of
    Lemma 1's Gaussian dotted (c from ``result["settings"]["clt_constant_layer2"]``).

    ``result`` is :func:`assemble_orthogonality`'s (the chapter's :func:`orthogonality_sweep` or the JSON of
    ``python -m ntkbook reproduce orthogonality``).
    """
    widths = np.asarray(result["widths"], dtype=float)
    by = np.asarray(result["mean_abs_cos_by_layer"], dtype=float)  # (widths, runs, layers)
    for layer, color in zip((1, 2), plotting.PALETTE[1:], strict=False):
        y = by[:, :, layer]
        plotting.power_law(ax, np.repeat(widths, y.shape[1]), y.ravel(), label=f"layer {layer + 1}", color=color,
                           reference_slope=-0.5 if layer == 1 else None)
    clt = float(result["settings"]["clt_constant_layer2"])
    ax.plot(widths, clt / np.sqrt(widths), ":", color=plotting.PALETTE[1])
    if title is not None:
        ax.set_title(title)
    ax.set_xlabel("width $m$")
    if ylabel:
        ax.set_ylabel(r"mean $|\cos\theta_{ij}|$")
    ax.legend(fontsize=7)


def figure_3_right_panel(ax: Any, result: Mapping[str, Any], *, bottleneck_outer: int) -> None:
    """Figure 3 (right) of Liu, Zhu & Belkin (2022) on one axes: the bottleneck network (m₁ = m₃ =
    ``bottleneck_outer``, m₂ = m_b) — mean |cos θᵢⱼ| of layer 3 (assembled from the m_b bottleneck neurons,
    slope −1/2 dashed) and of layer 2 (the bottleneck, assembled from the m₁ neurons of layer 1) against m_b,
    with the level c/√m₁ dotted.  ``result`` as for :func:`figure_3_left_panel`."""
    bw = np.asarray(result["bottleneck_widths"], dtype=float)
    bl = np.asarray(result["bottleneck_mean_abs_cos_by_layer"], dtype=float)
    for layer, color, label in ((2, plotting.PALETTE[2], "layer 3 (assembled from the bottleneck)"),
                                (1, plotting.PALETTE[1], "layer 2 (the bottleneck)")):
        y = bl[:, :, layer]
        plotting.power_law(ax, np.repeat(bw, y.shape[1]), y.ravel(), label=label, color=color,
                           reference_slope=-0.5 if layer == 2 else None)
    clt = float(result["settings"]["clt_constant_layer2"])
    ax.axhline(clt / math.sqrt(bottleneck_outer), color=plotting.PALETTE[1], linestyle=":")
    ax.set_xlabel("bottleneck width $m_b$")
    ax.set_ylabel(r"mean $|\cos\theta_{ij}|$")
    ax.legend(fontsize=7)


def orthogonality_sweep(settings: OrthogonalitySettings, kinds: tuple[str, ...] = ("fc", "bottleneck"),
                        **overrides: Any) -> dict[str, Any]:
    """Every piece of :func:`orthogonality_pieces`, assembled (:func:`assemble_orthogonality`).

    ``overrides`` replace settings (e.g. ``dataset="gaussian"``).
    """
    settings = settings.replace(**overrides)
    pieces = orthogonality_pieces(settings, kinds)
    results = [orthogonality_piece(p, settings) for p in progress(pieces, desc="network × width × run",
                                                                  total=len(pieces))]
    return assemble_orthogonality(settings, pieces, results)


# ---------------------------------------------------------------------------------------------
# Theorem 2: the gradient direction of a neuron barely turns in the ball
# ---------------------------------------------------------------------------------------------
# The functions below are module-level and take the layer as a traced index into the stacked values of
# the equal-width network's hidden layers, so that jit and the Lanczos iteration compile once per network
# shape, not once per layer or neuron.


def _unit_value(params, model, x, unit, post):
    """αᵢ⁽ˡ⁾(x) (``post``) or α̃ᵢ⁽ˡ⁾(x) of the equal-width network: ``unit`` = (l − 1)·m + i (traced) indexes
    the hidden layers' values stacked layer after layer."""
    fp = model.forward(params, x[None])
    layers = range(1, model.depth + 1)
    values = jnp.concatenate([(fp.post[lay] if post else fp.pre[lay - 1])[0] for lay in layers])
    return jnp.take(values, unit)


def _unit_post(params, model, x, unit):
    """αᵢ⁽ˡ⁾(x), the post-activation of the unit (l − 1)·m + i (see :func:`_unit_value`)."""
    return _unit_value(params, model, x, unit, True)


def _unit_pre(params, model, x, unit):
    """α̃ᵢ⁽ˡ⁾(x), the pre-activation of the unit (l − 1)·m + i (see :func:`_unit_value`)."""
    return _unit_value(params, model, x, unit, False)


def _angle_array(g0: PyTree, g1: PyTree) -> Array:
    """The angle between the lines spanned by g0 and g1 (in [0, π/2]), computed as 2·asin(‖u − ±v‖/2)."""
    a = jnp.concatenate([jnp.ravel(t) for t in jax.tree_util.tree_leaves(g0)])
    b = jnp.concatenate([jnp.ravel(t) for t in jax.tree_util.tree_leaves(g1)])
    a, b = a / jnp.linalg.norm(a), b / jnp.linalg.norm(b)
    b = b * jnp.sign(jnp.dot(a, b))
    return 2.0 * jnp.arcsin(jnp.minimum(1.0, jnp.linalg.norm(a - b) / 2.0))


def _angle(g0: PyTree, g1: PyTree) -> float:
    return float(_angle_array(g0, g1))


@jax.jit
def _directions(key, salts, top, gd_delta):
    """(top, N(0, I) directions with keys fold_in(key, salt) for each salt, gd_delta) stacked on a leading
    axis (one compiled function per network shape)."""
    rand = jax.vmap(lambda s: tree_normal_like(jax.random.fold_in(key, s), top))(salts)
    return jax.tree_util.tree_map(lambda t, r, g: jnp.concatenate([t[None], r, g[None]]), top, rand, gd_delta)


@jax.jit
def _turn_angles(params, directions, lengths, model, x, unit):
    """The angles between ∇αᵢ⁽ˡ⁾ at θ₀ and at θ₀ + lengthₖ·directionₖ/‖directionₖ‖ for every k (directions
    stacked on a leading axis), and ‖∇α̃ᵢ⁽ˡ⁾(θ₀)‖; one compiled function per network shape."""
    grad = jax.grad(_unit_post)
    g0 = grad(params, model, x, unit)

    def angle(direction, length):
        norm = jnp.sqrt(sum(jnp.vdot(t, t) for t in jax.tree_util.tree_leaves(direction)))
        shifted = jax.tree_util.tree_map(lambda p, d: p + (length / norm) * d, params, direction)
        return _angle_array(g0, grad(shifted, model, x, unit))

    gp = jax.grad(_unit_pre)(params, model, x, unit)
    return jax.vmap(angle)(directions, lengths), jnp.sqrt(sum(jnp.vdot(t, t) for t in jax.tree_util.tree_leaves(gp)))


_tree_norm_jit = jax.jit(lambda t: jnp.sqrt(sum(jnp.vdot(x, x) for x in jax.tree_util.tree_leaves(t))))


TURN_FIELDS = ("width", "run", "layer", "neuron", "angle_top", "angle_random", "angle_gd", "hessian_norm",
               "grad_norm", "gd_distance")
"""The columns of :func:`turn_piece` and :func:`turn_sweep`."""


def turn_piece(piece: Mapping[str, Any], settings: NeuronGeometry) -> dict[str, list]:
    """Theorem 2 at one (width, run): for neurons of every hidden layer of the equal-width network, the angle
    between ∇_θ αᵢ⁽ˡ⁾(θ₀; x) and ∇_θ αᵢ⁽ˡ⁾(θ₀ + Δ; x) (post-activation, first training input) for
    Δ = R·u (u the eigenvector of the largest |eigenvalue| of the Hessian of α̃ᵢ⁽ˡ⁾ — the direction that turns
    the gradient fastest to first order), for ``directions`` random Δ with ‖Δ‖ = R, and for Δ = θ_T − θ₀ of
    gradient descent (θ_T as in :func:`orthogonality_piece`).

    Returns lists (one entry per (layer, neuron)) with the fields of :data:`TURN_FIELDS`: ``angle_random`` is
    the largest over the random directions, ``hessian_norm`` ‖H_{α̃ᵢ}(θ₀)‖, ``grad_norm`` ‖∇α̃ᵢ(θ₀)‖ and
    ``gd_distance`` ‖θ_T − θ₀‖.
    """
    radius = float(settings.radius)
    out: dict[str, list] = {k: [] for k in TURN_FIELDS}
    x, y = load_data(settings)
    model, params = make_network("fc", piece["width"], piece["run"], settings, x.shape[1])
    lr = step_size_from_kernel(np.asarray(empirical_ntk(model.apply, params, x), np.float64), x.shape[0],
                               factor=float(settings.lr_factor))
    params_t, _, _ = _train(model, params, x, y, lr, int(settings.gd_steps))
    gd_delta = tree_sub(params_t, params)
    x0 = x[0]
    key = jax.random.fold_in(jax.random.key(int(settings.seed)), 7 * piece["width"] + piece["run"])
    gd_distance = float(_tree_norm_jit(gd_delta))
    m = int(piece["width"])
    for layer in range(1, model.depth + 1):
        for neuron in range(int(settings.neurons)):
            unit = jnp.asarray((layer - 1) * m + neuron)
            res = hessian_spectral_norm(_unit_pre, params, args=(model, x0, unit), tol=float(settings.tol),
                                        max_iter=400)
            u = res.eigenvector if res.eigenvector is not None else tree_normal_like(key, params)  # H = 0: layer 1
            salts = jnp.asarray([1000 * layer + 10 * neuron + j for j in range(int(settings.directions))])
            directions = _directions(key, salts, u, gd_delta)
            lengths = jnp.asarray([radius] * (1 + len(salts)) + [gd_distance], dtype=x.dtype)
            angles, grad_norm = _turn_angles(params, directions, lengths, model, x0, unit)
            angles = [float(v) for v in angles]
            row = {"width": piece["width"], "run": piece["run"], "layer": layer, "neuron": neuron,
                   "angle_top": angles[0], "angle_random": max(angles[1:-1]), "angle_gd": angles[-1],
                   "hessian_norm": res.value, "grad_norm": float(grad_norm), "gd_distance": gd_distance}
            for k in TURN_FIELDS:
                out[k].append(row[k])
    return out


# ---------------------------------------------------------------------------------------------
# Theorem 4: the quadratic term of a next-layer pre-activation
# ---------------------------------------------------------------------------------------------

QUADRATIC_FIELDS = ("target_layer", "width", "run", "worst", "hessian_term", "beta", "max_w", "bound", "frame",
                    "bound_with_frame", "rank_one_share", "gram_norm", "beta_segment", "bound_segment",
                    "segment_resolution", "cross_term", "cross_term_max", "eq_36", "eq_36_resolution")
"""The columns of :func:`quadratic_term_piece` and :func:`quadratic_term_sweep`."""


@cache
def _target_fn(layer: int):
    """(θ⁽ˡ⁾, params, model, x) ↦ T: the first neuron of layer l+1 (pre-activation), or f when l = L; the
    weights W⁽¹⁾…W⁽ˡ⁾ are replaced by the first argument, everything else is taken from ``params``."""

    def fn(moving, params, model, x):
        p = {**params, "layers": list(moving) + list(params["layers"][layer:])}
        fp = model.forward(p, x[None])
        return fp.pre[layer][0, 0] if layer < model.depth else fp.output[0]

    return fn


@cache
def _layer_pre_fn(layer: int):
    def fn(moving, params, model, x):
        p = {**params, "layers": list(moving) + list(params["layers"][layer:])}
        return model.forward(p, x[None]).pre[layer - 1][0]

    return fn


@cache
def _second_order_parts(layer: int):
    """jit: (θ⁽ˡ⁾, Δ, w, params, model, x) ↦ (rank-one part (1/√m)Σᵢ wᵢσ''(α̃ᵢ)(∇α̃ᵢᵀΔ)²/2, ½ΔᵀH_TΔ)."""
    target, pre = _target_fn(layer), _layer_pre_fn(layer)

    @jax.jit
    def fn(moving, delta, w_next, params, model, x):
        z, jd = jax.jvp(partial(pre, params=params, model=model, x=x), (moving,), (delta,))
        m = z.shape[0]
        rank_one = jnp.sum(w_next * model.activations[layer - 1].derivative(z, 2) * jd**2) / (2 * math.sqrt(m))
        second = 0.5 * tree_dot(delta, hvp(target, moving, delta, params, model, x))
        return rank_one, second

    return fn


def quadratic_term_piece(piece: Mapping[str, Any], settings: NeuronGeometry) -> dict[str, list]:
    """Theorem 4 at one (width, run) of the equal-width network, first training input.

    For the sub-models αᵢ⁽ˡ⁾ (l = 2, …, L) and their assembly T = α̃₁⁽ˡ⁺¹⁾ (the first neuron of layer l+1, or
    the output f when l = L), with W⁽ˡ⁺¹⁾ fixed and Δ in θ⁽ˡ⁾ = (W⁽¹⁾, …, W⁽ˡ⁾):

    * ``worst`` — max |T(θ₀+Δ) − T(θ₀) − ∇T(θ₀)ᵀΔ| over ‖Δ‖ ≤ R, by normalized projected gradient ascent from
      ±R·(top Hessian eigenvector) and from a random direction (:func:`worst_remainder`);
    * ``hessian_term`` — ½R²‖H_T(θ₀)‖ (Lanczos);
    * ``beta`` — the sub-models' smoothness along their normals, β = β_σ·maxᵢ‖∇α̃ᵢ⁽ˡ⁾(θ₀)‖² (the constant c ≤ β
      of H_{αᵢ} = c nᵢnᵢᵀ in the proof);
    * ``bound`` — Theorem 4's βR²·maxᵢ|wᵢ|/(2√m_l) (Eq. 19 with R², as Eqs. 17–18 give);
    * ``frame`` — λ_max of the cosine matrix of the layer-l normals (Eq. 18 takes it to be 1) and
      ``bound_with_frame`` = bound·frame;
    * ``gram_norm`` — Lemma 3's ‖∇α⁽ˡ⁾(∇α⁽ˡ⁾)ᵀ‖ for the post-activations of layer l (all m_l neurons),
      λ_max of D G⁽ˡ⁾ D with D = diag σ'(α̃⁽ˡ⁾) (dense symmetric eigenvalue of an m_l × m_l matrix);
    * ``rank_one_share`` — at the worst Δ, the part of the second-order term ½ΔᵀH_T(θ₀)Δ that comes from the
      rank-one terms (1/√m)Σᵢ wᵢσ''(α̃ᵢ)(∇α̃ᵢᵀΔ)²/2 the proof keeps;
    * ``beta_segment`` — the β the proof needs at the worst Δ: β_σ·max over the segment [θ₀, θ₀ + Δ] of
      maxᵢ‖∇α̃ᵢ⁽ˡ⁾‖², on the grid of :func:`segment_profile`; ``bound_segment`` — Eq. 19 (R²) with it;
      ``segment_resolution`` — :func:`grid_resolution` of the grid values;
    * Appendix D, w⁽ˡ⁺¹⁾ moving too (:func:`cross_term`): ``cross_term`` — the remainder that moving w adds,
      (1/√m)Δwᵀ(α⁽ˡ⁾(θ₀ + Δθ) − α⁽ˡ⁾(θ₀)), at the maximizer of the cross term at θ₀; ``cross_term_max`` — that
      maximum, R²σ_max(∇α⁽ˡ⁾(θ₀))/(2√m_l); ``eq_36`` — Eq. (36)'s R²√C/√m_l with √C the largest
      σ_max(∇α⁽ˡ⁾(ξ)) on the grid of the segment [θ₀, θ₀ + Δθ] and ``eq_36_resolution`` the grid resolution
      of those σ_max.
    """
    radius = float(settings.radius)
    beta_sigma = get_activation("tanh").smoothness
    out: dict[str, list] = {k: [] for k in QUADRATIC_FIELDS}
    x, _ = load_data(settings)
    model, params = make_network("fc", piece["width"], piece["run"], settings, x.shape[1])
    x0 = x[0]
    grams = dict(zip(range(2, model.depth + 1),
                     neuron_gradient_grams(model, params, x0[None], layers=tuple(range(2, model.depth + 1)))))
    key = jax.random.fold_in(jax.random.key(int(settings.seed)), 11 * piece["width"] + piece["run"])
    for lay in range(2, model.depth + 1):
        m = model.widths[lay - 1]
        w_next = params["layers"][lay]["W"][0] if lay < model.depth else params["v"][:, 0]
        target = _target_fn(lay)
        moving = tuple(params["layers"][:lay])
        args = (params, model, x0)
        # ARPACK on the host: one compiled Hessian-vector product per target and shape (the on-device
        # Krylov–Schur iteration compiles three programs around it); the same residual criterion
        res = hessian_spectral_norm(target, moving, args=args, method="arpack", tol=float(settings.tol), max_iter=400)
        worst, best_delta = worst_remainder(target, moving, args, res, radius, key, int(settings.ascent_steps))
        rank_one, second = (float(v) for v in _second_order_parts(lay)(moving, best_delta, w_next, params, model,
                                                                       x0))
        g = grams[lay][0]
        beta = beta_sigma * float(jnp.max(jnp.diagonal(g)))
        max_w = float(jnp.max(jnp.abs(w_next)))
        bound = beta * radius**2 * max_w / (2 * math.sqrt(m))
        frame = float(frame_constant(g))
        dsig = model.activations[lay - 1].derivative(model.forward(params, x0[None]).pre[lay - 1][0])
        gram_norm = float(lambda_max(g * dsig[:, None] * dsig[None, :]))
        # segment_profile(…, best_delta, lay), cross_term(…, lay, radius, gram=g) and segment_profile along its
        # Δθ, in one compiled program
        (sq, _), (lam0, _, _, mixed), (_, lam) = _segments_and_cross(
            model, params, x0, g, tuple(best_delta), jnp.linspace(0.0, 1.0, SEGMENT_POINTS, dtype=x0.dtype), radius,
            lay)
        beta_grid = beta_sigma * np.asarray(sq, np.float64)
        beta_segment = float(np.max(beta_grid))
        sigma_grid = np.sqrt(np.asarray(lam, np.float64))
        cross_max = radius**2 * math.sqrt(max(float(lam0), 0.0)) / (2 * math.sqrt(m))  # CrossTerm.maximum
        row = {"target_layer": lay + 1, "width": piece["width"], "run": piece["run"], "worst": worst,
               "hessian_term": 0.5 * radius**2 * res.value, "beta": beta, "max_w": max_w, "bound": bound,
               "frame": frame, "bound_with_frame": bound * frame,
               "rank_one_share": rank_one / second if second != 0 else math.nan, "gram_norm": gram_norm,
               "beta_segment": beta_segment, "bound_segment": beta_segment * radius**2 * max_w / (2 * math.sqrt(m)),
               "segment_resolution": grid_resolution(beta_grid), "cross_term": abs(float(mixed)),
               "cross_term_max": cross_max, "eq_36": radius**2 * float(np.max(sigma_grid)) / math.sqrt(m),
               "eq_36_resolution": grid_resolution(sigma_grid)}
        for k in QUADRATIC_FIELDS:
            out[k].append(row[k])
    return out


@partial(jax.jit, static_argnames=("fn",))
def _ascent_step(fn, delta, params, args, sign, radius):
    """r(Δ) and the next iterate Δ' = R·(Δ + sign·R·∇r/‖∇r‖)/‖·‖ of the normalized ascent on ‖Δ‖ = R."""

    def remainder(d):
        f0, df = jax.jvp(lambda p: fn(p, *args), (params,), (d,))
        shifted = jax.tree_util.tree_map(jnp.add, params, d)
        return fn(shifted, *args) - f0 - df

    def norm(t):
        return jnp.sqrt(sum(jnp.vdot(x, x) for x in jax.tree_util.tree_leaves(t)))

    val, grad = jax.value_and_grad(remainder)(delta)
    step_size = sign * radius / jnp.maximum(norm(grad), 1e-30)
    step = jax.tree_util.tree_map(lambda d, g: d + step_size * g, delta, grad)
    return val, jax.tree_util.tree_map(lambda t: (radius / norm(step)) * t, step)


def worst_remainder(fn: Any, params: PyTree, args: tuple, lanczos: Any, radius: float, key: Array,
                    steps: int) -> tuple[float, PyTree]:
    """max |fn(θ+Δ) − fn(θ) − ∇fn(θ)ᵀΔ| over ‖Δ‖ = R by normalized gradient ascent on the sphere.

    ``fn(params, *args)`` is a scalar; ``lanczos`` the :func:`ntkbook.hessian_spectral_norm` result at θ.
    Starts: ±R·u (u its eigenvector of largest |λ|), ascending the sign of λ, and R·(random direction)
    ascending each sign.  Every iterate is a point of the sphere, so the value is a lower estimate of the
    maximum.  Returns the best |value| and its Δ.
    """
    lam_sign = 1.0 if lanczos.eigenvalue >= 0 else -1.0
    rand = tree_normal_like(key, params)
    rand = tree_scale(radius / float(tree_norm(rand)), rand)
    starts = [(lam_sign, rand), (-lam_sign, rand)]
    if lanczos.eigenvector is not None:
        u = tree_scale(radius / float(tree_norm(lanczos.eigenvector)), lanczos.eigenvector)
        starts = [(lam_sign, u), (lam_sign, tree_scale(-1.0, u)), *starts]
    best, best_delta = -math.inf, starts[0][1]
    for sign, delta in starts:
        for _ in range(steps + 1):
            val, new_delta = _ascent_step(fn, delta, params, args, sign, radius)  # new_delta back on ‖Δ‖ = R
            if sign * float(val) > best:
                best, best_delta = sign * float(val), delta
            delta = new_delta
    return abs(best), best_delta


# ---------------------------------------------------------------------------------------------
# Theorem 4's β over the segment, Appendix D's cross term
# ---------------------------------------------------------------------------------------------

#: Points of the grid t = 0, 1/16, …, 1 on which :func:`segment_profile` evaluates the sub-models along the
#: segment [θ₀, θ₀ + Δ] (fixed before measuring; its resolution is :func:`grid_resolution` of the values).
SEGMENT_POINTS = 17
#: Lanczos steps (:func:`ntkbook.eigen.lanczos_fixed`, full reorthogonalization) for σ_max(∇α⁽ˡ⁾)² =
#: λ_max(D G D) of an m_l × m_l matrix: from a fixed random start at the first point of a segment, then
#: warm-started from the previous point's Ritz vector; exact when m_l ≤ this.  A Ritz value never exceeds λ_max.
LANCZOS_STEPS = 32


class SegmentProfile(NamedTuple):
    """The neuron gradients of one layer along the segment θ₀ + tΔ (:func:`segment_profile`), arrays (points,)."""

    t: np.ndarray
    """The grid t = 0, 1/(points − 1), …, 1."""
    max_sq_grad_norm: np.ndarray
    """maxᵢ‖∇_θ α̃ᵢ⁽ˡ⁾(θ₀ + tΔ)‖²: times β_σ, the smoothness β of the sub-models αᵢ⁽ˡ⁾ along their normals."""
    gram_norm: np.ndarray
    """‖∇α⁽ˡ⁾(∇α⁽ˡ⁾)ᵀ‖ = σ_max(∇_θ α⁽ˡ⁾)² at θ₀ + tΔ (Lemma 3's quantity, post-activations; Lanczos)."""


def _shifted(params: PyTree, delta: tuple, t: Any) -> PyTree:
    """``params`` with the first len(delta) layers moved by t·delta."""
    layers = [jax.tree_util.tree_map(lambda a, d: a + t * d, lp, dl) for lp, dl in zip(params["layers"], delta)]
    return {**params, "layers": layers + list(params["layers"][len(delta):])}


def _dgd(model, params, x, layer, g):
    """∇α⁽ˡ⁾(∇α⁽ˡ⁾)ᵀ = D G D, D = diag σ'(α̃⁽ˡ⁾(x)), from the Gram G of the pre-activation gradients."""
    dsig = model.activations[layer - 1].derivative(model.forward(params, x[None]).pre[layer - 1][0])
    return g * dsig[:, None] * dsig[None, :]


def _matvec(v: Array, a: Array) -> Array:
    return jnp.matmul(a, v, precision=HIGHEST)


def _top_eigenpair(a: Array, start: Array) -> tuple[Array, Array]:
    """(λ_max, unit eigenvector) of a symmetric (m, m) matrix by :data:`LANCZOS_STEPS` Lanczos steps from
    ``start``, inside ``jit``."""
    res = lanczos_fixed(_matvec, start, (a,), num_steps=LANCZOS_STEPS, which="LA", start=start)
    return res.value, res.eigenvector


def _lanczos_start(m: int, dtype: Any) -> Array:
    return jax.random.normal(jax.random.key(0), (m,), dtype)


def _profile_body(model, params, x, deltas, ts, layer):
    """(maxᵢ Gᵢᵢ, λ_max(D G D)) at θ₀ + tΔ for each t and each Δ of ``deltas`` (a tuple of displacements),
    arrays (len(deltas), points); Lanczos warm-started along each segment.  One scan over all the points, so
    that its body is traced once however many segments."""
    start = _lanczos_start(model.widths[layer - 1], x.dtype)
    stacked = jax.tree_util.tree_map(lambda *d: jnp.stack(d), *deltas)
    k = jnp.repeat(jnp.arange(len(deltas)), ts.shape[0])

    def step(v, kt):
        k, t, first = kt
        p = _shifted(params, jax.tree_util.tree_map(lambda d: d[k], stacked), t)
        g = _grams(model, p, x[None], None, (layer,))[0][0]
        lam, v = _top_eigenpair(_dgd(model, p, x, layer, g), jnp.where(first, start, v))
        return v, (jnp.max(jnp.diagonal(g)), lam)

    first = jnp.tile(jnp.arange(ts.shape[0]) == 0, len(deltas))
    _, (sq, lam) = jax.lax.scan(step, start, (k, jnp.tile(ts, len(deltas)), first))
    return sq.reshape(len(deltas), -1), lam.reshape(len(deltas), -1)


_profile = partial(jax.jit, static_argnames=("layer",))(_profile_body)


def _check_delta(params: PyTree, delta: Any, layer: int) -> tuple:
    if not isinstance(delta, (tuple, list)) or not delta:
        raise TypeError("delta must be a non-empty tuple of layer displacements (the structure of "
                        f"params['layers'][:k]), got {type(delta).__name__}")
    delta = tuple(delta)
    V.pytree_of_arrays("delta", delta)
    if len(delta) < layer or len(delta) > len(params["layers"]):
        raise ValueError(f"delta must displace layers 1..k with {layer} <= k <= {len(params['layers'])} (the layer "
                         f"and the ones below it), got {len(delta)} layers")
    ref = tuple(params["layers"][: len(delta)])
    if (jax.tree_util.tree_structure(delta) != jax.tree_util.tree_structure(ref)
            or any(a.shape != b.shape for a, b in zip(jax.tree_util.tree_leaves(delta),
                                                      jax.tree_util.tree_leaves(ref)))):
        raise ValueError("delta must have the structure and shapes of params['layers'][:k]")
    return delta


def _check_mlp_layer(model: Any, params: PyTree, x: Any, layer: Any) -> tuple[Array, int]:
    if not isinstance(model, MLP):
        raise TypeError(f"model must be an MLP, got {type(model).__name__}")
    V.pytree_of_arrays("params", params)
    x = V.array("x", x, ndim=1)
    layer = V.positive_int("layer", layer)
    if layer > model.depth:
        raise ValueError(f"layer must lie in 1..{model.depth} (the hidden layers), got {layer}")
    return x, layer


def segment_profile(model: MLP, params: PyTree, x: Any, delta: Any, layer: int,
                    points: int = SEGMENT_POINTS) -> SegmentProfile:
    """The gradients of the neurons of hidden layer l along the segment [θ₀, θ₀ + Δ] of Theorem 4's proof.

    The remainder of a next-layer pre-activation is ½ΔᵀH(ξ)Δ with ξ on the segment (Eq. 16), and Eq. (17)
    bounds each sub-model's ΔᵀH_{αᵢ}(ξ)Δ by β(Δᵀnᵢ)² with β ≥ σ''(α̃ᵢ(ξ))‖∇α̃ᵢ(ξ)‖²: the β the proof needs at
    Δ is at least β_σ·max over ξ on the segment of maxᵢ‖∇α̃ᵢ⁽ˡ⁾(ξ)‖².  Likewise Appendix D's Eq. (36) needs
    ‖∇α⁽ˡ⁾(ξ)‖ on the segment.  Both are evaluated on the grid θ₀ + tΔ, t = k/(points − 1), from the Gram
    matrices of :func:`neuron_gradient_grams` (all m_l neurons: m_l³ operations per point), λ_max(D G D) by
    :data:`LANCZOS_STEPS` Lanczos steps (one compiled program per shape and layer; no host eigensolver).

    Args:
        model, params: an :class:`~ntkbook.models.dense.MLP` and its parameters θ₀.
        x: one input (d,).
        delta: the displacement Δ of the first k ≥ l weight layers, a tuple with the structure of
            ``params["layers"][:k]`` (e.g. the Δ of :func:`worst_remainder` over θ⁽ˡ⁾ = (W⁽¹⁾, …, W⁽ˡ⁾)).
        layer: the hidden layer l (1-based) whose neurons are the sub-models.
        points: grid points, ≥ 2.

    Returns:
        A :class:`SegmentProfile` of float64 NumPy arrays (points,).
    """
    x, layer = _check_mlp_layer(model, params, x, layer)
    delta = _check_delta(params, delta, layer)
    points = V.positive_int("points", points, minimum=2)
    ts = jnp.linspace(0.0, 1.0, points, dtype=x.dtype)
    sq, lam = _profile(model, params, x, (delta,), ts, layer)
    return SegmentProfile(np.asarray(ts, np.float64), np.asarray(sq[0], np.float64), np.asarray(lam[0], np.float64))


def grid_resolution(values: Any) -> float:
    """The largest relative change between neighbouring grid values, maxₖ |vₖ₊₁ − vₖ|/min(|vₖ|, |vₖ₊₁|).

    How much the maximum over a continuous segment may exceed the maximum over its grid, to first order
    (the change across one grid step); a ratio to a bound built from the grid maximum is resolved only when it
    differs from 1 by more than this.  ``values``: 1-D, at least two, non-zero.
    """
    v = np.abs(np.asarray(V.numpy_array("values", values, ndim=1), np.float64))
    if v.size < 2:
        raise ValueError(f"values must hold at least two grid values, got {v.size}")
    if np.any(v == 0):
        raise ValueError("values must be non-zero (the change is relative)")
    return float(np.max(np.abs(np.diff(v)) / np.minimum(v[:-1], v[1:])))


class CrossTerm(NamedTuple):
    """Appendix D's cross term 𝒞 of one next-layer pre-activation at its maximizer (:func:`cross_term`)."""

    sigma_max: float
    """σ_max(∇_θ α⁽ˡ⁾(θ₀)), the square root of Lemma 3's ‖∇α⁽ˡ⁾(∇α⁽ˡ⁾)ᵀ‖ (Lanczos)."""
    maximum: float
    """R²σ_max/(2√m_l): the maximum of |𝒞| = |Δwᵀ∇α⁽ˡ⁾(θ₀)Δθ|/√m_l over ‖Δw‖² + ‖Δθ‖² ≤ R²."""
    delta_w: np.ndarray
    """(m_l,) the maximizing Δw = (R/√2)·d/‖d‖, d = α⁽ˡ⁾(θ₀ + Δθ) − α⁽ˡ⁾(θ₀)."""
    delta_theta: tuple
    """The maximizing Δθ = ±(R/√2)·v (v the top right singular vector of ∇α⁽ˡ⁾(θ₀); of the two signs, the one
    with the larger added remainder), layers 1..l."""
    mixed: float
    """(1/√m_l)Δwᵀ(α⁽ˡ⁾(θ₀ + Δθ) − α⁽ˡ⁾(θ₀)) at (Δw, Δθ): what moving w⁽ˡ⁺¹⁾ adds to the remainder."""


def _cross_body(model, params, x, g, radius, layer):
    """(λ_max(D G D), Δθ, Δw, added remainder) of :func:`cross_term`; traceable."""
    lam, u = _top_eigenpair(_dgd(model, params, x, layer, g), _lanczos_start(g.shape[0], g.dtype))
    pre = _layer_pre_fn(layer)
    act = model.activations[layer - 1]

    def post(moving):
        return act(pre(moving, params, model, x))

    moving = tuple(params["layers"][:layer])
    a0, pull = jax.vjp(post, moving)
    (v,) = pull(u)
    dtheta = tree_scale(radius / (math.sqrt(2.0) * tree_norm(v)), v)
    d_plus = post(jax.tree_util.tree_map(jnp.add, moving, dtheta)) - a0
    d_minus = post(jax.tree_util.tree_map(jnp.subtract, moving, dtheta)) - a0
    plus = jnp.linalg.norm(d_plus) >= jnp.linalg.norm(d_minus)  # the sign of a singular vector is arbitrary
    d = jnp.where(plus, d_plus, d_minus)
    dtheta = tree_scale(jnp.where(plus, 1.0, -1.0), dtheta)
    dw = (radius / (math.sqrt(2.0) * jnp.linalg.norm(d))) * d
    return lam, dtheta, dw, jnp.vdot(dw, d) / math.sqrt(a0.shape[0])


_cross = partial(jax.jit, static_argnames=("layer",))(_cross_body)


@partial(jax.jit, static_argnames=("layer",))
def _segments_and_cross(model, params, x, g, delta, ts, radius, layer):
    """:func:`segment_profile` along Δ and :func:`cross_term` with the profile along its Δθ, as one compiled
    program per shape and layer (what :func:`quadratic_term_piece` needs; tracing and loading each program
    costs more at ``ci`` sizes than running it)."""
    cross = _cross_body(model, params, x, g, radius, layer)
    sq, lam = _profile_body(model, params, x, (delta, cross[1]), ts, layer)
    return (sq[0], lam[0]), cross, (sq[1], lam[1])


def cross_term(model: MLP, params: PyTree, x: Any, layer: int, radius: float, *, gram: Any = None) -> CrossTerm:
    """Appendix D (Eq. 36): the cross term of a pre-activation of layer l+1 when its weights w⁽ˡ⁺¹⁾ move too.

    T = wᵀα⁽ˡ⁾(θ⁽ˡ⁾)/√m_l (a neuron of layer l+1, or the output when l = L) has, in (w, θ⁽ˡ⁾), the remainder
    r(Δw, Δθ) = w₀ᵀ(α(θ) − α₀ − ∇α₀Δθ)/√m_l + Δwᵀ(α(θ) − α₀)/√m_l: Theorem 4's term ℬ and what moving w adds,
    whose second-order part is the cross term 𝒞 = Δwᵀ∇α⁽ˡ⁾Δθ/√m_l (∂²T/∂w∂θ = ∇α⁽ˡ⁾/√m_l; 𝒜 = 0).  Over the
    ball ‖Δw‖² + ‖Δθ‖² ≤ R², |𝒞| at ξ = θ₀ is at most σ_max(∇α⁽ˡ⁾)‖Δw‖‖Δθ‖/√m_l ≤ R²σ_max/(2√m_l), attained at
    ‖Δw‖ = ‖Δθ‖ = R/√2 along the top singular vectors — the closed-form maximum.  σ_max² and the left singular
    vector u are the top eigenpair of D G⁽ˡ⁾ D (:func:`neuron_gradient_grams`, D = diag σ'(α̃⁽ˡ⁾);
    :data:`LANCZOS_STEPS` Lanczos steps); the right one is ∇α⁽ˡ⁾ᵀu/σ_max (autodiff).  At Δθ = ±(R/√2)·v the added
    remainder is evaluated exactly (forward passes), with the Δw that maximizes it for this Δθ, and the sign with
    the larger value is kept (both maximize 𝒞 at θ₀; beyond second order they differ).

    Args:
        model, params: an :class:`~ntkbook.models.dense.MLP` and its parameters θ₀.
        x: one input (d,).
        layer: the hidden layer l (1-based) whose post-activations T assembles.
        radius: R > 0.
        gram: G⁽ˡ⁾ (m_l, m_l) of :func:`neuron_gradient_grams` at θ₀ and x, if already computed.

    Returns:
        A :class:`CrossTerm`.
    """
    x, layer = _check_mlp_layer(model, params, x, layer)
    radius = V.positive_float("radius", radius)
    m = model.widths[layer - 1]
    if gram is None:
        gram = neuron_gradient_grams(model, params, x[None], layers=(layer,))[0][0]
    g = V.array("gram", gram, ndim=2)
    if g.shape != (m, m):
        raise ValueError(f"gram must be the ({m}, {m}) Gram matrix of layer {layer}, got shape {g.shape}")
    lam, dtheta, dw, mixed = _cross(model, params, x, g.astype(x.dtype), radius, layer)
    sigma = math.sqrt(max(float(lam), 0.0))
    return CrossTerm(sigma, radius**2 * sigma / (2 * math.sqrt(m)), np.asarray(dw), dtheta, float(mixed))


# ---------------------------------------------------------------------------------------------
# Appendix E: the DenseNet's output Hessian
# ---------------------------------------------------------------------------------------------


def _output_at(params, model, x):
    return model.apply(params, x[None])[0]


def densenet_hessian_piece(piece: Mapping[str, Any], settings: Densenet) -> dict[str, float]:
    """‖H_f(θ₀; x)‖ of the DenseNet (Lanczos, first training input) at one (width, run), and ½R²‖H_f‖."""
    x, _ = load_data(settings)
    model, params = make_network("densenet", piece["width"], piece["run"], settings, x.shape[1])
    x0 = x[0]
    res = hessian_spectral_norm(_output_at, params, args=(model, x0), method="arpack", tol=float(settings.tol),
                                max_iter=400)  # ARPACK: one compiled Hessian-vector product per width
    return {"width": piece["width"], "run": piece["run"], "hessian_norm": res.value,
            "hessian_term": 0.5 * float(settings.radius) ** 2 * res.value, "residual": res.residual}


# ---------------------------------------------------------------------------------------------
# Sweeps over widths (the notebook's entry points)
# ---------------------------------------------------------------------------------------------


def _sweep(piece_fn, settings: NeuronGeometry | Densenet, desc: str) -> dict[str, np.ndarray]:
    pieces = [{"width": int(m), "run": r} for m in settings.widths for r in range(int(settings.runs))]
    results = [piece_fn(p, settings) for p in progress(pieces, desc=desc, total=len(pieces))]
    if isinstance(results[0][next(iter(results[0]))], list):
        return {k: np.asarray([v for r in results for v in r[k]]) for k in results[0]}
    return {k: np.asarray([r[k] for r in results]) for k in results[0]}


def turn_sweep(settings: NeuronGeometry) -> dict[str, np.ndarray]:
    """:func:`turn_piece` for every (width, run) of the settings, as equal-length arrays (:data:`TURN_FIELDS`)."""
    return _sweep(turn_piece, settings, "Theorem 2: width × run")


def quadratic_term_sweep(settings: NeuronGeometry) -> dict[str, np.ndarray]:
    """:func:`quadratic_term_piece` for every (width, run), as equal-length arrays (:data:`QUADRATIC_FIELDS`)."""
    return _sweep(quadratic_term_piece, settings, "Theorem 4: width × run")


def densenet_hessian_sweep(settings: Densenet) -> dict[str, np.ndarray]:
    """:func:`densenet_hessian_piece` for every (width, run): arrays ``width``, ``run``, ``hessian_norm``, ..."""
    return _sweep(densenet_hessian_piece, settings, "DenseNet ‖H‖: width × run")


def per_width(widths: Any, values: Any) -> tuple[np.ndarray, np.ndarray]:
    """(unique widths, mean of ``values`` at each) — for monotonicity checks on run-averaged curves."""
    widths = np.asarray(widths)
    values = np.asarray(values, dtype=np.float64)
    ws = np.unique(widths)
    return ws, np.array([values[widths == w].mean() for w in ws])


__all__ = [
    "DATASETS",
    "FRAME_LIMIT",
    "KINDS",
    "LANCZOS_STEPS",
    "QUADRATIC_FIELDS",
    "SEGMENT_POINTS",
    "TURN_FIELDS",
    "CrossTerm",
    "LayerCosines",
    "SegmentProfile",
    "assemble_orthogonality",
    "clt_prediction",
    "clt_predictions",
    "cosine_matrix",
    "cross_term",
    "densenet_hessian_piece",
    "densenet_hessian_sweep",
    "figure_3_left_panel",
    "figure_3_right_panel",
    "frame_constant",
    "grid_resolution",
    "layer_cosines",
    "load_data",
    "make_network",
    "mean_abs_cos",
    "neuron_gradient_grams",
    "orthogonality_piece",
    "orthogonality_pieces",
    "orthogonality_sweep",
    "per_width",
    "quadratic_term_piece",
    "quadratic_term_sweep",
    "segment_profile",
    "turn_piece",
    "turn_sweep",
    "worst_remainder",
]
