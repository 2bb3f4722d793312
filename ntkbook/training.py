"""The one training loop of the book and the one definition of its losses.

**Losses** (n training pairs (xᵢ, yᵢ), model outputs f(w; xᵢ) ∈ ℝᵏ):

* ``"square"``:        L(w) = (1/2n) Σᵢ ‖f(w; xᵢ) − yᵢ‖²;
* ``"cross_entropy"``: L(w) = −(1/n) Σᵢ Σ_c y_ic log softmax(f(w; xᵢ))_c  (f are logits, y one-hot or
  probabilities).

Papers write other normalizations; only the step size changes (:func:`loss_scale`, :func:`book_step`: the one
place where a paper's step becomes the book's).  Gradient descent on c·L with step η is gradient descent on L
with step c·η, so: Liu–Zhu–Belkin's ½Σ (Theorem 5.1) and Oymak–Soltanolkotabi's
L(W) = ½‖f(W) − y‖² (Eq. 2.1) are n·L — their step η is our n·η; the square loss of Eq. (47) of
Liu–Zhu–Belkin 2020, (1/N)Σ‖f̃ − y‖², is 2·L — its step η is our 2η.  A mini-batch B is weighted
1/(2|B|), so SGD with one index per step is the update of Oymak–Soltanolkotabi's Eq. (2.9),
W ← W − η (f(W; x_γ) − y_γ)∇f(W; x_γ), with the same η.

**Step size** (:func:`step_size_from_kernel`): for the linearized model the square loss has Hessian
(1/n)JᵀJ, whose largest eigenvalue is λ_max(K)/n with K = JJᵀ the tangent kernel on the training
inputs, so gradient descent is stable iff η < 2n/λ_max(K).

**The loop** (:func:`train`; :func:`train_traced` is the same loop as a pure function for use inside
``jit``/``vmap``): full-batch gradient descent, or SGD with given index sequences, compiled end to
end — ``lax.scan`` for a fixed number of steps, ``lax.while_loop`` when the :class:`StopRule` can
stop a run early (loss below a tolerance, divergence, a stalled loss).  The update rule is an optax
``GradientTransformation`` (plain gradient descent: ``optax.sgd(η)``), built per run from its step size.
Runs (seeds) are stacked on a leading axis with per-run step sizes (and optionally per-run data);
:class:`Tracker` quantities — the tangent-kernel change (:func:`kernel_change`), a Hessian norm
(:func:`hessian_norm`), the iterate itself (:func:`iterate`), any function of the parameters — are
measured inside the compiled loop at recorded steps and at the step where each run stops, and short
runs can keep their whole path.

**How runs share the machine.**  R runs are processed in groups of ``group_size``: the runs of a
group advance in lock step (vmapped: one batched kernel per operation), the groups one after the
other inside the same compiled program (``lax.map``).  A group's loop counter is shared, so kernels
and other trackers are computed only at recorded steps (a ``lax.cond`` on an unbatched predicate),
and a group stops as soon as all its runs have stopped; a group of one run stops at its own step and
never computes anything for a finished run.  On an accelerator one group of all runs is best.  On a
CPU XLA's batched matrix products are slower per run than R separate products once one run's arrays
are more than a few kB, and R-times larger intermediates leave the cache, so :func:`default_group_size`
stacks runs only for very small models (:data:`CPU_STACK_BYTES`) and otherwise runs them one after the
other in the compiled program — never slower than a Python loop over the runs, which also pays a call
per run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from . import _validation as V
from .eigen import lambda_max
from .hessian import hessian_spectral_norm
from .kernels import empirical_ntk, flatten_ntk, relative_change

Array = jax.Array
PyTree = Any
ApplyFn = Callable[[PyTree, Any], Array]

# ---------------------------------------------------------------------------------------------
# The losses
# ---------------------------------------------------------------------------------------------

LOSSES = ("square", "cross_entropy")


def _square(outputs: Array, targets: Array) -> Array:
    r = outputs - targets
    return 0.5 * jnp.sum(r * r) / outputs.shape[0]


def _cross_entropy(outputs: Array, targets: Array) -> Array:
    return -jnp.sum(targets * jax.nn.log_softmax(outputs, axis=-1)) / outputs.shape[0]


_LOSS_FNS = {"square": _square, "cross_entropy": _cross_entropy}


def loss_of_outputs(outputs: Any, targets: Any, loss: str = "square") -> Array:
    """The loss of outputs f ∈ ℝ^{n×k} (or ℝⁿ) against targets y of the same shape.

    ``"square"``: (1/2n) Σᵢ ‖fᵢ − yᵢ‖²;  ``"cross_entropy"``: −(1/n) Σᵢ Σ_c y_ic log softmax(fᵢ)_c.
    """
    V.choice("loss", loss, LOSSES)
    return _LOSS_FNS[loss](outputs, targets)


def loss_value(apply_fn: ApplyFn, params: PyTree, x: Any, y: Any, loss: str = "square") -> Array:
    """L(w) of the model ``apply_fn`` at ``params`` on the training set (x, y) (see :func:`loss_of_outputs`)."""
    V.choice("loss", loss, LOSSES)
    return _LOSS_FNS[loss](apply_fn(params, x), y)


def step_size_from_kernel(kernel: Any, n: int, *, factor: Any = 1.0) -> Any:
    """η = factor · n / λ_max(K) for the square loss L = (1/2n) Σᵢ ‖f(w; xᵢ) − yᵢ‖².

    On the linearized model the Hessian of L is (1/n)JᵀJ with largest eigenvalue λ_max(K)/n, so
    gradient descent is stable iff η < 2n/λ_max(K), i.e. ``factor`` < 2; the default ``factor`` = 1
    is half the limit.  ``kernel`` is the (n, n) — or flattened (n·k, n·k) — tangent kernel at
    initialization; ``n`` the number of training inputs.  Outside ``jit`` the eigenvalue is computed in
    float64 on the host and a float is returned; a traced kernel (inside ``jit``/``vmap``) gives a traced step
    (``jnp.linalg.eigvalsh`` of the symmetrized kernel, in its dtype).
    """
    n = V.positive_int("n", n)
    if V.is_tracer(kernel) or V.is_tracer(factor):
        k = jnp.asarray(kernel)
        return factor * n / jnp.linalg.eigvalsh(0.5 * (k + k.T))[-1]
    k = V.numpy_array("kernel", kernel, ndim=2)
    factor = V.positive_float("factor", factor)
    lam = float(lambda_max(k))  # dense, symmetrized, float64 (ntkbook.eigen)
    if lam <= 0:
        raise ValueError("kernel has no positive eigenvalue: the model does not move under gradient descent")
    return factor * n / lam


LOSS_CONVENTIONS = ("book", "half-sum", "mean")
"""How the papers normalize the square loss, relative to the book's L = (1/2n) Σᵢ ‖fᵢ − yᵢ‖²:
``"half-sum"`` ½ Σᵢ ‖fᵢ − yᵢ‖² = n·L (Liu–Zhu–Belkin 2020, Thm 5.1; Oymak–Soltanolkotabi 2020, Eq. 2.1) and
``"mean"`` (1/n) Σᵢ ‖fᵢ − yᵢ‖² = 2·L (Liu–Zhu–Belkin 2020, Eq. 47)."""


def loss_scale(convention: str, n: int) -> float:
    """c with (a paper's square loss) = c · L (the book's): 1, n or 2 for :data:`LOSS_CONVENTIONS`.

    Gradient descent on c·L with step η is gradient descent on L with step c·η, so a paper's step η is the
    book's c·η (:func:`book_step`) and a paper's loss value ℓ is the book's ℓ/c.
    """
    V.choice("convention", convention, LOSS_CONVENTIONS)
    return {"book": 1.0, "half-sum": float(V.positive_int("n", n)), "mean": 2.0}[convention]


def book_step(paper_step: Any, convention: str, n: int) -> Any:
    """The step on the book's loss that makes the same update as ``paper_step`` on a paper's loss
    (:data:`LOSS_CONVENTIONS`): ``loss_scale(convention, n) · paper_step``; traced steps stay traced."""
    return loss_scale(convention, n) * paper_step


def record_schedule(max_steps: int, *, per_decade: int = 12) -> np.ndarray:
    """Steps 0, 1, 2, … at which to measure: log-spaced, ``per_decade`` points per factor 10, plus
    every step below ``per_decade`` and the last one (sorted, unique)."""
    max_steps = V.positive_int("max_steps", max_steps)
    per_decade = V.positive_int("per_decade", per_decade)
    decades = np.log10(max(max_steps, 1))
    logspaced = np.round(np.logspace(0, decades, int(np.ceil(decades * per_decade)) + 1)).astype(np.int64)
    return np.unique(np.concatenate([np.arange(min(per_decade, max_steps) + 1), logspaced, [max_steps]]))


# ---------------------------------------------------------------------------------------------
# Stopping rule and trackers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StopRule:
    """When a run stops.  At every step t = 0, 1, … the loss L(w_t) of the current iterate is checked,
    and the run stops (its parameters freeze) at the first t with

    * ``L(w_t) < loss_below`` — converged;
    * ``not L(w_t) <= diverge_above`` (larger, or not finite) — diverged;
    * ``t == max_steps`` — the step cap (w_t has had t updates);
    * stalled (only with ``stall_below``): t is a recorded step, t ≥ ``stall_after``, and the loss fell by
      less than the fraction ``stall_below`` over the second half of the run,
      L(w_t) > (1 − ``stall_below``)·L(w_h) with h the last recorded step ≤ t/2 — a run on a plateau
      that gradient descent leaves, if at all, only after far more steps than it has taken.  A run
      converging at rate ρ falls by a factor e^{−ρt/2} over that half, so the rule never stops one with
      ρt/2 > −log(1 − ``stall_below``) (t > 2.01·10³ for ρ = 10⁻⁵ and 1 %).

    ``loss_below`` and ``diverge_above`` are numbers or one value per run; ``None`` disables them.
    Without any of them, every run takes exactly ``max_steps`` steps (compiled as a ``lax.scan``).
    """

    max_steps: int
    loss_below: Any = None
    diverge_above: Any = None
    stall_below: float | None = None
    stall_after: int = 1

    def __post_init__(self) -> None:
        V.positive_int("max_steps", self.max_steps, minimum=0)
        if self.stall_below is not None:
            value = V.positive_float("stall_below", self.stall_below)
            if value >= 1:
                raise ValueError(f"stall_below must be a fraction in (0, 1), got {self.stall_below!r}")
            object.__setattr__(self, "stall_below", value)
        V.positive_int("stall_after", self.stall_after)
        for name in ("loss_below", "diverge_above"):
            value = getattr(self, name)
            if value is None:
                continue
            arr = np.asarray(value, dtype=np.float64) if not isinstance(value, str) else np.asarray(np.nan)
            if arr.ndim > 1 or arr.size == 0 or np.any(np.isnan(arr)):
                raise ValueError(f"{name} must be a number or one number per run, got {value!r}")
            object.__setattr__(self, name, float(arr) if arr.ndim == 0 else tuple(arr.tolist()))

    @property
    def early(self) -> bool:
        """Whether a run can stop before ``max_steps``."""
        return self.loss_below is not None or self.diverge_above is not None or self.stall_below is not None


@dataclass(frozen=True)
class Tracker:
    """A quantity measured along training, inside the compiled loop.

    ``measure(params, x, y)`` — or ``measure(params, x, y, reference)`` when ``reference`` is given,
    with ``reference(params0, x, y)`` computed once per run at its initial parameters — returns a
    pytree of arrays.  It is evaluated at the steps ``steps`` (default: the loop's ``record_steps``)
    while the run is going, and at the step where the run stops.  A plain function in ``track`` is
    ``Tracker(function)``.  Functions are compile-time constants of the loop: pass the same objects
    again to reuse the compiled loop.
    """

    measure: Callable[..., Any]
    reference: Callable[..., Any] | None = None
    steps: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        V.callable_("measure", self.measure)
        if self.reference is not None:
            V.callable_("reference", self.reference)
        if self.steps is not None:
            steps = np.unique(np.asarray(self.steps, dtype=np.int64))
            if steps.ndim != 1 or steps.size == 0:
                raise ValueError(f"steps must be a non-empty sequence of step numbers, got {self.steps!r}")
            object.__setattr__(self, "steps", tuple(int(s) for s in steps))


@dataclass(frozen=True, eq=True)
class _Kernel:
    """x ↦ the flattened (n·k × n·k) empirical tangent kernel of ``apply_fn`` (hashable: compiled loops are reused)."""

    apply_fn: ApplyFn
    method: str

    def __call__(self, params: PyTree, x: Any, y: Any = None) -> Array:
        return flatten_ntk(empirical_ntk(self.apply_fn, params, x, method=self.method))


@dataclass(frozen=True, eq=True)
class _KernelChange:
    kernel: _Kernel

    def __call__(self, params: PyTree, x: Any, y: Any, kernel0: Array) -> Array:
        return relative_change(self.kernel(params, x), kernel0)


def kernel_change(apply_fn: ApplyFn, *, method: str = "auto", steps: Any = None) -> Tracker:
    """‖K(w_t) − K(w₀)‖_F / ‖K(w₀)‖_F of the tangent kernel of ``apply_fn`` on the training inputs.

    The kernel is the flattened (n·k × n·k) matrix of :func:`ntkbook.kernels.flatten_ntk` ("the full
    kernel" of the paper's Appendix B); ``apply_fn`` may differ from the trained model (e.g. the
    softmax of the trained logits).  K(w₀) is computed once per run.
    """
    V.callable_("apply_fn", apply_fn)
    kernel = _Kernel(apply_fn, method)
    return Tracker(_KernelChange(kernel), kernel, steps)


@dataclass(frozen=True, eq=True)
class _HessianNorm:
    output: Callable[..., Array]
    index: int
    num_steps: int

    def __call__(self, params: PyTree, x: Any, y: Any = None) -> Array:
        xi = jax.tree_util.tree_map(lambda a: a[self.index], x)
        return hessian_spectral_norm(self.output, params, args=(xi,), method="fixed", num_steps=self.num_steps).value


@dataclass(frozen=True, eq=True)
class _OutputAt:
    """(params, xᵢ) ↦ the first output of the model at one input (the function whose Hessian is tracked)."""

    apply_fn: ApplyFn

    def __call__(self, params: PyTree, xi: Any) -> Array:
        out = self.apply_fn(params, jax.tree_util.tree_map(lambda a: a[None], xi))
        return jnp.reshape(out, (-1,))[0]


def hessian_norm(apply_fn: ApplyFn, *, input_index: int = 0, num_steps: int = 32, steps: Any = None) -> Tracker:
    """‖∂²f(w_t; x_i)/∂w²‖ (spectral norm; first output) at the training input ``input_index``, by
    ``num_steps`` Lanczos steps (:func:`ntkbook.hessian.hessian_spectral_norm`, method "fixed", matrix-free)."""
    V.callable_("apply_fn", apply_fn)
    input_index = V.positive_int("input_index", input_index, minimum=0)
    num_steps = V.positive_int("num_steps", num_steps, minimum=2)
    return Tracker(_HessianNorm(_OutputAt(apply_fn), input_index, num_steps), None, steps)


def distance_from_start() -> Tracker:
    """‖w_t − w₀‖ (Euclidean norm over all parameters)."""
    return Tracker(_distance, _initial_params)


def iterate(*, steps: Any = None) -> Tracker:
    """The iterate w_t itself, kept at ``steps`` (default: the loop's ``record_steps``) — memory
    O(P) per kept step, so keep a few checkpoints of a long run rather than its whole path."""
    return Tracker(_initial_params, None, steps)


def _initial_params(params: PyTree, x: Any = None, y: Any = None) -> PyTree:
    return params


def _distance(params: PyTree, x: Any, y: Any, params0: PyTree) -> Array:
    parts = jax.tree_util.tree_map(lambda a, b: jnp.sum((a - b) ** 2), params, params0)
    return jnp.sqrt(sum(jax.tree_util.tree_leaves(parts)))


# ---------------------------------------------------------------------------------------------
# The loop (one group of runs advancing in lock step)
# ---------------------------------------------------------------------------------------------


class _Spec(NamedTuple):
    """Everything static about a loop (hashable: the key of its compiled program)."""

    apply_fn: ApplyFn
    loss: str
    optimizer: Callable[[Any], optax.GradientTransformation]
    trackers: tuple[tuple[str, Callable, Callable | None, tuple[int, ...]], ...]
    record_steps: tuple[int, ...]
    max_steps: int
    early: bool
    has_below: bool
    has_above: bool
    keep_path: bool
    sgd: bool
    per_run_data: bool
    measure_updates: bool
    stall_below: float | None = None
    stall_after: int = 1


def stall_reference(record_steps: Sequence[int]) -> np.ndarray:
    """The reference of the stall rule (:class:`StopRule`): for each recorded step t, the position in
    ``record_steps`` (sorted, (S,)) of the last recorded step ≤ t // 2, or −1 if there is none; (S,) int32."""
    rec = np.asarray(record_steps, np.int64)
    if rec.ndim != 1 or np.any(np.diff(rec) <= 0):
        raise ValueError(f"record_steps must be increasing (S,) steps, got shape {rec.shape}")
    return np.searchsorted(rec, rec // 2, side="right").astype(np.int32) - 1


def _half_slots(steps: Sequence[int]) -> np.ndarray:
    """:func:`stall_reference` with −1 appended for the spare slot, which unrecorded steps index."""
    return np.concatenate([stall_reference(steps), np.asarray([-1], np.int32)])


def _slots(steps: Sequence[int], max_steps: int) -> np.ndarray:
    """slot[t] = position of step t in ``steps``, −1 where t is not recorded (length max_steps + 1)."""
    out = np.full(max_steps + 1, -1, np.int32)
    out[np.asarray(steps, np.int64)] = np.arange(len(steps), dtype=np.int32)
    return out


def _nan_like(shape_dtype: Any, lead: tuple[int, ...]) -> Array:
    fill = jnp.nan if jnp.issubdtype(shape_dtype.dtype, jnp.floating) else 0
    return jnp.full(lead + tuple(shape_dtype.shape), fill, shape_dtype.dtype)


def _bcast(mask: Array, leaf: Array) -> Array:
    return mask.reshape(mask.shape + (1,) * (leaf.ndim - mask.ndim))


def _select(mask: Array, new: PyTree, old: PyTree) -> PyTree:
    return jax.tree_util.tree_map(lambda a, b: jnp.where(_bcast(mask, a), a, b), new, old)


def _write(buffer: PyTree, slot: Array, values: PyTree, keep: Array) -> PyTree:
    """buffer[:, slot] = values for the runs where ``keep`` (NaN for the others); slot −1 writes to the
    spare last slot."""
    index = jnp.where(slot >= 0, slot, jax.tree_util.tree_leaves(buffer)[0].shape[1] - 1)

    def one(buf, val):
        if jnp.issubdtype(val.dtype, jnp.floating):
            val = jnp.where(_bcast(keep, val), val, jnp.asarray(jnp.nan, val.dtype))
        return jax.lax.dynamic_update_index_in_dim(buf, val.astype(buf.dtype), index, axis=1)

    return jax.tree_util.tree_map(one, buffer, values)


def _group_loop(spec: _Spec, params: PyTree, lr: Array, x: Any, y: Any, batches: Any, below: Array,
                above: Array) -> dict[str, Any]:
    """Train the b runs stacked on the leading axis of ``params`` (one group) in lock step."""
    loss_fn = _LOSS_FNS[spec.loss]
    data_axis = 0 if spec.per_run_data else None
    runs = lr.shape[0]

    def objective(p, xd, yd):
        return loss_fn(spec.apply_fn(p, xd), yd)

    value_and_grad = jax.vmap(jax.value_and_grad(objective), in_axes=(0, data_axis, data_axis))
    full_loss = jax.vmap(objective, in_axes=(0, data_axis, data_axis))

    def loss_and_grad(p, t):
        if not spec.sgd:
            return value_and_grad(p, x, y)
        if batches.ndim == 3:  # one index sequence per run
            take = jax.vmap(lambda d, i: jax.tree_util.tree_map(lambda a: a[i], d), in_axes=(data_axis, 0))
            xb, yb, axis = take(x, batches[:, t]), take(y, batches[:, t]), 0
        elif spec.per_run_data:
            idx = batches[t]
            xb, yb, axis = jax.tree_util.tree_map(lambda a: a[:, idx], x), y[:, idx], 0
        else:
            idx = batches[t]
            xb, yb, axis = jax.tree_util.tree_map(lambda a: a[idx], x), y[idx], None
        return jax.vmap(jax.value_and_grad(objective), in_axes=(0, axis, axis))(p, xb, yb)

    optimizers = jax.vmap(lambda p, eta: spec.optimizer(eta).init(p))
    opt_state = optimizers(params, lr)

    def update(s, t, grads, live):
        """Apply the optimizer's update to the runs that are ``live`` (all when None)."""
        def one(pi, si, gi, eta):
            opt = spec.optimizer(eta)
            # the loop's step t (unbatched) for the optimizers that take extra arguments: a lax.cond on it
            # stays a conditional under the vmap over runs
            upd, si = (opt.update(gi, si, pi, step=t) if isinstance(opt, optax.GradientTransformationExtraArgs)
                       else opt.update(gi, si, pi))
            norm = jnp.sqrt(sum(jnp.sum(u * u) for u in jax.tree_util.tree_leaves(upd))) \
                if spec.measure_updates else None
            return optax.apply_updates(pi, upd), si, norm

        new_params, new_opt, norm = jax.vmap(one)(s["params"], s["opt"], grads, lr)
        s = dict(s)
        if live is None:
            s["params"], s["opt"] = new_params, new_opt
            live = jnp.ones((runs,), bool)
        else:
            s["params"] = _select(live, new_params, s["params"])
            s["opt"] = _select(live, new_opt, s["opt"])
        if spec.measure_updates:
            s["update_norms"] = _write(s["update_norms"], loss_slots[t], norm, live)
            s["path_length"] = s["path_length"] + jnp.where(live, norm, 0)
        return s

    # trackers: references at w₀, record buffers, the values at the stop
    refs = []
    buffers, finals = {}, {}
    for name, measure, reference, steps in spec.trackers:
        ref = None if reference is None else jax.vmap(reference, in_axes=(0, data_axis, data_axis))(params, x, y)
        refs.append(ref)
        shape = jax.eval_shape(lambda p, xd, yd, r, measure=measure, reference=reference:
                               measure(p, xd, yd) if reference is None else measure(p, xd, yd, r),
                               jax.tree_util.tree_map(lambda a: a[0], params),
                               x if data_axis is None else jax.tree_util.tree_map(lambda a: a[0], x),
                               y if data_axis is None else jax.tree_util.tree_map(lambda a: a[0], y),
                               None if ref is None else jax.tree_util.tree_map(lambda a: a[0], ref))
        slots = len(steps) + 1
        buffers[name] = jax.tree_util.tree_map(lambda s, slots=slots: _nan_like(s, (runs, slots)), shape)
        finals[name] = jax.tree_util.tree_map(lambda s: _nan_like(s, (runs,)), shape)

    def measure_all(p, k):
        _, measure, reference, _ = spec.trackers[k]
        if reference is None:
            return jax.vmap(measure, in_axes=(0, data_axis, data_axis))(p, x, y)
        return jax.vmap(measure, in_axes=(0, data_axis, data_axis, 0))(p, x, y, refs[k])

    loss_slots = jnp.asarray(_slots(spec.record_steps, spec.max_steps))
    half_slots = jnp.asarray(_half_slots(spec.record_steps))
    tracker_slots = [jnp.asarray(_slots(steps, spec.max_steps)) for *_, steps in spec.trackers]

    def record(s, t, loss_t, stopping):
        """Record the loss and the trackers of w_t (runs still going at t) and the final values of the
        runs stopping at t (``stopping`` None: no run stops at t).

        Buffers have one spare slot at the end: a step that is not recorded writes there, so that the
        write is unconditional (a conditional that returns a large buffer makes XLA copy it)."""
        s = dict(s)
        s["buffers"], s["finals"] = dict(s["buffers"]), dict(s["finals"])
        going = ~s["done"]
        slot = loss_slots[t]
        if spec.sgd:  # the loss of a step is a mini-batch loss: the full loss where recorded
            loss_t = jax.lax.cond(slot >= 0, lambda: full_loss(s["params"], x, y), lambda: loss_t)
        s["losses"] = _write(s["losses"], slot, loss_t, going)
        for k, (name, *_rest) in enumerate(spec.trackers):
            tslot = tracker_slots[k][t]
            need = tslot >= 0 if stopping is None else (tslot >= 0) | jnp.any(stopping)
            values = jax.lax.cond(need, lambda k=k: measure_all(s["params"], k),
                                  lambda name=name: jax.tree_util.tree_map(jnp.zeros_like, s["finals"][name]))
            s["buffers"][name] = _write(s["buffers"][name], tslot, values, going)
            if stopping is not None:
                s["finals"][name] = _select(stopping, values, s["finals"][name])
        return s

    state = {"params": params, "opt": opt_state, "done": jnp.zeros((runs,), bool),
             "steps": jnp.zeros((runs,), jnp.int32), "loss": jnp.full((runs,), jnp.nan, lr.dtype),
             "converged": jnp.zeros((runs,), bool), "diverged": jnp.zeros((runs,), bool),
             "stalled": jnp.zeros((runs,), bool),
             "losses": jnp.full((runs, len(spec.record_steps) + 1), jnp.nan, lr.dtype),
             "buffers": dict(buffers), "finals": dict(finals)}
    if spec.measure_updates:
        state["update_norms"] = jnp.full((runs, len(spec.record_steps) + 1), jnp.nan, lr.dtype)
        state["path_length"] = jnp.zeros((runs,), lr.dtype)
    path = None

    if spec.early:
        def body(carry):
            t, s = carry
            loss_t, grads = loss_and_grad(s["params"], t)
            conv = (loss_t < below) if spec.has_below else jnp.zeros_like(s["done"])
            div = (~(loss_t <= above) & ~conv) if spec.has_above else jnp.zeros_like(s["done"])
            if spec.stall_below is not None:  # read L(w_h) before record() writes L(w_t)
                half = half_slots[loss_slots[t]]
                reference = s["losses"][:, jnp.maximum(half, 0)]
                stall = ((half >= 0) & (t >= spec.stall_after) & ~conv & ~div
                         & (loss_t > (1.0 - spec.stall_below) * reference))
            else:
                stall = jnp.zeros_like(s["done"])
            stopping = ~s["done"] & (conv | div | stall | (t >= spec.max_steps))
            s = record(s, t, loss_t, stopping)
            s = update(s, t, grads, ~(s["done"] | stopping))
            s["steps"] = jnp.where(stopping, t, s["steps"])
            s["loss"] = jnp.where(stopping, loss_t, s["loss"])
            s["converged"] = s["converged"] | (stopping & conv)
            s["diverged"] = s["diverged"] | (stopping & div)
            s["stalled"] = s["stalled"] | (stopping & stall)
            s["done"] = s["done"] | stopping
            return t + 1, s

        _, state = jax.lax.while_loop(lambda c: ~jnp.all(c[1]["done"]), body, (jnp.asarray(0, jnp.int32), state))
    else:
        def step(s, t):
            loss_t, grads = loss_and_grad(s["params"], t)
            s = update(record(s, t, loss_t, None), t, grads, None)
            return s, (s["params"] if spec.keep_path else None)

        ts = jnp.arange(spec.max_steps, dtype=jnp.int32)
        state, path = jax.lax.scan(step, state, ts)
        end = jnp.asarray(spec.max_steps, jnp.int32)
        loss_end = full_loss(state["params"], x, y)
        state = record(state, end, loss_end, jnp.ones((runs,), bool))
        state["steps"] = jnp.full((runs,), spec.max_steps, jnp.int32)
        state["loss"] = loss_end
        if spec.keep_path:
            path = jax.tree_util.tree_map(lambda a0, rest: jnp.concatenate([a0[:, None], jnp.swapaxes(rest, 0, 1)],
                                                                           axis=1), params, path)
    out = {k: state[k] for k in ("params", "loss", "steps", "converged", "diverged", "stalled")}
    out["losses"] = state["losses"][:, :-1]  # drop the spare slots
    out["tracked"] = jax.tree_util.tree_map(lambda a: a[:, :-1], state["buffers"])
    out["final"] = state["finals"]
    if spec.measure_updates:
        out["update_norms"] = state["update_norms"][:, :-1]
        out["path_length"] = state["path_length"]
    if spec.keep_path:
        out["path"] = path
    return out


# ---------------------------------------------------------------------------------------------
# Several groups in one compiled program
# ---------------------------------------------------------------------------------------------


_group_compiled = jax.jit(_group_loop, static_argnames=("spec",))


def _run_groups(spec: _Spec, group_size: int, params, lr, x, y, batches, below, above) -> dict[str, Any]:
    """Run the groups of ``group_size`` runs, each as one call of the same compiled loop.

    On a CPU the groups are spread over one thread per core (each XLA loop runs on the thread that calls
    it); the last group is padded by repeating its last run (the copies are dropped).  Returns NumPy arrays
    with the runs on the leading axis."""
    runs = lr.shape[0]
    per_run = {"params": params, "lr": lr, "below": below, "above": above}
    if spec.per_run_data:
        per_run |= {"x": x, "y": y}
    if batches is not None and batches.ndim == 3:
        per_run["batches"] = batches
    x64 = jax.dtypes.canonicalize_dtype(np.float64) == np.float64  # threads do not inherit jax.enable_x64

    def one(start: int) -> dict[str, Any]:
        stop = min(start + group_size, runs)
        idx = np.minimum(np.arange(start, start + group_size), stop - 1)  # pad by repeating the last run
        with jax.enable_x64(x64):
            # the group's runs gathered in NumPy (an eager gather compiles one program per array shape)
            g = per_run if group_size >= runs else jax.tree_util.tree_map(lambda a: np.asarray(a)[idx], per_run)
            out = _group_compiled(spec, g["params"], g["lr"], g.get("x", x), g.get("y", y), g.get("batches", batches),
                                  g["below"], g["above"])
            return jax.tree_util.tree_map(lambda a: np.asarray(a)[:stop - start], out)

    starts = list(range(0, runs, group_size))
    workers = min(len(starts), os.cpu_count() or 1) if jax.default_backend() == "cpu" else 1
    if workers == 1:
        parts = [one(start) for start in starts]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(one, starts))
    return parts[0] if len(parts) == 1 else jax.tree_util.tree_map(lambda *a: np.concatenate(a), *parts)


CPU_STACK_BYTES = 16 << 10
"""On a CPU, runs are stacked into vmapped groups only when one run's largest intermediate array (from the
jaxpr of one gradient evaluation) is at most this many bytes.  Measured (``benchmarks/run.py``, one core,
process time, the Figure 1 network, N = 60): stacking 10 runs saves 1.5× at width 32 (7.7 kB), breaks even
at 128 (31 kB) and costs 1.3× at 256 (61 kB) and 2.5× at 2048 (0.5 MB), where XLA's batched matrix
products and R-times larger intermediates are slower than R separate runs one after the other."""

CPU_GROUP_BYTES = 1 << 20
"""… and a group's largest intermediate stays below this many bytes (about the L2 cache)."""


def largest_intermediate_bytes(apply_fn: ApplyFn, params: PyTree, x: Any, y: Any, loss: str = "square") -> int:
    """Bytes of the largest array one evaluation of ∇L(w) creates (from its jaxpr, for one run)."""
    def gradient(p, xd, yd):
        return jax.grad(lambda q: _LOSS_FNS[loss](apply_fn(q, xd), yd))(p)

    jaxpr = jax.make_jaxpr(gradient)(params, x, y)  # arrays or jax.ShapeDtypeStruct
    largest = 0

    def visit(jpr: Any) -> None:
        nonlocal largest
        for eqn in jpr.eqns:
            for var in eqn.outvars:
                aval = getattr(var, "aval", None)
                if hasattr(aval, "shape") and hasattr(aval, "dtype"):
                    largest = max(largest, int(np.prod(aval.shape, dtype=np.int64)) * aval.dtype.itemsize)
            for value in eqn.params.values():
                for item in value if isinstance(value, (tuple, list)) else (value,):
                    inner = getattr(item, "jaxpr", item)
                    if hasattr(inner, "eqns"):
                        visit(inner)

    visit(jaxpr.jaxpr)
    return largest


def _shape_key(tree: Any) -> Any:
    """A hashable description of a pytree's structure, shapes and dtypes."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((tuple(np.shape(a)), str(a.dtype if hasattr(a, "dtype") else np.result_type(a)))
                          for a in leaves)


@lru_cache(maxsize=256)
def _per_run_bytes(apply_fn: ApplyFn, loss: str, params_key: Any, x_key: Any, y_key: Any, batches_key: Any,
                   per_run_data: bool) -> int:
    """:func:`largest_intermediate_bytes` for one run of a stacked call (cached per shapes: tracing costs ms)."""
    def spec(key, drop_lead):
        treedef, leaves = key
        return jax.tree_util.tree_unflatten(treedef, [jax.ShapeDtypeStruct(shape[1:] if drop_lead else shape, dtype)
                                                      for shape, dtype in leaves])

    params, x, y = spec(params_key, True), spec(x_key, per_run_data), spec(y_key, per_run_data)
    if batches_key is not None and batches_key[1]:  # SGD: the model sees mini-batches of B inputs
        batch = batches_key[1][0][0][-1]
        x = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct((batch, *a.shape[1:]), a.dtype), x)
        y = jax.ShapeDtypeStruct((batch, *y.shape[1:]), y.dtype)
    return largest_intermediate_bytes(apply_fn, params, x, y, loss)


def default_group_size(runs: int, per_run_bytes: int, *, backend: str | None = None, cores: int | None = None) -> int:
    """How many runs advance in lock step: all of them on an accelerator.  On a CPU one at a time unless one
    run's largest intermediate is at most :data:`CPU_STACK_BYTES`, and then as many as keep a group's under
    :data:`CPU_GROUP_BYTES` — but never fewer groups than ``cores`` (default: the machine's), so that every
    core gets a group (:func:`train` runs the groups in one thread per core)."""
    runs = V.positive_int("runs", runs)
    backend = jax.default_backend() if backend is None else backend
    per_run_bytes = max(int(per_run_bytes), 1)
    if backend != "cpu":
        return runs
    if per_run_bytes > CPU_STACK_BYTES:
        return 1
    cores = V.positive_int("cores", os.cpu_count() or 1 if cores is None else cores)
    return int(max(1, min(-(-runs // cores), CPU_GROUP_BYTES // per_run_bytes)))


# ---------------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train` returns (NumPy arrays; R = runs, absent for a single run).

    * ``params`` — final parameters (those of the stopping step), ``loss`` — L at the stopping step;
    * ``steps`` — the stopping step t (updates taken), ``converged`` / ``diverged`` / ``stalled`` — why it
      stopped (none of them: the step cap);
    * ``record_steps`` (S,) and ``losses`` (R, S) — L(w_t) at the recorded steps (NaN after the stop);
    * ``tracked[name]`` (R, S_name, …) at ``tracked_steps[name]`` (NaN after the stop), ``final[name]``
      (R, …) at the stopping step;
    * ``path`` — every iterate (R, T + 1, …) when ``keep_path``, else ``None``;
    * ``update_norms`` (R, S) — ‖w_{t+1} − w_t‖ at the recorded steps before the stop, and ``path_length``
      (R,) — Σ_t ‖w_{t+1} − w_t‖ over all steps, when ``measure_updates``, else ``None``.
    """

    params: PyTree
    loss: np.ndarray
    steps: np.ndarray
    converged: np.ndarray
    diverged: np.ndarray
    stalled: np.ndarray
    record_steps: np.ndarray
    losses: np.ndarray
    tracked: dict[str, Any] = field(default_factory=dict)
    tracked_steps: dict[str, np.ndarray] = field(default_factory=dict)
    final: dict[str, Any] = field(default_factory=dict)
    path: PyTree = None
    update_norms: np.ndarray | None = None
    path_length: np.ndarray | None = None

    def sup(self, name: str) -> np.ndarray:
        """max over the recorded steps and the stopping step of ``tracked[name]`` (a scalar quantity), per run."""
        rec = np.asarray(self.tracked[name], np.float64)
        fin = np.asarray(self.final[name], np.float64)
        with np.errstate(invalid="ignore"):
            return np.fmax(np.nanmax(np.where(np.isnan(rec), -np.inf, rec), axis=-1), fin)


def _leading_size(name: str, tree: PyTree) -> int:
    sizes = {int(np.shape(leaf)[0]) if np.ndim(leaf) else None for leaf in jax.tree_util.tree_leaves(tree)}
    if len(sizes) != 1 or None in sizes:
        raise ValueError(f"{name} must stack the runs on a leading axis of the same length in every leaf "
                         "(e.g. jax.vmap(init)(keys)); for one run use runs=False")
    return sizes.pop()


def _per_run(name: str, value: Any, runs: int, dtype: Any, default: float) -> Array:
    arr = np.asarray(default if value is None else value, dtype=np.float64)
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != runs):
        raise ValueError(f"{name} must be a number or one per run ({runs},), got shape {arr.shape}")
    return jnp.broadcast_to(jnp.asarray(arr, dtype), (runs,))


def _tracker_tuple(track: Mapping[str, Any] | None, record_steps: tuple[int, ...], max_steps: int):
    out = []
    for name, item in ({} if track is None else dict(track)).items():
        if not isinstance(name, str):
            raise TypeError(f"track keys must be names (str), got {name!r}")
        tracker = item if isinstance(item, Tracker) else Tracker(V.callable_(f"track[{name!r}]", item))
        steps = record_steps if tracker.steps is None else tracker.steps
        if steps[0] < 0 or steps[-1] > max_steps:
            raise ValueError(f"track[{name!r}].steps must lie in [0, max_steps={max_steps}]")
        out.append((name, tracker.measure, tracker.reference, tuple(steps)))
    return tuple(out)


def _stop_rule(stop: Any) -> StopRule:
    if isinstance(stop, int) and not isinstance(stop, bool):
        return StopRule(stop)
    if not isinstance(stop, StopRule):
        raise TypeError(f"stop must be a StopRule (or a number of steps), got {type(stop).__name__}")
    return stop


def _make_spec(apply_fn, *, stop: StopRule, loss, optimizer, track, record_steps, keep_path, sgd, per_run_data,
               measure_updates) -> _Spec:
    """Check the arguments shared by :func:`train` and :func:`train_traced` and build the static description
    of the loop."""
    V.callable_("apply_fn", apply_fn)
    V.choice("loss", loss, LOSSES)
    V.callable_("optimizer", optimizer)
    max_steps = stop.max_steps
    if sgd and stop.early:
        raise ValueError("SGD (batches given) runs a fixed number of steps: stop must have no loss_below, "
                         "diverge_above or stall_below")
    if keep_path and stop.early:
        raise ValueError("keep_path needs a fixed number of steps (a StopRule without loss_below/diverge_above/"
                         "stall_below)")
    rec = (np.unique(np.asarray(record_steps, np.int64)) if record_steps is not None
           else record_schedule(max_steps) if max_steps > 0 else np.zeros(1, np.int64))
    if rec.ndim != 1 or rec.size == 0 or rec[0] < 0 or rec[-1] > max_steps:
        raise ValueError(f"record_steps must lie in [0, max_steps={max_steps}]")
    rec = tuple(int(s) for s in rec)
    return _Spec(apply_fn, loss, optimizer, _tracker_tuple(track, rec, max_steps), rec, max_steps, stop.early,
                 stop.loss_below is not None, stop.diverge_above is not None, bool(keep_path), sgd,
                 bool(per_run_data), bool(measure_updates), stop.stall_below, int(stop.stall_after))


def _prepare(apply_fn, params, x, y, *, lr, stop, loss, optimizer, track, record_steps, batches, keep_path,
             runs, per_run_data, measure_updates):
    spec = _make_spec(apply_fn, stop=stop, loss=loss, optimizer=optimizer, track=track, record_steps=record_steps,
                      keep_path=keep_path, sgd=batches is not None, per_run_data=per_run_data,
                      measure_updates=measure_updates)
    V.pytree_of_arrays("params", params)
    y = V.array("y", y)
    for i, leaf in enumerate(jax.tree_util.tree_leaves(x)):
        V.array(f"x (leaf {i})", leaf)
    if runs:
        num_runs = _leading_size("params", params)
    else:
        if per_run_data:
            raise ValueError("per_run_data needs runs=True (params stacked on a leading runs axis)")
        num_runs = 1
    n_axis = 1 if per_run_data else 0
    if per_run_data:
        for name, tree in (("x", x), ("y", y)):
            if _leading_size(name, tree) != num_runs:
                raise ValueError(f"{name} must have one entry per run on its leading axis ({num_runs})")
    n = y.shape[n_axis] if y.ndim > n_axis else 0
    leaves = jax.tree_util.tree_leaves(x)
    # every leaf of x is indexed by input for SGD; otherwise a pytree x may carry other data (the model reads it)
    for leaf in leaves if (batches is not None or len(leaves) == 1) else ():
        if leaf.ndim <= n_axis or leaf.shape[n_axis] != n:
            raise ValueError(f"y must have one row per input: x has shape {tuple(leaf.shape)}, y has shape "
                             f"{tuple(y.shape)}")
    dtype = jax.tree_util.tree_leaves(params)[0].dtype
    lr_arr = np.asarray(lr, dtype=np.float64)
    if lr_arr.ndim > 1 or (lr_arr.ndim == 1 and lr_arr.shape[0] != num_runs) or not np.all(np.isfinite(lr_arr)) \
            or np.any(lr_arr <= 0) or (lr_arr.ndim == 1 and not runs):
        raise ValueError(f"lr must be a positive step size{' or one per run' if runs else ''}"
                         f"{f' ({num_runs},)' if runs else ''}, got {lr!r}")
    max_steps = stop.max_steps
    if batches is not None:
        b = np.asarray(batches)
        if not np.issubdtype(b.dtype, np.integer) or b.ndim not in (2, 3) or (b.ndim == 3 and not runs):
            raise ValueError("batches must be integer indices of shape (steps, batch) or, per run, "
                             f"(runs, steps, batch); got {b.dtype} {b.shape}")
        if b.ndim == 3 and b.shape[0] != num_runs:
            raise ValueError(f"batches has {b.shape[0]} index sequences for {num_runs} runs")
        if b.shape[-2] < max_steps:
            raise ValueError(f"batches has {b.shape[-2]} steps, fewer than max_steps = {max_steps}")
        if b.size and (b.min() < 0 or b.max() >= n):
            raise ValueError(f"batches must index the n = {n} training inputs")
        batches = jnp.asarray(b, jnp.int32)
    lr = _per_run("lr", lr_arr, num_runs, dtype, 0.0)
    below = _per_run("stop.loss_below", stop.loss_below, num_runs, dtype, -np.inf)
    above = _per_run("stop.diverge_above", stop.diverge_above, num_runs, dtype, np.inf)
    return spec, num_runs, lr, x, y, batches, below, above


def train(
    apply_fn: ApplyFn,
    params: PyTree,
    x: Any,
    y: Any,
    *,
    lr: Any,
    stop: StopRule | int,
    loss: str = "square",
    optimizer: Callable[[Any], optax.GradientTransformation] = optax.sgd,
    track: Mapping[str, Callable | Tracker] | None = None,
    record_steps: Any = None,
    batches: Any = None,
    keep_path: bool = False,
    measure_updates: bool = False,
    runs: bool = False,
    per_run_data: bool = False,
    group_size: int | None = None,
) -> TrainResult:
    """Train ``apply_fn`` by gradient descent (or SGD) on :func:`loss_value`, compiled end to end.

    Args:
        apply_fn: the model, ``apply_fn(params, x) -> (n,) or (n, k)``; a compile-time constant.
        params: w₀ — one run, or R runs stacked on a leading axis (``runs=True``, e.g.
            ``jax.vmap(init)(keys)``).
        x, y: the training set, (n, …) and (n,) or (n, k), shared by the runs — or one per run on a
            leading axis (``per_run_data=True``).  ``x`` may be any pytree the model reads (with SGD every
            leaf must have n rows, as they are indexed by the mini-batches).
        lr: the step size η, a number or one per run (R,).
        stop: a :class:`StopRule` (an int means ``StopRule(max_steps=stop)``).
        loss: ``"square"`` or ``"cross_entropy"``.
        optimizer: ``optimizer(η) -> optax.GradientTransformation``, called with each run's step size
            (default ``optax.sgd``: w ← w − η∇L).  An ``optax.GradientTransformationExtraArgs`` is also
            given the step t as the keyword ``step`` (one integer shared by the runs, so that a ``lax.cond``
            on it skips work at most steps even though the runs are vmapped).
        track: name → :class:`Tracker` (or a function ``f(params, x, y)``) measured in the loop.
        record_steps: the steps t at which L(w_t) and the trackers are recorded (default
            :func:`record_schedule`); a tracker may have its own ``steps``.
        batches: SGD instead of full-batch GD: integer indices (T, B) — step t uses the mini-batch
            ``batches[t]`` — shared by the runs, or (R, T, B), one sequence per run.  The loss of step t
            is the mini-batch loss (1/2|B|)Σ_{i∈B}; the recorded ``losses`` are full-batch.
        keep_path: also return every iterate w₀ … w_T (memory O(T·P): short runs; fixed steps only).
        measure_updates: also record ‖w_{t+1} − w_t‖ at the recorded steps and sum it over all steps
            (the path length).
        runs: whether ``params`` stacks several runs.
        per_run_data: whether x and y have a leading runs axis.
        group_size: how many runs advance in lock step (default :func:`default_group_size`).

    Returns:
        a :class:`TrainResult`.
    """
    stop = _stop_rule(stop)
    spec, num_runs, lr, x, y, batches, below, above = _prepare(
        apply_fn, params, x, y, lr=lr, stop=stop, loss=loss, optimizer=optimizer, track=track,
        record_steps=record_steps, batches=batches, keep_path=keep_path, runs=runs, per_run_data=per_run_data,
        measure_updates=measure_updates)
    stacked = params if runs else jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], params)
    if group_size is None:
        group_size = 1 if num_runs == 1 else default_group_size(num_runs, _per_run_bytes(
            apply_fn, loss, *(_shape_key(a) for a in (stacked, x, y, batches)), per_run_data))
    group_size = min(V.positive_int("group_size", group_size), num_runs)
    out = _run_groups(spec, group_size, stacked, lr, x, y, batches, below, above)
    if not runs:
        out = jax.tree_util.tree_map(lambda a: a[0], out)
    return TrainResult(params=out["params"], loss=out["loss"], steps=out["steps"], converged=out["converged"],
                       diverged=out["diverged"], stalled=out["stalled"], record_steps=np.asarray(spec.record_steps),
                       losses=out["losses"],
                       tracked=out["tracked"], final=out["final"],
                       tracked_steps={name: np.asarray(steps) for name, _, _, steps in spec.trackers},
                       path=out.get("path"), update_norms=out.get("update_norms"),
                       path_length=out.get("path_length"))


