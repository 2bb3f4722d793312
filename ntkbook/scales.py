"""The one table of sizes: every experiment at the three scales of the book.

* ``ci`` — seconds per notebook on a 2-core CPU (the test suite injects it);
* ``book`` — what the rendered book shows, minutes on a laptop CPU;
* ``paper`` — the papers' settings, meant for a GPU.

Notebooks choose the scale in their ``parameters`` cell (``NTKBOOK_SCALE`` or papermill
``-p scale ...``) and read their sizes with :func:`get`.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from . import _validation as V

SCALES = ("ci", "book", "paper")
DEFAULT_SCALE = "book"


def _coerce(where: str, value: Any, hint: Any) -> Any:
    """``value`` checked against the annotation ``hint`` (ints widen to float, lists become tuples)."""
    origin = typing.get_origin(hint)
    if hint is bool:
        if not isinstance(value, bool):
            raise TypeError(f"{where} must be a bool, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{where} must be an int, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where} must be a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise TypeError(f"{where} must be a string, got {value!r}")
        return value
    if origin is tuple:
        if isinstance(value, range):
            value = tuple(value)
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"{where} must be a tuple, got {value!r}")
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(f"{where}[{i}]", v, args[0]) for i, v in enumerate(value))
        if len(args) != len(value):
            raise TypeError(f"{where} must have {len(args)} entries, got {value!r}")
        return tuple(_coerce(f"{where}[{i}]", v, a) for i, (v, a) in enumerate(zip(value, args, strict=True)))
    return value  # pragma: no cover - every field of the table has one of the types above


@dataclass(frozen=True, kw_only=True)
class ExperimentSettings:
    """Base of the typed, frozen settings of one experiment at one scale.

    Every field is keyword-only and typed; values are checked (and ints widened to float where a float is
    expected) when the object is made, so a misspelled field name is a ``TypeError`` at construction and a
    wrong type is a ``TypeError`` naming the field.  Use :meth:`replace` for a modified copy.
    """

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            where = f"{type(self).__name__}.{f.name}"
            object.__setattr__(self, f.name, _coerce(where, getattr(self, f.name), hints[f.name]))

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed (``TypeError`` for a field the experiment does not have)."""
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (for JSON records and digests)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def _hint_of(where: str, values: list[Any]) -> Any:
    """The one annotation that every scale's value of a field fits: bool, int, float (ints widen), str or a
    tuple of one of these (lists are tuples)."""
    kinds = set()
    for v in values:
        if isinstance(v, bool):
            kinds.add(bool)
        elif isinstance(v, int):
            kinds.add(int)
        elif isinstance(v, float):
            kinds.add(float)
        elif isinstance(v, str):
            kinds.add(str)
        elif isinstance(v, (tuple, list, range)):
            kinds.add(tuple)
        else:
            raise TypeError(f"{where} must be a bool, int, float, str or a tuple of them, got {v!r}")
    if kinds == {int, float}:
        return float
    if len(kinds) != 1:
        raise TypeError(f"{where} has values of different types at the three scales: {values!r}")
    kind = kinds.pop()
    if kind is tuple:
        items = [item for v in values for item in v]
        return tuple[_hint_of(f"{where}[...]", items) if items else int, ...]
    return kind


