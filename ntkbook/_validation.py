"""Input validation shared by the public functions.

Every public function of :mod:`ntkbook` checks its arguments at the Python boundary and raises
``TypeError`` (wrong kind of object) or ``ValueError`` (right kind, wrong value) with a message that
names the argument and says what was expected.  Checks that need concrete values (finiteness) are
skipped for JAX tracers, so the functions stay usable under ``jit`` and ``vmap``.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def is_tracer(x: Any) -> bool:
    """True when ``x`` is an abstract JAX value (inside ``jit``/``vmap``/``grad``)."""
    return isinstance(x, jax.core.Tracer)


def positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """Return ``value`` as an ``int`` >= ``minimum`` or raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r} of type {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def positive_float(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a finite ``float`` > 0 (or >= 0) or raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value}")
    return value


def choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``; otherwise raise listing the valid ones."""
    choices = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {', '.join(map(repr, choices))}; got {value!r}")
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(map(repr, choices))}")
    return value


def mapping(name: str, value: Any, keys: Iterable[str] = ()) -> Mapping[str, Any]:
    """Return ``value`` if it is a mapping (a result dict, a dict of columns) holding every one of ``keys``;
    otherwise raise ``TypeError`` (not a mapping) or ``ValueError`` naming the missing keys."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping (a result dictionary), got {type(value).__name__}")
    missing = [k for k in keys if k not in value]
    if missing:
        raise ValueError(f"{name} lacks the field(s) {', '.join(map(repr, missing))}; it has "
                         f"{', '.join(map(repr, value))}")
    return value


#: The same check under the name the experiment modules use for an experiment's result.
fields = mapping


def records(name: str, value: Any, keys: Iterable[str] = ()) -> list[Mapping[str, Any]]:
    """Return ``value`` as a list if it is a non-empty sequence of mappings (the rows of an experiment's
    table), each holding every key of ``keys``; otherwise raise ``TypeError`` (not a sequence of mappings)
    or ``ValueError`` (no rows, or naming the row and its missing keys)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of rows (mappings), got {type(value).__name__}")
    if len(value) == 0:
        raise ValueError(f"{name} must hold at least one row, got none")
    keys = tuple(keys)
    return [mapping(f"{name}[{i}]", row, keys) for i, row in enumerate(value)]


def instance(name: str, value: Any, cls: type) -> Any:
    """Return ``value`` if it is an instance of ``cls`` (e.g. a settings dataclass); otherwise raise
    ``TypeError`` naming the expected type."""
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a {cls.__name__}, got {type(value).__name__}")
    return value


def int_tuple(name: str, value: Any, *, minimum: int = 1) -> tuple[int, ...]:
    """A non-empty sequence of integers >= ``minimum`` (e.g. hidden-layer widths)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) == 0:
        raise TypeError(f"{name} must be a non-empty sequence of integers, got {value!r}")
    return tuple(positive_int(f"{name}[{i}]", v, minimum=minimum) for i, v in enumerate(value))


def _check_shape(name: str, shape: tuple, ndim: int | Sequence[int] | None, allow_empty: bool) -> None:
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if len(shape) not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ValueError(f"{name} must have {want} dimensions, got shape {tuple(shape)}")
    if not allow_empty and int(np.prod(shape, dtype=np.int64)) == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(shape)}")


def array(
    name: str,
    x: Any,
    *,
    ndim: int | Sequence[int] | None = None,
    finite: bool = True,
    allow_empty: bool = False,
) -> jax.Array:
    """Convert ``x`` to a floating JAX array and check rank, emptiness and finiteness.

    Integer and boolean inputs are rejected (they usually signal a mistake such as passing labels
    as inputs); complex inputs are rejected because every quantity in the book is real.
    """
    if x is None:
        raise TypeError(f"{name} must be an array, got None")
    if is_tracer(x):
        arr = x
    elif isinstance(x, np.ndarray) and x.dtype.kind == "f":
        arr = jax.device_put(x)  # as jnp.asarray (dtype canonicalized), without compiling a program per shape
    else:
        try:
            arr = jnp.asarray(x)
        except TypeError as err:
            raise TypeError(f"{name} must be an array of real numbers, got {type(x).__name__}") from err
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        raise TypeError(f"{name} must have a real floating dtype (float32/float64), got {arr.dtype}")
    _check_shape(name, arr.shape, ndim, allow_empty)
    if finite and not is_tracer(arr) and not np.all(np.isfinite(np.asarray(arr))):
        raise ValueError(f"{name} contains non-finite values (nan or inf)")
    return arr


def pytree_of_arrays(name: str, tree: Any, *, finite: bool = True) -> Any:
    """Check that ``tree`` is a non-empty pytree of floating arrays (e.g. model parameters)."""
    leaves = jax.tree_util.tree_leaves(tree)
    if not leaves:
        raise ValueError(f"{name} must be a non-empty pytree of arrays, got {tree!r}")
    for i, leaf in enumerate(leaves):
        if not hasattr(leaf, "dtype"):
            raise TypeError(f"{name} must contain only arrays; leaf {i} is {type(leaf).__name__}")
        if not jnp.issubdtype(leaf.dtype, jnp.floating):
            raise TypeError(f"{name} must contain floating arrays; leaf {i} has dtype {leaf.dtype}")
        if finite and not is_tracer(leaf) and not np.all(np.isfinite(np.asarray(leaf))):
            raise ValueError(f"{name} contains non-finite values (leaf {i})")
    return tree


def callable_(name: str, fn: Any) -> Any:
    if not callable(fn):
        raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
    return fn


def float_dtype(name: str, dtype: Any) -> jnp.dtype:
    """A floating dtype that JAX can actually represent in the current precision mode."""
    try:
        dt = jnp.dtype(dtype)
    except TypeError as err:
        raise TypeError(f"{name} must be a floating dtype such as jnp.float32, got {dtype!r}") from err
    if not jnp.issubdtype(dt, jnp.floating):
        raise TypeError(f"{name} must be a floating dtype such as jnp.float32, got {dt}")
    if dt == jnp.float64 and not jax.config.jax_enable_x64:
        raise ValueError(
            f"{name}=float64 needs 64-bit mode: call jax.config.update('jax_enable_x64', True) "
            "before creating arrays, or run inside `with jax.enable_x64(True):`"
        )
    return dt


def numpy_array(
    name: str,
    x: Any,
    *,
    ndim: int | Sequence[int] | None = None,
    allow_empty: bool = False,
    integers: bool = False,
) -> np.ndarray:
    """Like :func:`array` but returns a float64 NumPy array (no float32 round trip through JAX).

    ``integers=True`` also accepts integer arrays (sizes such as widths).
    """
    if x is None:
        raise TypeError(f"{name} must be an array, got None")
    try:
        arr = np.asarray(x)
    except Exception as err:  # pragma: no cover - exotic objects
        raise TypeError(f"{name} must be an array of real numbers, got {type(x).__name__}") from err
    ok = np.issubdtype(arr.dtype, np.floating) or (integers and np.issubdtype(arr.dtype, np.integer))
    if not ok:
        raise TypeError(f"{name} must have a real floating dtype (float32/float64), got {arr.dtype}")
    _check_shape(name, arr.shape, ndim, allow_empty)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values (nan or inf)")
    return arr.astype(np.float64)


def settings(name: str, value: Any, cls: type) -> Any:
    """Return ``value`` if it is an instance of the typed settings ``cls`` (:func:`ntkbook.scales.get`)."""
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be the {cls.__name__} settings (ntkbook.scales.get), got {type(value).__name__}")
    return value
