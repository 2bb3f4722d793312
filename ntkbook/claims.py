"""Claims as code: every check cell of the book goes through :func:`check`.

A claim has an id (``"prop-2.3/bound-holds"``), a condition, the paper reference it verifies and
the measured numbers behind it.  :func:`check` raises ``AssertionError`` with a readable message
when the condition is false — which stops the notebook, and so the book build — and in every case
appends one JSON line to the notebook's ledger::

    {"claim": ..., "status": "passed"|"failed", "ref": ..., "measured": {...}, "scale": ...,
     "notebook": ..., "date": ..., "backend": ...}

The ledgers live in :func:`ledger_dir` (``$NTKBOOK_LEDGER_DIR``, default
``~/.cache/ntkbook/ledger``), one ``<notebook>.jsonl`` file per notebook, rewritten each time the
notebook runs :func:`start`.  The book's "Claims ledger" page tabulates them.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from . import _validation as V
from .records import to_jsonable

_STATE: dict[str, Any] = {"notebook": None, "scale": None}


def ledger_dir() -> Path:
    """Where ledgers are written: ``$NTKBOOK_LEDGER_DIR`` or ``~/.cache/ntkbook/ledger``."""
    env = os.environ.get("NTKBOOK_LEDGER_DIR")
    return Path(env) if env else Path.home() / ".cache" / "ntkbook" / "ledger"


def ledger_path(notebook: str) -> Path:
    return ledger_dir() / f"{notebook}.jsonl"


def start(notebook: str, *, scale: str) -> Path:
    """Begin a fresh ledger for ``notebook`` (its file name without ``.ipynb``) at ``scale``."""
    if not isinstance(notebook, str) or not notebook or "/" in notebook:
        raise ValueError(f"notebook must be a file stem such as '01-tangent-kernel', got {notebook!r}")
    from .scales import SCALES

    V.choice("scale", scale, SCALES)
    path = ledger_path(notebook)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    _STATE.update(notebook=notebook, scale=scale)
    return path


def _backend() -> str:
    try:
        import jax

        return jax.default_backend()
    except Exception:  # pragma: no cover
        return "unknown"


def _format(measured: dict[str, Any]) -> str:
    def one(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        if isinstance(v, list) and len(v) > 6:
            return f"[{', '.join(one(x) for x in v[:3])}, ... ({len(v)} values)]"
        if isinstance(v, list):
            return "[" + ", ".join(one(x) for x in v) + "]"
        return str(v)

    return ", ".join(f"{k}={one(v)}" for k, v in measured.items())


def check(claim_id: str, condition: Any, *, ref: str, **measured: Any) -> None:
    """Assert a claim of the book and record it in the ledger.

    Args:
        claim_id: a stable id, ``"<result>/<what>"``, e.g. ``"prop-2.3/bound-holds"``.
        condition: the claim (a bool or a 0-d boolean array).  It must be computed from
            measurements; never pass a constant.
        ref: the paper reference, e.g. ``"Liu et al. 2020, Prop. 2.3"``.
        **measured: the numbers behind the claim (scalars or small arrays), recorded in the ledger
            and shown in the failure message.

    Raises:
        AssertionError: when ``condition`` is false.
    """
    if not isinstance(claim_id, str) or not claim_id:
        raise TypeError(f"claim_id must be a non-empty string, got {claim_id!r}")
    if not isinstance(ref, str) or not ref:
        raise TypeError(f"ref must be a non-empty string naming the paper result, got {ref!r}")
    cond = np.asarray(condition)
    if cond.shape != () or cond.dtype != np.bool_:
        raise TypeError(f"condition of claim {claim_id!r} must be a single boolean, got {condition!r}")
    passed = bool(cond)
    record = {
        "claim": claim_id,
        "status": "passed" if passed else "failed",
        "ref": ref,
        "measured": to_jsonable(measured),
        "scale": _STATE["scale"],
        "notebook": _STATE["notebook"],
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "backend": _backend(),
    }
    if _STATE["notebook"] is not None:
        with ledger_path(_STATE["notebook"]).open("a") as fh:
            fh.write(json.dumps(record) + "\n")
    if not passed:
        raise AssertionError(f"claim {claim_id!r} ({ref}) failed at scale {_STATE['scale']!r}: "
                             f"{_format(record['measured'])}")


def check_all_leq(claim_id: str, measured: Any, bound: Any, *, ref: str, rtol: float = 0.0,
                  **extra: Any) -> None:
    """Claim ``measured ≤ bound·(1 + rtol)`` for every sample; records the worst ratio.

    ``rtol`` is a floating-point allowance (say why when it is not 0).
    """
    m = np.asarray(measured, dtype=np.float64).ravel()
    b = np.asarray(bound, dtype=np.float64).ravel()
    if m.shape != b.shape or m.size == 0:
        raise ValueError(f"measured and bound must be non-empty and of equal size, got {m.shape} and {b.shape}")
    ok = bool(np.all(m <= b * (1.0 + rtol)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(b > 0, m / b, np.where(m <= 0, 0.0, np.inf))
    check(claim_id, ok, ref=ref, samples=int(m.size), worst_ratio=float(np.max(ratio)),
                 median_ratio=float(np.median(ratio)), **extra)


def check_between(claim_id: str, value: float, low: float, high: float, *, ref: str, **extra: Any) -> None:
    """Claim ``low ≤ value ≤ high`` (e.g. a fitted slope inside its justified interval)."""
    value = float(value)
    check(claim_id, low <= value <= high, ref=ref, value=value, low=float(low), high=float(high), **extra)


def check_close(claim_id: str, value: Any, reference: Any, *, ref: str, rtol: float, atol: float = 0.0,
                **extra: Any) -> None:
    """Claim ``|value − reference| ≤ atol + rtol·|reference|`` elementwise; records the worst error."""
    a = np.asarray(value, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    err = np.abs(a - b)
    ok = bool(np.all(err <= atol + rtol * np.abs(b)))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = float(np.max(np.where(b != 0, err / np.abs(b), err)))
    check(claim_id, ok, ref=ref, max_abs_error=float(np.max(err)), max_rel_error=rel, rtol=rtol,
                 atol=atol, **extra)


def read_ledgers(directory: str | os.PathLike | None = None) -> dict[str, list[dict[str, Any]]]:
    """All ledgers in ``directory`` (default :func:`ledger_dir`): notebook → list of records."""
    directory = Path(directory) if directory is not None else ledger_dir()
    out: dict[str, list[dict[str, Any]]] = {}
    if not directory.is_dir():
        return out
    for path in sorted(directory.glob("*.jsonl")):
        records = []
        for line in path.read_text().splitlines():
            line = line.strip()
            if line:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    records.append({"claim": "(unreadable ledger line)", "status": "failed", "ref": "",
                                    "measured": {"line": line[:200]}})
        out[path.stem] = records
    return out
