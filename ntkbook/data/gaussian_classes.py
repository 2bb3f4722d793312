"""The synthetic three-class data of Liu, Zhu & Belkin (2020), Appendix B, Eq. (42).

N points (N = 60 in the paper) with labels drawn uniformly from {0, 1, 2} and scalar inputs

    x ~ N(0, 1) if y = 0,   x ~ N(10, 1) if y = 1,   x ~ N(−10, 1) if y = 2,

labels encoded as one-hot vectors in {0, 1}³.  The paper uses one data set for every optimization
task; here it is generated from an explicit PRNG key, so the same key gives the same data set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .. import _validation as V

Array = jax.Array

PAPER_MEANS = (0.0, 10.0, -10.0)
"""Class means of Eq. (42), for the labels y = 0, 1, 2."""


class LabelledData(NamedTuple):
    """A classification data set.

    Attributes:
        x: inputs, shape (n, 1).
        labels: integer labels, shape (n,).
        y: one-hot labels, shape (n, C).
    """

    x: Array
    labels: Array
    y: Array


def gaussian_classes(
    key: Array,
    n: int = 60,
    *,
    means: Sequence[float] = PAPER_MEANS,
    std: float = 1.0,
    dtype: Any = jnp.float32,
) -> LabelledData:
    """Draw the data of Eq. (42): labels uniform on {0, …, C−1}, x | y ~ N(means[y], std²).

    Args:
        key: PRNG key (one key, one data set).
        n: number of points N (60 in the paper).
        means: the class means (C = len(means) classes; default (0, 10, −10) as in Eq. 42).
        std: the common standard deviation (1 in the paper).
        dtype: float dtype of x and y.

    Returns:
        :class:`LabelledData` with x (n, 1), labels (n,) and one-hot y (n, C).
    """
    n = V.positive_int("n", n)
    dtype = V.float_dtype("dtype", dtype)
    if isinstance(means, (str, bytes)) or not isinstance(means, Sequence) or len(means) < 2:
        raise ValueError(f"means must be a sequence of at least two class means, got {means!r}")
    means_arr = V.numpy_array("means", [float(m) for m in means], ndim=1)
    std = V.positive_float("std", std)
    classes = means_arr.shape[0]
    k_label, k_noise = jax.random.split(key)
    labels = jax.random.randint(k_label, (n,), 0, classes)
    x = jnp.asarray(means_arr, dtype)[labels] + std * jax.random.normal(k_noise, (n,), dtype)
    return LabelledData(x=x[:, None], labels=labels, y=jax.nn.one_hot(labels, classes, dtype=dtype))