class Sizes:
    """The sizes of one experiment at one scale, declared in the chapter next to the experiment (:func:`pick`).

    Frozen and typed: its fields are the same at the three scales, each of one type (ints widen to float
    where another scale gives a float; lists become tuples); reading a field it does not have is an
    ``AttributeError`` that lists the fields, and :meth:`replace` rejects unknown fields.  A notebook shows it
    as one line: the scale and every field.
    """

    __slots__ = ("_hints", "_scale", "_values")

    def __init__(self, scale: str, values: Mapping[str, Any], hints: Mapping[str, Any]):
        object.__setattr__(self, "_scale", scale)
        object.__setattr__(self, "_hints", dict(hints))
        object.__setattr__(self, "_values", {k: _coerce(f"sizes.{k} (scale {scale!r})", v, hints[k])
                                             for k, v in values.items()})

    @property
    def scale(self) -> str:
        return self._scale

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"these sizes have no field {name!r}; fields: {', '.join(values)}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("sizes are frozen: use .replace(...) for a modified copy")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sizes) and (self._scale, self._values) == (other._scale, other._values)

    def __hash__(self) -> int:
        return hash((self._scale, tuple(self._values.items())))

    def replace(self, **changes: Any) -> Sizes:
        """A copy with some fields changed (``TypeError`` for a field these sizes do not have)."""
        unknown = sorted(set(changes) - set(self._values))
        if unknown:
            raise TypeError(f"these sizes have no field {', '.join(map(repr, unknown))}; "
                            f"fields: {', '.join(self._values)}")
        return Sizes(self._scale, {**self._values, **changes}, self._hints)

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (for JSON records and digests)."""
        return dict(self._values)

    def __repr__(self) -> str:
        return f"sizes at scale {self._scale!r}: " + "; ".join(f"{k} = {_show(v)}" for k, v in self._values.items())

    def _repr_html_(self) -> str:
        import html

        items = "; ".join(f"{html.escape(k)} = <code>{html.escape(_show(v))}</code>" for k, v in self._values.items())
        return f'<p class="ntkbook-sizes">Sizes at scale <strong>{html.escape(self._scale)}</strong>: {items}</p>'


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return ", ".join(_show(v) for v in value) if value else "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def pick(scale: str | None = None, *, ci: Mapping[str, Any], book: Mapping[str, Any],
         paper: Mapping[str, Any]) -> Sizes:
    """The sizes of one experiment at ``scale`` (:func:`resolve`), declared at all three scales in the chapter.

    ``pick(scale, ci=dict(widths=(32, 64), seeds=3), book=dict(widths=(64, 256, 1024), seeds=5), paper=...)``

    Raises:
        ValueError: for an unknown scale, or when the scales do not declare the same fields.
        TypeError: when a field's values do not share one type (see :class:`Sizes`).
    """
    scale = resolve(scale)
    declared = {"ci": ci, "book": book, "paper": paper}
    for name, values in declared.items():
        V.mapping(name, values)
    fields = list(ci)
    for name, values in declared.items():
        if set(values) != set(fields):
            missing, extra = sorted(set(fields) - set(values)), sorted(set(values) - set(fields))
            raise ValueError(f"the scales must declare the same sizes: {name} lacks {missing} and adds {extra} "
                             f"(compared with ci: {fields})")
    hints = {k: _hint_of(f"sizes.{k}", [declared[s][k] for s in SCALES]) for k in fields}
    return Sizes(scale, {k: declared[scale][k] for k in fields}, hints)


@dataclass(frozen=True, kw_only=True)
class KernelAlongPaths(ExperimentSettings):
    """Sizes of ``kernel_along_paths``: A random-features model vs a tanh network, kernels along random and GD paths."""

    width: int
    num_inputs: int
    path_steps: int
    radius: float
    input_dim: int


@dataclass(frozen=True, kw_only=True)
class Prop23(ExperimentSettings):
    """Sizes of ``prop_2_3``: Points of B(w0, R) for two-hidden-layer tanh networks; ε = max ‖H‖ on each segment."""

    widths: tuple[int, ...]
    radii: tuple[float, ...]
    samples: int
    segment_points: int
    input_dim: int
    tol: float


@dataclass(frozen=True, kw_only=True)
class Norm221Timing(ExperimentSettings):
    """Sizes of ``norm_221_timing``."""

    d1: int
    d2: int
    d3_values: tuple[int, ...]
    repeats: int


@dataclass(frozen=True, kw_only=True)
class Prop21(ExperimentSettings):
    """Sizes of ``prop_2_1``."""

    num_tensors: int
    shape: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class OneHiddenLayer(ExperimentSettings):
    """Sizes of ``one_hidden_layer``."""

    widths: tuple[int, ...]
    inputs: tuple[float, ...]
    seeds: int
    tol: float


@dataclass(frozen=True, kw_only=True)
class RandomDirection(ExperimentSettings):
    """Sizes of ``random_direction``: kernel change of Eq. (8) between w0 and w0 + R·u, u a random unit vector."""

    activations: tuple[str, ...]
    widths: tuple[int, ...]
    seeds: int
    radius: float
    x: float


@dataclass(frozen=True, kw_only=True)
class RangeCheck(ExperimentSettings):
    """Sizes of ``range_check``: ‖H‖ from the compressed operator vs dense (float64, small) and full-parameter Lanczos
    (large).
    """

    small_width: int
    small_models: tuple[str, ...]
    norm_width: int
    large_width: int
    depth: int
    input_dim: int
    tol: float
    reference_method: str


@dataclass(frozen=True, kw_only=True)
class Prop31(ExperimentSettings):
    """Sizes of ``prop_3_1``: Two hidden layers, v fixed (Eq. 16): every factor of Eq. (17) at W0."""

    widths: tuple[int, ...]
    seeds: int
    input_dim: int
    activation: str


@dataclass(frozen=True, kw_only=True)
class HiddenLayers(ExperimentSettings):
    """Sizes of ``hidden_layers``: Lemma F.3 (‖α⁽ˡ⁾‖ in the ball, printed and corrected bound) and Lemma F.4
    (|α_i⁽ˡ⁾| ≤ ln m + |σ(0)| at W₀, exact conditional Gaussian law) for float64 MLPs."""

    activations: tuple[str, ...]
    depths: tuple[int, ...]
    widths: tuple[int, ...]
    seeds: int
    input_dim: int
    radii: tuple[float, ...]
    sphere_points: int


@dataclass(frozen=True, kw_only=True)
class Thm31(ExperimentSettings):
    """Sizes of ``thm_3_1``: ‖H‖ against Theorem 3.1 (and tighter bounds) at W0 and on spheres ‖W − W0‖ = R, v trained.
    """

    depths: tuple[int, ...]
    widths: tuple[int, ...]
    seeds: int
    radii: tuple[float, ...]
    sphere_points: int
    input_dim: int
    activation: str
    tol: float


@dataclass(frozen=True, kw_only=True)
class BreakingOutputChecks(ExperimentSettings):
    """Sizes of ``breaking_output_checks``: Eq. (27)–(28) against autodiff: dense Hessians at a small width, HVPs at a
    large one.
    """

    dense_width: int
    hvp_width: int
    probes: int


@dataclass(frozen=True, kw_only=True)
class BreakingNonlinearOutput(ExperimentSettings):
    """Sizes of ``breaking_nonlinear_output``: One hidden layer (tanh, trained W and v, d = 2) and φ(f); Hessians at
    w₀, trained on 6 points.
    """

    widths: tuple[int, ...]
    seeds: int
    num_inputs: int
    radius: float
    steps: int
    lr_factor: float
    lanczos_steps: int


@dataclass(frozen=True, kw_only=True)
class BreakingEq30(ExperimentSettings):
    """Sizes of ``breaking_eq30``."""

    widths: tuple[int, ...]
    seeds: int
    activations: tuple[str, ...]
    alpha: float


@dataclass(frozen=True, kw_only=True)
class BreakingTheorem41(ExperimentSettings):
    """Sizes of ``breaking_theorem_4_1``: Eq. (109) at W₀ for many initializations of the Eq. (31) network."""

    widths: tuple[int, ...]
    seeds: int
    x: float
    deltas: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class BreakingBottleneckBall(ExperimentSettings):
    """Sizes of ``breaking_bottleneck_ball``: Full ‖H‖ of the Eq. (31) network at W₀ and at three points of B(W₀, R)."""

    widths: tuple[int, ...]
    seeds: int
    x: float
    radius: float
    lanczos_steps: int


@dataclass(frozen=True, kw_only=True)
class BreakingBottleneckWidth(ExperimentSettings):
    """Sizes of ``breaking_bottleneck_width``: (m, m_b, m) tanh–identity–tanh networks: m_b = 1 across m (Table 1), m_b
    across at fixed m.
    """

    widths: tuple[int, ...]
    fixed_width: int
    bottlenecks: tuple[int, ...]
    seeds: int
    num_inputs: int
    radius: float
    steps: int
    lr_factor: float
    lanczos_steps: int


@dataclass(frozen=True, kw_only=True)
class OptimizationTheorem51(ExperimentSettings):
    """Sizes of ``optimization_theorem_5_1``: GD on φ(f), |φ'| ≥ 1/2, one hidden tanh layer, 6 points; kernels tracked
    at every step.
    """

    widths: tuple[int, ...]
    seeds: int
    num_inputs: int
    radius: float
    steps: int
    lr_factor: float


@dataclass(frozen=True, kw_only=True)
class NonlinearOutput(ExperimentSettings):
    """Sizes of ``nonlinear_output``: Figure 1: ΔK of f, softmax(f), swish(f) (Eq. 43–47) against m; ΔK(t) at
    trajectory_width.
    """

    widths: tuple[int, ...]
    runs: int
    runs_per_piece: int
    trajectory_width: int
    max_steps: int
    swish_max_steps: int
    loss_tol: float
    lr_factor: float
    swish_lr_factor: float
    check_steps: int
    per_decade: int
    n: int
    data_seed: int


@dataclass(frozen=True, kw_only=True)
class Bottleneck(ExperimentSettings):
    """Sizes of ``bottleneck``: Figure 2: ΔK of the network of Eq. (48) (widths m, m_b, m) against m_b."""

    width: int
    bottleneck_widths: tuple[int, ...]
    runs: int
    runs_per_piece: int
    max_steps: int
    loss_tol: float
    lr_factor: float
    per_decade: int
    n: int
    data_seed: int


@dataclass(frozen=True, kw_only=True)
class AssemblySmoothness(ExperimentSettings):
    """Sizes of ``assembly_smoothness``: Β = sup ‖H_g‖ over the domain D_R: random search, then projected ascent from
    the best points.
    """

    radius: float
    hidden: int
    samples: int
    starts: int
    steps: int


@dataclass(frozen=True, kw_only=True)
class AssemblyTheorem1(ExperimentSettings):
    """Sizes of ``assembly_theorem1``: Theorem 1 / Lemma 2: quadratic term of Eq. (4) against m, three families × three
    kinds of weights.
    """

    families: tuple[str, ...]
    weights: tuple[str, ...]
    widths: tuple[int, ...]
    seeds: int
    directions: int
    radius: float
    hidden: int
    ascent_steps: int
    refine_steps: int


@dataclass(frozen=True, kw_only=True)
class AssemblyLemma2(ExperimentSettings):
    """Sizes of ``assembly_lemma2``."""

    widths: tuple[int, ...]
    draws: int


@dataclass(frozen=True, kw_only=True)
class AssemblyAssumption1(ExperimentSettings):
    """Sizes of ``assembly_assumption1``: Median/max of |α⁽ˡ⁾| for a 3-hidden-layer tanh network, and an assembly with
    a dominating sub-model.
    """

    network_widths: tuple[int, ...]
    depth: int
    runs: int
    widths: tuple[int, ...]
    seeds: int
    radius: float
    ascent_steps: int
    refine_steps: int


@dataclass(frozen=True, kw_only=True)
class AssemblyTwoLayer(ExperimentSettings):
    """Sizes of ``assembly_two_layer``."""

    width: int


@dataclass(frozen=True, kw_only=True)
class Orthogonality(ExperimentSettings):
    """Sizes of ``orthogonality``: Figure 3 (Appendix B): mean |cos| of neuron gradients vs width; 20 images of two
    classes.
    """

    dataset: str
    classes: tuple[int, ...]
    n_per_class: int
    data_seed: int
    seed: int
    depth: int
    widths: tuple[int, ...]
    bottleneck_widths: tuple[int, ...]
    bottleneck_outer: int
    runs: int
    sampled_neurons: int
    gd_steps: int
    lr_factor: float


@dataclass(frozen=True, kw_only=True)
class OrthogonalityGaussian(ExperimentSettings):
    """Sizes of ``orthogonality_gaussian``: The same measurement on Gaussian inputs (equal-width network only)."""

    dataset: str
    classes: tuple[int, ...]
    n_per_class: int
    data_seed: int
    seed: int
    depth: int
    widths: tuple[int, ...]
    bottleneck_widths: tuple[int, ...]
    bottleneck_outer: int
    runs: int
    sampled_neurons: int
    gd_steps: int
    lr_factor: float


@dataclass(frozen=True, kw_only=True)
class FrameLimit(ExperimentSettings):
    """Sizes of ``frame_limit``: λ_max of the cosine matrix of the layer-2 normals (Eq. 18) with m₂ =
    ``upper_width`` fixed and m₁ over ``lower_widths`` (the paper's sequential limit m₁ → ∞)."""

    upper_width: int
    lower_widths: tuple[int, ...]
    runs: int


@dataclass(frozen=True, kw_only=True)
class NeuronGeometry(ExperimentSettings):
    """Sizes of ``neuron_geometry``: Theorems 2 and 4: turn of neuron gradients in B(θ₀, R), quadratic term of next-
    layer pre-activations.
    """

    dataset: str
    classes: tuple[int, ...]
    n_per_class: int
    data_seed: int
    seed: int
    depth: int
    widths: tuple[int, ...]
    runs: int
    radius: float
    neurons: int
    directions: int
    gd_steps: int
    lr_factor: float
    tol: float
    ascent_steps: int


@dataclass(frozen=True, kw_only=True)
class Densenet(ExperimentSettings):
    """Sizes of ``densenet``: Appendix E: mean |cos| and ‖H_f‖ of a 3-layer DenseNet (Eq. 37) with m new neurons per
    layer.
    """

    dataset: str
    classes: tuple[int, ...]
    n_per_class: int
    data_seed: int
    seed: int
    depth: int
    widths: tuple[int, ...]
    bottleneck_widths: tuple[int, ...]
    bottleneck_outer: int
    runs: int
    sampled_neurons: int
    gd_steps: int
    lr_factor: float
    radius: float
    tol: float


@dataclass(frozen=True, kw_only=True)
class KrIdentity(ExperimentSettings):
    """Sizes of ``kr_identity``: (A∗B)(A∗B)ᵀ = (AAᵀ)⊙(BBᵀ) and X^{∗r} Gram = (XXᵀ)^{⊙r}; σ_min by SVD vs Gram."""

    shapes: tuple[tuple[int, int], ...]
    orders: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class KrSphere(ExperimentSettings):
    """Sizes of ``kr_sphere``: ‖X‖, σ_min(X∗X), κ(X) for data uniform on the sphere; n as fractions of D = d(d+1)/2
    (and n = d).
    """

    ds: tuple[int, ...]
    fractions: tuple[float, ...]
    seeds: int


@dataclass(frozen=True, kw_only=True)
class KrDegenerate(ExperimentSettings):
    """Sizes of ``kr_degenerate``: One nearly duplicated / nearly antipodal pair at angle arctan ε."""

    n: int
    d: int
    epsilons: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class KrDeltaSeparated(ExperimentSettings):
    """Sizes of ``kr_delta_separated``: Thm. I.1 / Cor. I.2 (ReLU) on data of controlled separation δ: a near pair
    and a near antipode at distance δ in n points of S^{d−1}, the half circle with n points, uniform sphere data."""

    n: int
    d: int
    deltas: tuple[float, ...]
    circle_ns: tuple[int, ...]
    sphere_shapes: tuple[tuple[int, int], ...]
    seeds: int


@dataclass(frozen=True, kw_only=True)
class CovRoutes(ExperimentSettings):
    """Sizes of ``cov_routes``: Σ(X), Σ̃(X): closed form / Hermite series vs 2-D Gauss–Hermite vs Monte Carlo."""

    n: int
    d: int
    activations: tuple[str, ...]
    samples: int
    degree: int


@dataclass(frozen=True, kw_only=True)
class HermiteTable(ExperimentSettings):
    """Sizes of ``hermite_table``."""

    r_max: int


@dataclass(frozen=True, kw_only=True)
class Lemma64(ExperimentSettings):
    """Sizes of ``lemma_6_4``: PSD margins of Eq. (6.4) and λ(X) ≥ μ²σ²_min(X∗X) on sphere data of each (n, d)."""

    shapes: tuple[tuple[int, int], ...]
    activations: tuple[str, ...]
    degree: int


@dataclass(frozen=True, kw_only=True)
class HermiteBounds(ExperimentSettings):
    """Sizes of ``hermite_bounds``: Lemmas H.1/H.2: μ_r²σ²_min(X^{∗(r+1)}) for r = orders, across n at fixed d."""

    d: int
    ns: tuple[int, ...]
    orders: tuple[int, ...]
    degree: int


@dataclass(frozen=True, kw_only=True)
class Schur(ExperimentSettings):
    """Sizes of ``schur``."""

    n: int
    pairs: int


@dataclass(frozen=True, kw_only=True)
class JacobianVsK(ExperimentSettings):
    """Sizes of ``jacobian_vs_k``: Lemmas 6.6–6.7 at W₀ across widths (even k); the width k* of Lemma 6.7's condition
    is added.
    """

    n: int
    d: int
    widths: tuple[int, ...]
    seeds: int


@dataclass(frozen=True, kw_only=True)
class JacobianLipschitz(ExperimentSettings):
    """Sizes of ``jacobian_lipschitz``: Lemma 6.8 on random pairs W, W + tΔ."""

    n: int
    d: int
    k: int
    distances: tuple[float, ...]
    seeds: int


@dataclass(frozen=True, kw_only=True)
class RandomFeatures(ExperimentSettings):
    """Sizes of ``random_features``: Theorem 3.2: λ_min(ΦΦᵀ) against ½k(λ̃(X) − 6B/n¹⁰⁰) across widths k."""

    n: int
    d: int
    widths: tuple[int, ...]
    seeds: int


@dataclass(frozen=True, kw_only=True)
class GdModerate(ExperimentSettings):
    """Sizes of ``gd_moderate``: Theorems 2.1 (softplus) and 2.3 (ReLU) at the theorems' step sizes, one data set,
    several widths.
    """

    n: int
    d: int
    widths: tuple[int, ...]
    steps: int
    activations: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class InitialMisfit(ExperimentSettings):
    """Sizes of ``initial_misfit``: Lemma 6.12 by Monte Carlo, ‖f(W₀) − y‖ over ``draws`` draws of W₀ (even k),
    the tail frequencies at each δ of ``deltas``; ``batch`` draws per compiled call."""

    n: int
    d: int
    k: int
    draws: int
    batch: int
    deltas: tuple[float, ...]
    activations: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class SgdModerate(ExperimentSettings):
    """Sizes of ``sgd_moderate``: Theorem 2.6: SGD at its step size (ν = 8) and at the GD step of Corollary 2.2, `runs`
    index sequences.
    """

    n: int
    d: int
    k: int
    nu: float
    runs: int
    epochs: int
    record_every_epoch: int


@dataclass(frozen=True, kw_only=True)
class PhaseTransition(ExperimentSettings):
    """Sizes of ``phase_transition``: Figure 2: P(GD fits n random labels) over (k, d); η = 0.15 softplus / 0.1 ReLU;
    one piece per column.
    """

    n_values: tuple[int, ...]
    activations: tuple[str, ...]
    ks: tuple[int, ...]
    ds: tuple[int, ...]
    trials: int
    max_iters: int
    tol: float
    chunk: int


TABLE: dict[str, dict[str, ExperimentSettings]] = {
    # Chapter 1 — the tangent kernel and linearity -------------------------------------------
    "kernel_along_paths": {
        # a random-features model vs a tanh network, kernels along random and GD paths
        "ci": KernelAlongPaths(width=64, num_inputs=8, path_steps=20, radius=10.0, input_dim=2),
        "book": KernelAlongPaths(width=512, num_inputs=16, path_steps=100, radius=10.0, input_dim=2),
        "paper": KernelAlongPaths(width=4096, num_inputs=32, path_steps=400, radius=10.0, input_dim=2),
    },
    "prop_2_3": {
        # points of B(w0, R) for two-hidden-layer tanh networks; ε = max ‖H‖ on each segment
        "ci": Prop23(widths=(32, 128), radii=(1.0, 4.0), samples=2, segment_points=3, input_dim=2, tol=1e-3),
        "book": Prop23(
            widths=(64, 256, 1024), radii=(0.5, 2.0, 8.0), samples=2, segment_points=5, input_dim=2, tol=1e-3
        ),
        "paper": Prop23(
            widths=(64, 256, 1024, 4096),
            radii=(0.5, 2.0, 8.0, 32.0),
            samples=10,
            segment_points=9,
            input_dim=2,
            tol=1e-4,
        ),
    },
    # Chapter 2 — the (2,2,1)-norm and the one-hidden-layer network ----------------------------
    "norm_221_timing": {
        "ci": Norm221Timing(d1=8, d2=8, d3_values=(2, 4, 6, 8, 10), repeats=2),
        "book": Norm221Timing(d1=16, d2=16, d3_values=(2, 4, 6, 8, 10, 12, 14, 16), repeats=3),
        "paper": Norm221Timing(d1=32, d2=32, d3_values=(2, 4, 6, 8, 10, 12, 14, 16), repeats=5),
    },
    "prop_2_1": {
        "ci": Prop21(num_tensors=20, shape=(5, 4, 6)),
        "book": Prop21(num_tensors=200, shape=(8, 6, 10)),
        "paper": Prop21(num_tensors=1000, shape=(12, 10, 14)),
    },
    "random_direction": {
        # exercise ex-2-relu: ReLU and tanh kernel change in a random direction of radius R
        "ci": RandomDirection(activations=("relu", "tanh"), widths=(64, 256, 1024, 4096), seeds=40, radius=1.0,
                              x=1.0),
        "book": RandomDirection(activations=("relu", "tanh"), widths=(256, 512, 1024, 2048, 4096, 8192, 16384),
                                seeds=200, radius=1.0, x=1.0),
        "paper": RandomDirection(activations=("relu", "tanh"), widths=(256, 1024, 4096, 16384, 65536, 262144),
                                 seeds=1000, radius=1.0, x=1.0),
    },
    "one_hidden_layer": {
        "ci": OneHiddenLayer(widths=(10, 30, 100, 300, 1000), inputs=(0.5, 1.0, 2.0), seeds=2, tol=1e-4),
        "book": OneHiddenLayer(
            widths=(10, 30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000), inputs=(0.5, 1.0, 2.0), seeds=5, tol=1e-4
        ),
        "paper": OneHiddenLayer(
            widths=(10, 100, 1000, 10_000, 100_000, 1_000_000), inputs=(0.5, 1.0, 2.0), seeds=10, tol=1e-5
        ),
    },
    # Chapter 3 — transition to linearity with a linear output layer (2020, Section 3) ----------
    "range_check": {
        # ‖H‖ from the compressed operator vs dense (float64, small) and full-parameter Lanczos (large)
        "ci": RangeCheck(
            small_width=8,
            small_models=("MLP", "ResNet"),
            norm_width=8,
            large_width=64,
            depth=3,
            input_dim=4,
            tol=1e-6,
            reference_method="full",
        ),
        "book": RangeCheck(
            small_width=12,
            small_models=("MLP", "ResNet"),
            norm_width=10,
            large_width=256,
            depth=3,
            input_dim=4,
            tol=1e-6,
            reference_method="full-lanczos",
        ),
        "paper": RangeCheck(
            small_width=16,
            small_models=("MLP", "ResNet"),
            norm_width=12,
            large_width=1024,
            depth=3,
            input_dim=4,
            tol=1e-7,
            reference_method="full-lanczos",
        ),
    },
    "prop_3_1": {
        # two hidden layers, v fixed (Eq. 16): every factor of Eq. (17) at W0
        "ci": Prop31(widths=(32, 64, 128, 256), seeds=2, input_dim=4, activation="tanh"),
        "book": Prop31(widths=(32, 64, 128, 256, 512, 1024), seeds=2, input_dim=4, activation="tanh"),
        "paper": Prop31(widths=(32, 64, 128, 256, 512, 1024, 2048, 4096), seeds=5, input_dim=4, activation="tanh"),
    },
    "hidden_layers": {
        # Lemmas F.3 and F.4: hidden-layer norms (W₀ and spheres ‖W − W₀‖ = R) and coordinates at W₀
        "ci": HiddenLayers(activations=("softplus", "relu"), depths=(2, 3), widths=(32, 128, 512), seeds=1,
                           input_dim=4, radii=(2.0,), sphere_points=1),
        "book": HiddenLayers(activations=("softplus", "relu"), depths=(2, 3, 4), widths=(32, 128, 512, 1024),
                             seeds=2, input_dim=4, radii=(1.0, 4.0), sphere_points=1),
        "paper": HiddenLayers(activations=("softplus", "relu", "tanh"), depths=(2, 3, 4),
                              widths=(32, 128, 512, 2048, 4096), seeds=5, input_dim=4, radii=(1.0, 4.0, 16.0),
                              sphere_points=3),
    },
    "thm_3_1": {
        # ‖H‖ against Theorem 3.1 (and tighter bounds) at W0 and on spheres ‖W − W0‖ = R, v trained
        "ci": Thm31(
            depths=(2, 3, 4),
            widths=(16, 64),
            seeds=2,
            radii=(2.0,),
            sphere_points=1,
            input_dim=4,
            activation="tanh",
            tol=1e-6,
        ),
        "book": Thm31(
            depths=(2, 3, 4),
            widths=(32, 128, 512),
            seeds=2,
            radii=(1.0, 4.0),
            sphere_points=1,
            input_dim=4,
            activation="tanh",
            tol=1e-6,
        ),
        "paper": Thm31(
            depths=(2, 3, 4),
            widths=(32, 128, 512, 2048),
            seeds=5,
            radii=(1.0, 4.0, 16.0),
            sphere_points=3,
            input_dim=4,
            activation="tanh",
            tol=1e-6,
        ),
    },
    # Chapters 4–5 — what breaks linearity; lazy training (2020, Sections 1.1, 4, 5, App. A) --
    "breaking_output_checks": {
        # Eq. (27)–(28) against autodiff: dense Hessians at a small width, HVPs at a large one
        "ci": BreakingOutputChecks(dense_width=12, hvp_width=2000, probes=2),
        "book": BreakingOutputChecks(dense_width=24, hvp_width=20000, probes=4),
        "paper": BreakingOutputChecks(dense_width=32, hvp_width=200000, probes=8),
    },
    "breaking_nonlinear_output": {
        # one hidden layer (tanh, trained W and v, d = 2) and φ(f); Hessians at w₀, trained on 6 points
        "ci": BreakingNonlinearOutput(
            widths=(64, 1024), seeds=4, num_inputs=6, radius=3.0, steps=400, lr_factor=1.0, lanczos_steps=20
        ),
        "book": BreakingNonlinearOutput(
            widths=(64, 256, 1024, 4096, 16384),
            seeds=6,
            num_inputs=6,
            radius=3.0,
            steps=500,
            lr_factor=1.0,
            lanczos_steps=20,
        ),
        "paper": BreakingNonlinearOutput(
            widths=(64, 256, 1024, 4096, 16384, 65536, 262144),
            seeds=10,
            num_inputs=6,
            radius=3.0,
            steps=800,
            lr_factor=1.0,
            lanczos_steps=30,
        ),
    },
    "breaking_eq30": {
        "ci": BreakingEq30(widths=(10, 1000), seeds=3, activations=("tanh", "quadratic"), alpha=0.8),
        "book": BreakingEq30(widths=(10, 100, 1000, 10_000), seeds=4, activations=("tanh", "quadratic"), alpha=0.8),
        "paper": BreakingEq30(
            widths=(10, 100, 1000, 10_000, 100_000), seeds=10, activations=("tanh", "quadratic"), alpha=0.8
        ),
    },
    "breaking_theorem_4_1": {
        # Eq. (109) at W₀ for many initializations of the Eq. (31) network
        "ci": BreakingTheorem41(
            widths=(64, 4096), seeds=400, x=1.0, deltas=(0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.45, 0.49)
        ),
        "book": BreakingTheorem41(
            widths=(16, 64, 256, 1024, 4096, 16384),
            seeds=2000,
            x=1.0,
            deltas=(0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.45, 0.49),
        ),
        "paper": BreakingTheorem41(
            widths=(16, 64, 256, 1024, 4096, 16384, 65536, 262144),
            seeds=10_000,
            x=1.0,
            deltas=(0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.45, 0.49),
        ),
    },
    "breaking_bottleneck_ball": {
        # full ‖H‖ of the Eq. (31) network at W₀ and at three points of B(W₀, R)
        "ci": BreakingBottleneckBall(widths=(64, 1024), seeds=12, x=1.0, radius=1.0, lanczos_steps=30),
        "book": BreakingBottleneckBall(
            widths=(64, 256, 1024, 4096, 16384), seeds=16, x=1.0, radius=1.0, lanczos_steps=40
        ),
        "paper": BreakingBottleneckBall(
            widths=(64, 256, 1024, 4096, 16384, 65536, 262144), seeds=32, x=1.0, radius=1.0, lanczos_steps=60
        ),
    },
    "breaking_bottleneck_width": {
        # (m, m_b, m) tanh–identity–tanh networks: m_b = 1 across m (Table 1), m_b across at fixed m
        "ci": BreakingBottleneckWidth(
            widths=(64, 1024),
            fixed_width=1024,
            bottlenecks=(1, 16),
            seeds=16,
            num_inputs=6,
            radius=3.0,
            steps=400,
            lr_factor=0.5,
            lanczos_steps=30,
        ),
        "book": BreakingBottleneckWidth(
            widths=(64, 256, 1024),
            fixed_width=1024,
            bottlenecks=(1, 4, 16, 64),
            seeds=16,
            num_inputs=6,
            radius=3.0,
            steps=800,
            lr_factor=0.5,
            lanczos_steps=30,
        ),
        "paper": BreakingBottleneckWidth(
            widths=(64, 256, 1024, 4096),
            fixed_width=4096,
            bottlenecks=(1, 3, 10, 50, 100, 500),
            seeds=10,
            num_inputs=6,
            radius=3.0,
            steps=3000,
            lr_factor=0.5,
            lanczos_steps=40,
        ),
    },
    "optimization_theorem_5_1": {
        # GD on φ(f), |φ'| ≥ 1/2, one hidden tanh layer, 6 points; kernels tracked at every step
        "ci": OptimizationTheorem51(widths=(64, 1024), seeds=3, num_inputs=6, radius=3.0, steps=1500, lr_factor=1.0),
        "book": OptimizationTheorem51(
            widths=(64, 256, 1024, 4096, 16384), seeds=6, num_inputs=6, radius=3.0, steps=2000, lr_factor=1.0
        ),
        "paper": OptimizationTheorem51(
            widths=(64, 256, 1024, 4096, 16384, 65536, 262144),
            seeds=10,
            num_inputs=6,
            radius=3.0,
            steps=3000,
            lr_factor=1.0,
        ),
    },
    # Chapter 6 — reproduction of the 2020 experiments (Section 6, Appendix B) -----------------
    "nonlinear_output": {
        # Figure 1: ΔK of f, softmax(f), swish(f) (Eq. 43–47) against m; ΔK(t) at trajectory_width.
        # max_steps: the cap of the cross-entropy runs (they stop at loss < loss_tol = 1e-4, the
        # paper's rule, after about 1.3·10⁴ steps); swish_max_steps: the cap of the swish runs, which
        # need far more (0.6–1.8·10⁵ steps with the measured-curvature step, c = swish_lr_factor;
        # see linearity_experiments.step_cap); both caps are guards: a run stops at the rule or is stuck.
        # check_steps: the cap of the swish reruns with c/2 in the step-size check (the path's first
        # check_steps/2 steps with c are compared).  book stops at m = 1000: a swish run at m = 10⁴
        # costs 2.6 ms of CPU per step and needs 0.7 to more than 3·10⁵ steps (seed 1 had loss
        # 5.7e-4 at 3·10⁵), i.e. 3 to 15 minutes per run on this 2-core machine
        "ci": NonlinearOutput(
            widths=(30, 100, 300),
            runs=2,
            runs_per_piece=2,
            trajectory_width=300,
            max_steps=30_000,
            swish_max_steps=200_000,
            loss_tol=1e-4,
            lr_factor=1.0,
            swish_lr_factor=1.8,
            check_steps=2_000,
            per_decade=12,
            n=60,
            data_seed=0,
        ),
        "book": NonlinearOutput(
            widths=(30, 100, 300, 1000),
            runs=2,
            runs_per_piece=2,
            trajectory_width=1000,
            max_steps=40_000,
            swish_max_steps=300_000,
            loss_tol=1e-4,
            lr_factor=1.0,
            swish_lr_factor=1.8,
            check_steps=10_000,
            per_decade=12,
            n=60,
            data_seed=0,
        ),
        "paper": NonlinearOutput(
            widths=(30, 100, 1000, 10_000, 100_000, 1_000_000),
            runs=10,
            runs_per_piece=10,
            trajectory_width=10_000,
            max_steps=1_000_000,
            swish_max_steps=2_000_000,
            loss_tol=1e-4,
            lr_factor=1.0,
            swish_lr_factor=1.8,
            check_steps=20_000,
            per_decade=12,
            n=60,
            data_seed=0,
        ),
    },
    "bottleneck": {
        # Figure 2: ΔK of the network of Eq. (48) (widths m, m_b, m) against m_b; every run stops at
        # loss < 1e-4 (about 3·10³ steps at m = 300) well before max_steps;
        # m_b ≤ m/30 at every scale
        "ci": Bottleneck(
            width=1000,
            bottleneck_widths=(3, 10, 30),
            runs=2,
            runs_per_piece=2,
            max_steps=30_000,
            loss_tol=1e-4,
            lr_factor=1.0,
            per_decade=12,
            n=60,
            data_seed=0,
        ),
        "book": Bottleneck(
            width=10_000,
            bottleneck_widths=(3, 5, 10, 50, 100),
            runs=2,
            runs_per_piece=2,
            max_steps=40_000,
            loss_tol=1e-4,
            lr_factor=1.0,
            per_decade=12,
            n=60,
            data_seed=0,
        ),
        "paper": Bottleneck(
            width=10_000,
            bottleneck_widths=(3, 5, 10, 50, 100, 500, 1000),
            runs=10,
            runs_per_piece=10,
            max_steps=1_000_000,
            loss_tol=1e-4,
            lr_factor=1.0,
            per_decade=12,
            n=60,
            data_seed=0,
        ),
    },
    # Chapter 7 — assembling weak models (2022) ---------------------------------------------
    "assembly_smoothness": {
        # β = sup ‖H_g‖ over the domain D_R: random search, then projected ascent from the best points
        "ci": AssemblySmoothness(radius=2.0, hidden=3, samples=2048, starts=0, steps=0),
        "book": AssemblySmoothness(radius=2.0, hidden=3, samples=8192, starts=16, steps=150),
        "paper": AssemblySmoothness(radius=2.0, hidden=3, samples=65536, starts=64, steps=400),
    },
    "assembly_theorem1": {
        # Theorem 1 / Lemma 2: quadratic term of Eq. (4) against m, three families × three kinds of weights
        "ci": AssemblyTheorem1(
            families=("neuron", "mlp", "square"),
            weights=("ones", "signs", "gaussian"),
            widths=(10, 100, 1000),
            seeds=1,
            directions=4,
            radius=2.0,
            hidden=3,
            ascent_steps=20,
            refine_steps=20,
        ),
        "book": AssemblyTheorem1(
            families=("neuron", "mlp", "square"),
            weights=("ones", "signs", "gaussian"),
            widths=(10, 30, 100, 300, 1000, 3000),
            seeds=2,
            directions=4,
            radius=2.0,
            hidden=3,
            ascent_steps=30,
            refine_steps=30,
        ),
        "paper": AssemblyTheorem1(
            families=("neuron", "mlp", "square"),
            weights=("ones", "signs", "gaussian"),
            widths=(10, 30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000),
            seeds=5,
            directions=16,
            radius=2.0,
            hidden=3,
            ascent_steps=100,
            refine_steps=100,
        ),
    },
    "assembly_lemma2": {
        "ci": AssemblyLemma2(widths=(10, 20, 30, 50, 100, 1000), draws=4000),
        "book": AssemblyLemma2(widths=(10, 20, 30, 50, 100, 300, 1000), draws=20_000),
        "paper": AssemblyLemma2(widths=(10, 20, 30, 50, 100, 300, 1000), draws=1_000_000),
    },
    "assembly_assumption1": {
        # median/max of |α⁽ˡ⁾| for a 3-hidden-layer tanh network, and an assembly with a dominating sub-model
        "ci": AssemblyAssumption1(
            network_widths=(16, 64, 256),
            depth=3,
            runs=1,
            widths=(10, 100, 1000),
            seeds=1,
            radius=2.0,
            ascent_steps=20,
            refine_steps=20,
        ),
        "book": AssemblyAssumption1(
            network_widths=(16, 64, 256, 1024),
            depth=3,
            runs=2,
            widths=(10, 100, 1000, 3000),
            seeds=2,
            radius=2.0,
            ascent_steps=30,
            refine_steps=30,
        ),
        "paper": AssemblyAssumption1(
            network_widths=(16, 64, 256, 1024, 4096, 16_384),
            depth=3,
            runs=5,
            widths=(10, 100, 1000, 10_000, 100_000),
            seeds=5,
            radius=2.0,
            ascent_steps=100,
            refine_steps=100,
        ),
    },
    "assembly_two_layer": {
        "ci": AssemblyTwoLayer(width=8),
        "book": AssemblyTwoLayer(width=16),
        "paper": AssemblyTwoLayer(width=40),
    },
    "orthogonality": {
        # Figure 3 (Appendix B): mean |cos| of neuron gradients vs width; 20 images of two classes
        "ci": Orthogonality(
            dataset="digits",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=0,
            depth=3,
            widths=(16, 32, 64),
            bottleneck_widths=(8, 16, 32),
            bottleneck_outer=64,
            runs=2,
            sampled_neurons=64,
            gd_steps=20,
            lr_factor=1.0,
        ),
        "book": Orthogonality(
            dataset="digits",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=0,
            depth=3,
            widths=(16, 32, 64, 128, 256, 512),
            bottleneck_widths=(8, 16, 32, 64, 128, 256),
            bottleneck_outer=256,
            runs=2,
            sampled_neurons=128,
            gd_steps=200,
            lr_factor=1.0,
        ),
        "paper": Orthogonality(
            dataset="digits",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=0,
            depth=3,
            widths=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
            bottleneck_widths=(8, 16, 32, 64, 128, 256, 512, 1000),
            bottleneck_outer=1000,
            runs=5,
            sampled_neurons=512,
            gd_steps=1000,
            lr_factor=1.0,
        ),
    },
    "orthogonality_gaussian": {
        # the same measurement on Gaussian inputs (equal-width network only)
        "ci": OrthogonalityGaussian(
            dataset="gaussian",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=1,
            depth=3,
            widths=(16, 32, 64),
            bottleneck_widths=(),
            bottleneck_outer=64,
            runs=1,
            sampled_neurons=64,
            gd_steps=20,
            lr_factor=1.0,
        ),
        "book": OrthogonalityGaussian(
            dataset="gaussian",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=1,
            depth=3,
            widths=(16, 64, 256),
            bottleneck_widths=(),
            bottleneck_outer=256,
            runs=2,
            sampled_neurons=128,
            gd_steps=200,
            lr_factor=1.0,
        ),
        "paper": OrthogonalityGaussian(
            dataset="gaussian",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=1,
            depth=3,
            widths=(16, 64, 256, 1024, 4096),
            bottleneck_widths=(),
            bottleneck_outer=1000,
            runs=5,
            sampled_neurons=512,
            gd_steps=1000,
            lr_factor=1.0,
        ),
    },
    "frame_limit": {
        # Eq. 18 in the paper's sequential limit: m_l fixed, m_{l-1} → ∞
        "ci": FrameLimit(upper_width=64, lower_widths=(128, 1024, 8192), runs=2),
        "book": FrameLimit(upper_width=64, lower_widths=(128, 512, 2048, 8192), runs=4),
        "paper": FrameLimit(upper_width=64, lower_widths=(128, 512, 2048, 8192, 32768), runs=8),
    },
    "neuron_geometry": {
        # Theorems 2 and 4: turn of neuron gradients in B(θ₀, R), quadratic term of next-layer pre-activations
        "ci": NeuronGeometry(
            dataset="digits",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=0,
            depth=3,
            widths=(32, 256),
            runs=1,
            radius=2.0,
            neurons=2,
            directions=2,
            gd_steps=20,
            lr_factor=1.0,
            tol=1e-3,
            ascent_steps=15,
        ),
        "book": NeuronGeometry(
            dataset="digits",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=0,
            depth=3,
            widths=(32, 128, 512),
            runs=2,
            radius=2.0,
            neurons=3,
            directions=3,
            gd_steps=200,
            lr_factor=1.0,
            tol=1e-3,
            ascent_steps=15,
        ),
        "paper": NeuronGeometry(
            dataset="digits",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=0,
            depth=3,
            widths=(32, 64, 128, 256, 512, 1024, 2048, 4096),
            runs=3,
            radius=2.0,
            neurons=8,
            directions=8,
            gd_steps=1000,
            lr_factor=1.0,
            tol=1e-4,
            ascent_steps=40,
        ),
    },
    "densenet": {
        # Appendix E: mean |cos| and ‖H_f‖ of a 3-layer DenseNet (Eq. 37) with m new neurons per layer
        "ci": Densenet(
            dataset="digits",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=2,
            depth=3,
            widths=(128, 512),
            bottleneck_widths=(),
            bottleneck_outer=0,
            runs=1,
            sampled_neurons=64,
            gd_steps=20,
            lr_factor=1.0,
            radius=2.0,
            tol=1e-3,
        ),
        "book": Densenet(
            dataset="digits",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=2,
            depth=3,
            widths=(128, 256, 512, 1024),
            bottleneck_widths=(),
            bottleneck_outer=0,
            runs=1,
            sampled_neurons=128,
            gd_steps=200,
            lr_factor=1.0,
            radius=2.0,
            tol=1e-3,
        ),
        "paper": Densenet(
            dataset="digits",
            classes=(3, 8),
            n_per_class=10,
            data_seed=0,
            seed=2,
            depth=3,
            widths=(128, 256, 512, 1024, 2048, 4096),
            bottleneck_widths=(),
            bottleneck_outer=0,
            runs=3,
            sampled_neurons=512,
            gd_steps=1000,
            lr_factor=1.0,
            radius=2.0,
            tol=1e-4,
        ),
    },
    # Chapters 8–9 — Khatri–Rao products and moderate overparameterization (Oymak & Soltanolkotabi)
    "kr_identity": {
        # (A∗B)(A∗B)ᵀ = (AAᵀ)⊙(BBᵀ) and X^{∗r} Gram = (XXᵀ)^{⊙r}; σ_min by SVD vs Gram
        "ci": KrIdentity(shapes=((6, 3), (10, 4)), orders=(1, 2, 3)),
        "book": KrIdentity(shapes=((6, 3), (10, 4), (20, 5)), orders=(1, 2, 3)),
        "paper": KrIdentity(shapes=((6, 3), (10, 4), (20, 5), (40, 6)), orders=(1, 2, 3, 4)),
    },
    "kr_sphere": {
        # ‖X‖, σ_min(X∗X), κ(X) for data uniform on the sphere; n as fractions of D = d(d+1)/2 (and n = d)
        "ci": KrSphere(ds=(8, 16), fractions=(0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.2), seeds=2),
        "book": KrSphere(
            ds=(10, 20, 40), fractions=(0.02, 0.05, 0.1, 0.175, 0.25, 0.35, 0.5, 0.65, 0.8, 0.9, 1.0, 1.1), seeds=3
        ),
        "paper": KrSphere(
            ds=(10, 20, 40, 60), fractions=(0.02, 0.05, 0.1, 0.175, 0.25, 0.35, 0.5, 0.65, 0.8, 0.9, 1.0, 1.1), seeds=5
        ),
    },
    "kr_degenerate": {
        # one nearly duplicated / nearly antipodal pair at angle arctan ε
        "ci": KrDegenerate(n=20, d=10, epsilons=(1e-4, 1e-3, 1e-2, 1e-1)),
        "book": KrDegenerate(n=40, d=16, epsilons=(1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)),
        "paper": KrDegenerate(n=100, d=30, epsilons=(1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)),
    },
    "kr_delta_separated": {
        # Thm. I.1 / Cor. I.2: λ(X) of ReLU and λ_min(E[ℐℐᵀ]) against δ/(100n²); pair distances δ ≤ 1e-2 (the
        # δ-exponent is fitted there: relative corrections ≈ πδ/2 ≤ 2%)
        "ci": KrDeltaSeparated(n=20, d=10, deltas=(1e-4, 1e-3, 1e-2), circle_ns=(2, 4, 8, 16, 32, 64),
                               sphere_shapes=((10, 5), (20, 5), (40, 10), (50, 3)), seeds=2),
        "book": KrDeltaSeparated(n=40, d=16, deltas=(1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2),
                                 circle_ns=(2, 4, 8, 16, 32, 64, 128, 256),
                                 sphere_shapes=((10, 5), (20, 5), (40, 10), (50, 3), (100, 10), (200, 3), (100, 30)),
                                 seeds=5),
        "paper": KrDeltaSeparated(n=100, d=30, deltas=(1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2),
                                  circle_ns=(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
                                  sphere_shapes=((10, 5), (20, 5), (40, 10), (50, 3), (100, 10), (200, 3), (100, 30),
                                                 (400, 20), (1000, 3)),
                                  seeds=10),
    },
    "cov_routes": {
        # Σ(X), Σ̃(X): closed form / Hermite series vs 2-D Gauss–Hermite vs Monte Carlo
        "ci": CovRoutes(n=12, d=6, activations=("softplus", "relu", "tanh", "quadratic"), samples=20_000, degree=96),
        "book": CovRoutes(n=30, d=8, activations=("softplus", "relu", "tanh", "quadratic"), samples=200_000, degree=96),
        "paper": CovRoutes(
            n=60, d=10, activations=("softplus", "relu", "tanh", "quadratic"), samples=2_000_000, degree=128
        ),
    },
    "hermite_table": {
        "ci": HermiteTable(r_max=8),
        "book": HermiteTable(r_max=12),
        "paper": HermiteTable(r_max=20),
    },
    "lemma_6_4": {
        # PSD margins of Eq. (6.4) and λ(X) ≥ μ²σ²_min(X∗X) on sphere data of each (n, d)
        "ci": Lemma64(shapes=((20, 8), (40, 8)), activations=("softplus", "relu", "tanh", "quadratic"), degree=96),
        "book": Lemma64(
            shapes=((30, 8), (60, 8), (40, 20), (150, 20)),
            activations=("softplus", "relu", "tanh", "quadratic"),
            degree=96,
        ),
        "paper": Lemma64(
            shapes=((30, 8), (60, 8), (40, 20), (150, 20), (300, 40), (800, 40)),
            activations=("softplus", "relu", "tanh", "quadratic"),
            degree=96,
        ),
    },
    "hermite_bounds": {
        # Lemmas H.1/H.2: μ_r²σ²_min(X^{∗(r+1)}) for r = orders, across n at fixed d
        "ci": HermiteBounds(d=5, ns=(3, 5, 10, 15, 20, 30, 50, 70, 100), orders=(0, 1, 2, 3, 4, 5), degree=96),
        "book": HermiteBounds(
            d=5, ns=(3, 5, 8, 12, 15, 20, 30, 40, 55, 70, 90, 126, 160, 210), orders=(0, 1, 2, 3, 4, 5, 6, 7), degree=96
        ),
        "paper": HermiteBounds(
            d=6,
            ns=(3, 6, 10, 15, 21, 30, 45, 56, 80, 126, 180, 252, 350, 462),
            orders=(0, 1, 2, 3, 4, 5, 6, 7),
            degree=96,
        ),
    },
    "schur": {
        "ci": Schur(n=8, pairs=20),
        "book": Schur(n=20, pairs=200),
        "paper": Schur(n=50, pairs=1000),
    },
    "jacobian_vs_k": {
        # Lemmas 6.6–6.7 at W₀ across widths (even k); the width k* of Lemma 6.7's condition is added
        "ci": JacobianVsK(n=20, d=10, widths=(4, 64, 1024), seeds=2),
        "book": JacobianVsK(n=40, d=20, widths=(4, 8, 16, 32, 64, 128, 256, 1024, 4096), seeds=3),
        "paper": JacobianVsK(n=100, d=30, widths=(4, 8, 16, 32, 64, 128, 256, 1024, 4096, 16384), seeds=5),
    },
    "jacobian_lipschitz": {
        # Lemma 6.8 on random pairs W, W + tΔ
        "ci": JacobianLipschitz(n=20, d=10, k=32, distances=(0.01, 0.1, 1.0, 10.0), seeds=2),
        "book": JacobianLipschitz(n=40, d=20, k=128, distances=(0.001, 0.01, 0.1, 1.0, 10.0, 100.0), seeds=3),
        "paper": JacobianLipschitz(n=100, d=30, k=512, distances=(0.001, 0.01, 0.1, 1.0, 10.0, 100.0), seeds=5),
    },
    "random_features": {
        # Theorem 3.2: λ_min(ΦΦᵀ) against ½k(λ̃(X) − 6B/n¹⁰⁰) across widths k
        "ci": RandomFeatures(n=20, d=10, widths=(5, 80, 1280), seeds=2),
        "book": RandomFeatures(n=40, d=20, widths=(10, 40, 160, 640, 2560, 10240, 40960), seeds=3),
        "paper": RandomFeatures(n=100, d=30, widths=(25, 100, 400, 1600, 6400, 25600, 102400), seeds=5),
    },
    "gd_moderate": {
        # Theorems 2.1 (softplus) and 2.3 (ReLU) at the theorems' step sizes, one data set, several widths
        "ci": GdModerate(n=20, d=10, widths=(10, 40, 160, 640), steps=2000, activations=("softplus", "relu")),
        "book": GdModerate(n=40, d=20, widths=(10, 40, 160, 640, 2560), steps=12_000, activations=("softplus", "relu")),
        "paper": GdModerate(
            n=100, d=30, widths=(20, 80, 320, 1280, 5120, 20480), steps=40_000, activations=("softplus", "relu")
        ),
    },
    "initial_misfit": {
        # Lemma 6.12: P(‖f(W₀)−y‖ > ‖y‖(1+(1+δ)B)) ≤ e^{−δ²n/(2‖X‖²)} and Eq. (6.19), frequencies over draws of W₀
        "ci": InitialMisfit(n=20, d=10, k=50, draws=2000, batch=500, deltas=(0.1, 0.2, 0.3, 0.5, 0.75, 1.0),
                            activations=("softplus", "relu")),
        "book": InitialMisfit(n=50, d=10, k=100, draws=10_000, batch=1000, deltas=(0.1, 0.2, 0.3, 0.5, 0.75, 1.0),
                              activations=("softplus", "relu")),
        "paper": InitialMisfit(n=100, d=20, k=1000, draws=100_000, batch=1000,
                               deltas=(0.1, 0.2, 0.3, 0.5, 0.75, 1.0), activations=("softplus", "relu")),
    },
    "sgd_moderate": {
        # Theorem 2.6: SGD at its step size (ν = 8) and at the GD step of Corollary 2.2, `runs` index sequences
        "ci": SgdModerate(n=20, d=10, k=160, nu=8.0, runs=4, epochs=50, record_every_epoch=5),
        "book": SgdModerate(n=40, d=20, k=640, nu=8.0, runs=8, epochs=200, record_every_epoch=5),
        "paper": SgdModerate(n=100, d=30, k=2560, nu=8.0, runs=16, epochs=400, record_every_epoch=10),
    },
    "phase_transition": {
        # Figure 2: P(GD fits n random labels) over (k, d); η = 0.15 softplus / 0.1 ReLU; one piece per column.
        # ci: every other column d (a failing run costs all 15 000 iterations: the ten columns took 41 s of
        # CPU, most of chapter 9 at ci; the corners and a crossing per column need no more)
        "ci": PhaseTransition(
            n_values=(20,),
            activations=("softplus", "relu"),
            ks=tuple(range(1, 11)),
            ds=(2, 4, 6, 8, 10),
            trials=3,
            max_iters=15_000,
            tol=2.5e-3,
            chunk=15_000,
        ),
        # the paper's n = 100, widths 1..25 and 10 trials, on two columns d spanning the transition
        "book": PhaseTransition(
            n_values=(100,),
            activations=("softplus", "relu"),
            ks=tuple(range(1, 26)),
            ds=(10, 20),
            trials=10,
            max_iters=15_000,
            tol=2.5e-3,
            chunk=1000,
        ),
        "paper": PhaseTransition(
            n_values=(100, 200),
            activations=("softplus", "relu"),
            ks=tuple(range(1, 26)),
            ds=tuple(range(1, 26)),
            trials=10,
            max_iters=15_000,
            tol=2.5e-3,
            chunk=1000,
        ),
    },
}
"""experiment → scale → settings.  Every size the book uses, at the three scales, in one place.  The values
are in this module's source (``get(experiment, scale)`` returns one entry), not repeated on the API page."""


def resolve(scale: str | None = None) -> str:
    """The scale to use: ``scale`` if given, else ``$NTKBOOK_SCALE``, else ``"book"``.

    Raises:
        ValueError: for an unknown scale, listing the valid ones.
    """
    if scale is None:
        scale = os.environ.get("NTKBOOK_SCALE", DEFAULT_SCALE)
    return V.choice("scale", scale, SCALES)


def get(experiment: str, scale: str | None = None) -> ExperimentSettings:
    """The typed settings of ``experiment`` at ``scale`` (see :func:`resolve`)."""
    V.choice("experiment", experiment, TABLE)
    return TABLE[experiment][resolve(scale)]
