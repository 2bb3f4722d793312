"""A small image set that ships with scikit-learn: the 8×8 handwritten digits (nothing is downloaded).

Liu, Zhu & Belkin (2022, Appendix B) train on 20 CIFAR-10 images of two classes ("airplane" and
"bird").  CIFAR-10 cannot be downloaded here, so the book uses the same number of images of two
classes of ``sklearn.datasets.load_digits`` (1797 grey-scale 8×8 images, pixel values 0…16,
bundled inside the scikit-learn wheel) and keeps the rest of the setup.

Preprocessing (:func:`standardize`): each image is flattened to a vector of d = 64 pixels, then
centred and scaled *per image* to zero mean and unit variance over its pixels, so that
‖x‖ = √d exactly.  Why: in the NTK parameterization the first pre-activation is
α̃⁽¹⁾ = W⁽¹⁾x/√d with W⁽¹⁾ ~ N(0, 1) entries, whose variance is ‖x‖²/d; per-image
standardization makes it exactly 1 for every image, the regime the theory describes (inputs
with ‖x‖ = O(√d), pre-activations O(1)).  Centring also removes the large common component of
non-negative pixel images (raw digit images have pairwise cosines around 0.5–0.9).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jax.numpy as jnp
import numpy as np

from .. import _validation as V

IMAGE_SIDE = 8
INPUT_DIM = IMAGE_SIDE * IMAGE_SIDE
DEFAULT_CLASSES = (3, 8)
"""Two classes of similar shape (as "airplane" and "bird" share sky backgrounds in CIFAR-10)."""


@cache
def _raw() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target, dtype=np.int64)


def standardize(images: Any) -> np.ndarray:
    """Flatten and standardize each image: zero mean, unit variance over its pixels, ‖x‖ = √d.

    Args:
        images: ``(n, 8, 8)`` or ``(n, 64)`` pixel values.

    Returns:
        ``(n, 64)`` float64 array with every row of norm √64 = 8.

    Raises:
        ValueError: for a constant image (it has no direction to keep).
    """
    x = V.numpy_array("images", images, ndim=(2, 3), integers=True)
    x = x.reshape(x.shape[0], -1)
    x = x - x.mean(axis=1, keepdims=True)
    sd = x.std(axis=1, keepdims=True)
    if np.any(sd == 0):
        raise ValueError("images contains a constant image, which cannot be standardized")
    return x / sd


def image(index: int = 0) -> np.ndarray:
    """Image ``index`` of the data set as an 8 × 8 float32 array, standardized (:func:`standardize`:
    zero mean, unit variance, ‖x‖ = 8), e.g. the input of a convolutional network."""
    index = V.positive_int("index", index, minimum=0)
    data, _ = _raw()
    if index >= data.shape[0]:
        raise ValueError(f"index must be < {data.shape[0]}, got {index}")
    return standardize(data[index:index + 1]).reshape(IMAGE_SIDE, IMAGE_SIDE).astype(np.float32)


def two_classes(
    classes: tuple[int, int] = DEFAULT_CLASSES,
    n_per_class: int = 10,
    *,
    seed: int = 0,
    dtype: Any = jnp.float32,
) -> tuple[Any, Any]:
    """``2·n_per_class`` standardized digit images of two classes with labels ±1.

    Images are drawn without replacement, uniformly at random within each class (NumPy generator
    with ``seed``), the first class first.

    Returns:
        ``(x, y)``: ``x`` of shape ``(2·n_per_class, 64)`` with ‖x_i‖ = 8, ``y`` of shape
        ``(2·n_per_class,)`` with +1 for ``classes[0]`` and −1 for ``classes[1]``.
    """
    if not isinstance(classes, (tuple, list)) or len(classes) != 2:
        raise TypeError(f"classes must be a pair of digit classes, got {classes!r}")
    c0, c1 = (V.positive_int(f"classes[{i}]", c, minimum=0) for i, c in enumerate(classes))
    if c0 > 9 or c1 > 9 or c0 == c1:
        raise ValueError(f"classes must be two different digits in 0..9, got {classes!r}")
    n_per_class = V.positive_int("n_per_class", n_per_class)
    dtype = V.float_dtype("dtype", dtype)
    data, target = _raw()
    rng = np.random.default_rng(seed)
    chosen = []
    for c in (c0, c1):
        pool = np.flatnonzero(target == c)
        if n_per_class > pool.size:
            raise ValueError(f"n_per_class={n_per_class} exceeds the {pool.size} images of class {c}")
        chosen.append(rng.choice(pool, size=n_per_class, replace=False))
    idx = np.concatenate(chosen)
    x = standardize(data[idx])
    y = np.concatenate([np.ones(n_per_class), -np.ones(n_per_class)])
    return jnp.asarray(x, dtype), jnp.asarray(y, dtype)


def num_images() -> dict[int, int]:
    """How many images of each class the bundled data set has."""
    _, target = _raw()
    return {int(c): int(n) for c, n in zip(*np.unique(target, return_counts=True), strict=True)}