def train_traced(
    apply_fn: ApplyFn,
    params: PyTree,
    x: Any,
    y: Any,
    *,
    lr: Any,
    stop: StopRule | int,
    loss: str = "square",
    optimizer: Callable[[Any], optax.GradientTransformation] = optax.sgd,
    track: Mapping[str, Callable | Tracker] | None = None,
    record_steps: Any = None,
    batches: Any = None,
    keep_path: bool = False,
    measure_updates: bool = False,
) -> dict[str, Any]:
    """The loop of :func:`train` for one run as a pure JAX function, to call inside ``jit``/``vmap``
    (``lr``, ``params`` and the data may be traced; functions may be closures).

    Same arguments as :func:`train` (one run, shared data); returns a dict of JAX arrays with the
    fields of :class:`TrainResult` (``tracked``, ``final``, ``path`` included; ``record_steps`` is the
    schedule passed in or :func:`record_schedule`).  Under an outer ``vmap`` use a fixed number of
    steps: a batched stopping rule turns the recording conditionals into selects (every step pays
    for the trackers).
    """
    stop = _stop_rule(stop)
    if isinstance(stop.loss_below, tuple) or isinstance(stop.diverge_above, tuple):
        raise ValueError("train_traced trains one run: stop.loss_below and stop.diverge_above must be numbers")
    if batches is not None:
        batches = jnp.asarray(batches, jnp.int32)
        if batches.ndim != 2:
            raise ValueError(f"batches must be (steps, batch) indices, got shape {batches.shape}")
    spec = _make_spec(apply_fn, stop=stop, loss=loss, optimizer=optimizer, track=track, record_steps=record_steps,
                      keep_path=keep_path, sgd=batches is not None, per_run_data=False,
                      measure_updates=measure_updates)
    dtype = jax.tree_util.tree_leaves(params)[0].dtype
    lr = jnp.reshape(jnp.asarray(lr, dtype), (1,))
    below = jnp.full((1,), -jnp.inf if stop.loss_below is None else stop.loss_below, dtype)
    above = jnp.full((1,), jnp.inf if stop.diverge_above is None else stop.diverge_above, dtype)
    stacked = jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], params)
    out = _group_loop(spec, stacked, lr, x, y, batches, below, above)
    out = jax.tree_util.tree_map(lambda a: a[0], out)
    out["record_steps"] = np.asarray(spec.record_steps)
    return out


__all__ = [
    "CPU_GROUP_BYTES",
    "CPU_STACK_BYTES",
    "LOSSES",
    "LOSS_CONVENTIONS",
    "StopRule",
    "Tracker",
    "TrainResult",
    "book_step",
    "default_group_size",
    "distance_from_start",
    "hessian_norm",
    "iterate",
    "kernel_change",
    "largest_intermediate_bytes",
    "loss_of_outputs",
    "loss_scale",
    "loss_value",
    "record_schedule",
    "stall_reference",
    "step_size_from_kernel",
    "train",
    "train_traced",
]
