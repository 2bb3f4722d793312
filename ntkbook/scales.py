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
    if isinstance(value, tuple):  # a tuple of tuples (shapes) shows its items in brackets: (6, 3), (10, 4)
        return ", ".join(f"({_show(v)})" if isinstance(v, tuple) else _show(v) for v in value) if value else "none"
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
class OneHiddenLayer(ExperimentSettings):
    """Sizes of ``one_hidden_layer`` (reproduction one-hidden-layer, chapter 2): widths, inputs x, seeds per width,
    Lanczos tolerance."""

    widths: tuple[int, ...]
    inputs: tuple[float, ...]
    seeds: int
    tol: float


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
    # Chapter 2 — the one-hidden-layer network (reproduction one-hidden-layer) -------------------
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
    # Chapters 4–5 — what breaks linearity; lazy training (2020, Sections 1.1, 4, 5, App. A) --
    # Chapter 6 — reproduction of the 2020 experiments (Section 6, Appendix B) -----------------
    "nonlinear_output": {
        # Figure 1: ΔK of f, softmax(f), swish(f) (Eq. 43–47) against m; ΔK(t) at trajectory_width.
        # max_steps: the cap of the cross-entropy runs (they stop at loss < loss_tol = 1e-4, the
        # paper's rule, after about 1.3·10⁴ steps); swish_max_steps: the cap of the swish runs, which
        # need far more (0.6–1.8·10⁵ steps with the measured-curvature step, c = swish_lr_factor;
        # see reproductions.appendix_b.step_cap); both caps are guards: a run stops at the rule or is stuck.
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
    # Chapters 8–9 — Khatri–Rao products and moderate overparameterization (Oymak & Soltanolkotabi)
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
