"""Claims as code: every check cell of the book asserts one claim through a typed function.

One function per kind of claim; each decides the claim, records it in the notebook's ledger, shows
ONE verdict line and raises ``AssertionError`` when the claim fails (and, at ``book`` and ``paper``
scale, when it is inconclusive):

* :func:`bound` — measured ≤ bound on every sample (worst and median ratio recorded);
* :func:`rate` — a fitted log–log exponent inside a window fixed before measuring, its 95% interval
  excluding every rival exponent (the rule of :func:`ntkbook.fitting.decide_rate`);
* :func:`order` — Θ(1) versus decay: a rate claim with the standard windows
  :data:`ntkbook.fitting.ORDER_WINDOWS`;
* :func:`close` — elementwise agreement with an independent reference, the tolerance justified by
  the precision used;
* :func:`identity` — an algebraic identity shown as an illustration (recorded, never counted as
  evidence);
* :func:`illustration` — any other check that is shown but cannot count as evidence (a bound too
  loose to fail at the sizes measured, a heuristic the paper does not prove), with the reason why;
* :func:`condition` — a boolean criterion that fits none of the above, stated in words and numbers.

Common keyword arguments (said once for several claims by a ``with`` block, :class:`about`): ``ref`` — the
paper and its own result number, ``"Liu–Zhu–Belkin 2020,
Prop. 2.3"``, ``"Liu–Zhu–Belkin 2020, supp. Lemma F.1"`` (supplement-only results), ``"Liu–Zhu–Belkin
2022, Thm 2"``, ``"Oymak–Soltanolkotabi 2020, Lemma 6.4"``, or ``"book, <what>"`` for the book's own
results; ``label`` — the ``:label:`` of the chapter's statement block the claim supports; ``erratum``
(optional) — one paragraph saying where the paper is wrong or unreproducible (such claims make the
Errata page).

**Status.** ``passed`` | ``failed`` | ``inconclusive``.  Only rate claims (:func:`rate`, :func:`order`)
can be inconclusive: when a rival stays inside the 95% interval, or when the verdict "passed" is reached by
fewer than 95% of the seed-bootstrap resamples of the points (``stability`` in the record,
:func:`ntkbook.fitting.verdict_stability`: a rate that a few lucky seeds decide does not pass).  At ``ci``
scale an inconclusive claim is recorded and shown as such, and the notebook goes on; at ``book`` and
``paper`` scale it raises, like a failure.

**Ledger.** :func:`start` (called by :func:`ntkbook.setup`) begins
``<ledger dir>/<notebook>.jsonl`` (``$NTKBOOK_LEDGER_DIR``, default ``~/.cache/ntkbook/ledger``); each
claim rewrites it atomically with one JSON line per claim (keys sorted)::

    {"claim", "ref", "label", "kind", "criterion", "window",
     "rivals", "measured", "status", "scale", "notebook", "erratum"}

``window`` and ``rivals`` only for rate claims (``rate``, ``order``), ``erratum`` only when given.
There are no dates, times or machine names in a record: two executions of a notebook at one scale
write byte-identical ledgers.  A different summation order (threads, XLA fusion) moves the last bits
of a float, so every float recorded (and every number printed in a verdict, which is formatted from
the recorded value) is rounded (:func:`round_floats`) to :data:`SIGNIFICANT_DIGITS` significant
digits; and the dimensionless numbers the criteria compare with thresholds are first rounded to an
absolute resolution below which they are floating-point noise (:func:`quantize`): ratios
measured/bound and fitted exponents, their standard errors and intervals to :data:`RESOLUTION`
(10⁻⁶), closeness errors to 10⁻³ of the tolerance (an error of 10⁻¹⁶ and one of 2·10⁻¹⁶ are both
recorded as 0).  The numbers a :func:`condition` records are only rounded to significant digits:
pass numbers that are not noise.  The decision itself uses the unrounded numbers.

**The archive as a witness.** A claim judged on the paper-scale archive (``results/paper/``, read with
``ntkbook.reproduce.archived``) by the same claim function as a claim of the build carries the
build claim's id with ``archive/`` after its first segment: ``fig-1/archive/swish-kernel-change-order-one``
witnesses ``fig-1/swish-kernel-change-order-one`` (``witnessed_claim``, ``archive_witnesses``).
The Claims ledger page shows the archive's verdict beside the build's; a witness that differs from its
claim in kind, reference, window, rivals or tolerance is a defect the page's build reports
(``witness_mismatch``).

Claim ids are unique within a notebook: a second claim with the same id and a different record raises
``ValueError`` (an identical record — the same cell executed again — is kept once).
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from . import _validation as V
from . import fitting
from .records import atomic_write_bytes, canonical_json, to_jsonable
from .scales import SCALES

Status = Literal["passed", "failed", "inconclusive"]

#: The three papers as claim references name them, ``ref = "<paper>, <result number>"``.
PAPERS: tuple[str, ...] = ("Liu–Zhu–Belkin 2020", "Liu–Zhu–Belkin 2022", "Oymak–Soltanolkotabi 2020")
#: Every kind a ledger record can have.  ``identity`` and ``illustration`` are illustrations, never evidence.
KINDS: tuple[str, ...] = ("bound", "rate", "order", "close", "identity", "condition", "illustration")
#: Kinds shown as illustrations and never counted as evidence (ledger page, index).
ILLUSTRATION_KINDS: tuple[str, ...] = ("identity", "illustration")
#: Kinds whose records carry ``window`` and ``rivals``.
RATE_KINDS: tuple[str, ...] = ("rate", "order")
STATUSES: tuple[str, ...] = ("passed", "failed", "inconclusive")
#: The field names of a ledger record, in the order the documentation lists them.
FIELDS: tuple[str, ...] = ("claim", "ref", "label", "kind", "criterion", "window", "rivals", "measured",
                           "status", "scale", "notebook", "erratum")
#: Significant digits of every float recorded in a ledger (see the module docstring).
SIGNIFICANT_DIGITS = 6
#: Absolute resolution of recorded ratios and exponents (see the module docstring).
RESOLUTION = 1e-6
#: Resolution of recorded closeness errors, as a fraction of the tolerance.
TOLERANCE_RESOLUTION = 1e-3
#: Significant digits of the numbers in a verdict line.
SHOWN_DIGITS = 3
#: Names of the functions that record a claim (a cell calling one of them is a check cell).
CLAIM_FUNCTIONS: tuple[str, ...] = ("bound", "rate", "order", "close", "identity", "condition", "illustration")
_CALL = re.compile(r"\bclaims\.(" + "|".join(CLAIM_FUNCTIONS) + r")\s*\(")
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")

_STATE: dict[str, Any] = {"notebook": None, "scale": None, "records": [], "about": []}


# ---------------------------------------------------------------------------------------------
# Ledger files
# ---------------------------------------------------------------------------------------------


def ledger_dir() -> Path:
    """Where ledgers are written: ``$NTKBOOK_LEDGER_DIR`` or ``~/.cache/ntkbook/ledger``."""
    env = os.environ.get("NTKBOOK_LEDGER_DIR")
    return Path(env) if env else Path.home() / ".cache" / "ntkbook" / "ledger"


def ledger_path(notebook: str) -> Path:
    return ledger_dir() / f"{notebook}.jsonl"


def start(notebook: str, *, scale: str) -> Path:
    """Begin a fresh, empty ledger for ``notebook`` (its file name without ``.ipynb``) at ``scale``."""
    if not isinstance(notebook, str) or not notebook or "/" in notebook:
        raise ValueError(f"notebook must be a file stem such as '01-tangent-kernel', got {notebook!r}")
    V.choice("scale", scale, SCALES)
    path = ledger_path(notebook)
    atomic_write_bytes(path, b"")
    _STATE.update(notebook=notebook, scale=scale, records=[], about=[])
    return path


def records() -> list[dict[str, Any]]:
    """The records of the claims made since the last :func:`start` (copies, in order)."""
    return [dict(r) for r in _STATE["records"]]


def read_ledgers(directory: str | os.PathLike | None = None) -> dict[str, list[dict[str, Any]]]:
    """All ledgers under ``directory`` (default :func:`ledger_dir`), searched recursively:
    notebook stem → list of records.

    Raises ``ValueError`` naming the file and line when a line is not a JSON object (a corrupt ledger
    must stop the build, never be read as a claim), and when two ledgers belong to the same notebook."""
    directory = Path(directory) if directory is not None else ledger_dir()
    out: dict[str, list[dict[str, Any]]] = {}
    where: dict[str, Path] = {}
    if not directory.is_dir():
        return out
    for path in sorted(directory.rglob("*.jsonl")):
        if path.stem in where:
            raise ValueError(f"two ledgers for notebook {path.stem!r}: {where[path.stem]} and {path}")
        where[path.stem] = path
        recs = []
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"ledger {path}, line {number} is not valid JSON ({err.msg}): {line[:200]!r}; "
                                 "the ledger is corrupt: execute the notebook again") from None
            if not isinstance(rec, dict):
                raise ValueError(f"ledger {path}, line {number} is not a JSON object: {line[:200]!r}; "
                                 "the ledger is corrupt: execute the notebook again")
            recs.append(rec)
        out[path.stem] = recs
    return out


ARCHIVE_SEGMENT = "archive"


def witnessed_claim(claim: str) -> str | None:
    """The build claim that ``claim`` witnesses on the archive, or ``None`` when it is no witness.

    ``"fig-2/archive/bottleneck-kernel-change-decays"`` → ``"fig-2/bottleneck-kernel-change-decays"``:
    the id with its segment ``archive`` (after the first segment) removed.
    """
    parts = _text("claim", claim).split("/")
    if len(parts) < 3 or parts[1] != ARCHIVE_SEGMENT:
        return None
    return "/".join([parts[0], *parts[2:]])


WITNESS_MUST_MATCH: tuple[str, ...] = ("kind", "ref", "label", "window", "rivals")


def witness_mismatch(claim: Mapping[str, Any], witness: Mapping[str, Any]) -> list[str]:
    """The fields in which an archive witness differs from the claim it witnesses (empty when it judges the
    same statement): kind, ref, label, and for rate claims window and rivals; for :func:`close` and
    :func:`bound` claims the tolerances ``rtol``/``atol`` recorded in ``measured``."""
    fields = [f for f in WITNESS_MUST_MATCH if claim.get(f) != witness.get(f)]
    for tol in ("rtol", "atol"):
        mine, theirs = (dict(r.get("measured") or {}).get(tol) for r in (claim, witness))
        if mine != theirs:
            fields.append(tol)
    return fields


def archive_witnesses(records: list[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Map each claim id of ``records`` that the archive witnesses to its witness record.

    Only witnesses whose build claim is among ``records`` (one chapter's ledger) are returned; an
    archive claim with no build twin (e.g. an erratum only the archive can decide) is its own row.
    """
    ids = {r.get("claim") for r in records}
    out: dict[str, Mapping[str, Any]] = {}
    for r in records:
        twin = witnessed_claim(str(r.get("claim")))
        if twin is not None and twin in ids:
            out[twin] = r
    return out


def calls_claims(source: str) -> bool:
    """Whether code ``source`` records a claim (calls one of :data:`CLAIM_FUNCTIONS` as ``claims.<name>(``)."""
    return bool(_CALL.search(source))


# ---------------------------------------------------------------------------------------------
# Records and verdicts
# ---------------------------------------------------------------------------------------------


def round_floats(value: Any, digits: int = SIGNIFICANT_DIGITS) -> Any:
    """``value`` as plain JSON (``ntkbook.records.to_jsonable``) with every float rounded to
    ``digits`` significant digits (−0.0 becomes 0.0)."""
    value = to_jsonable(value)
    if isinstance(value, float):
        r = float(f"{value:.{digits}g}")
        return 0.0 if r == 0 else r
    if isinstance(value, dict):
        return {k: round_floats(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [round_floats(v, digits) for v in value]
    return value


def quantize(value: float, step: float) -> float:
    """``value`` rounded to a multiple of ``step`` (unchanged when ``step`` is 0 or ``value`` is not finite)."""
    value = float(value)
    if step <= 0 or not math.isfinite(value) or not math.isfinite(step):
        return value
    return round(value / step) * step


def fmt(value: Any, digits: int = SHOWN_DIGITS) -> str:
    """A number as a verdict shows it: ints in full, floats to ``digits`` significant digits."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not math.isfinite(v):
            return {math.inf: "inf", -math.inf: "-inf"}.get(v, "nan")
        return f"{v:.{digits}g}"
    if isinstance(value, (list, tuple)):
        items = [fmt(v, digits) for v in value]
        if len(items) > 6:
            items = [*items[:3], f"… ({len(items)} values)"]
        return "[" + ", ".join(items) + "]"
    return str(value)


STATUS_MARKS: dict[str, str] = {"passed": "PASSED", "failed": "FAILED", "inconclusive": "INCONCLUSIVE"}


def kind_label(kind: str) -> str:
    """How a kind is shown: identities are marked as illustrations."""
    return {"identity": "identity, illustration"}.get(kind, kind)


def is_evidence(record: Mapping[str, Any]) -> bool:
    """Whether a record counts as evidence (every kind but :data:`ILLUSTRATION_KINDS`)."""
    return record.get("kind") not in ILLUSTRATION_KINDS


def verdict_line(record: Mapping[str, Any]) -> str:
    """The one-line verdict of a record: status mark, claim id, kind, criterion with its numbers."""
    mark = STATUS_MARKS.get(str(record.get("status")), str(record.get("status")).upper())
    return f"{mark}  {record.get('claim')}  [{kind_label(str(record.get('kind')))}]  {record.get('criterion')}"


def verdict_html(record: Mapping[str, Any]) -> str:
    """The verdict as HTML: a status badge (CSS classes ``ntkbook-verdict``, ``ntkbook-badge``,
    ``ntkbook-{status}``; styles in ``book/_static/ntkbook.css``) and the same words as the line."""
    status = str(record.get("status"))
    kind = str(record.get("kind"))
    e = html.escape
    return (f'<div class="ntkbook-verdict ntkbook-{e(status)} ntkbook-kind-{e(kind)}">'
            f'<span class="ntkbook-badge ntkbook-{e(status)}">{e(STATUS_MARKS.get(status, status.upper()))}</span> '
            f'<code class="ntkbook-claim">{e(str(record.get("claim")))}</code> '
            f'<span class="ntkbook-kind">[{e(kind_label(kind))}]</span> '
            f'<span class="ntkbook-criterion">{e(str(record.get("criterion")))}</span></div>')


@dataclass(frozen=True)
class Verdict:
    """What a claim function shows: the record, as one plain line (``repr``) or styled HTML."""

    record: Mapping[str, Any]

    @property
    def status(self) -> str:
        return str(self.record["status"])

    @property
    def line(self) -> str:
        return verdict_line(self.record)

    def __repr__(self) -> str:
        return self.line

    def _repr_html_(self) -> str:
        return verdict_html(self.record)


def _show(verdict: Verdict) -> None:
    """Display in an IPython kernel (HTML + the plain line as text/plain), print elsewhere."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency of the notebooks
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        from IPython.display import display

        display(verdict)
    else:
        print(verdict.line)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{name} must be a non-empty string, got {value!r}")
    return value.strip()


def is_book_ref(ref: str) -> bool:
    """Whether a claim ``ref`` names one of the book's own results (``"book, <what>"``)."""
    return ref.startswith("book") and len(ref) > 5 and ref[4] in " ,:" and bool(ref[5:].strip())


def _check_ref(ref: Any) -> str:
    ref = _text("ref", ref)
    if is_book_ref(ref):
        return ref
    for paper in PAPERS:
        if ref.startswith(paper + ", ") and ref[len(paper) + 2:].strip():
            return ref
    raise ValueError(f"ref must name the paper and its own result number, e.g. 'Liu–Zhu–Belkin 2020, Prop. 2.3' "
                     f"(papers: {', '.join(PAPERS)}), or 'book, <what>' for the book's own results; got {ref!r}")


def _check_label(label: Any) -> str:
    label = _text("label", label)
    if not _LABEL.match(label):
        raise ValueError(f"label must be the :label: of a statement block (letters, digits, - _ . :), got {label!r}")
    return label


def _check_claim(claim: Any) -> str:
    claim = _text("claim", claim)
    if re.search(r"\s", claim):
        raise ValueError(f"claim id must contain no whitespace, e.g. 'prop-2.3/bound-holds'; got {claim!r}")
    parts = claim.split("/")
    if ARCHIVE_SEGMENT in parts[:1] + parts[2:]:
        raise ValueError(f"claim id {claim!r}: the segment {ARCHIVE_SEGMENT!r} marks an archive witness and may "
                         "only come second, e.g. 'fig-1/archive/swish-kernel-change-order-one'")
    return claim


def _record(claim: str, *, kind: str, ref: str, label: str | None, criterion: str, measured: Mapping[str, Any],
            status: Status, window: Mapping[str, Any] | None = None, rivals: Mapping[str, float] | None = None,
            erratum: str | None = None) -> None:
    """Build, store, show and (when it must) raise on one record."""
    rec: dict[str, Any] = {"claim": claim, "ref": ref, "label": label, "kind": kind, "criterion": criterion}
    if kind in RATE_KINDS:
        rec["window"] = round_floats(window)
        rec["rivals"] = round_floats(rivals)
    rec.update(measured=round_floats(dict(measured)), status=status, scale=_STATE["scale"],
               notebook=_STATE["notebook"])
    if erratum is not None:
        rec["erratum"] = _text("erratum", erratum)
    stored = _STATE["records"]
    same = [i for i, r in enumerate(stored) if r["claim"] == claim]
    if same and stored[same[0]] != rec:
        raise ValueError(f"claim id {claim!r} was already recorded in this run with other numbers: claim ids must be "
                         "unique in a notebook (put the loop variable in the id); after editing a cell in a live "
                         "kernel, run the setup cell again to start a fresh ledger")
    if same:  # the same cell executed again in a live kernel: the identical record is kept once
        stored[same[0]] = rec
    else:
        stored.append(rec)
    if _STATE["notebook"] is not None:
        data = "".join(canonical_json(r) + "\n" for r in stored).encode()
        atomic_write_bytes(ledger_path(_STATE["notebook"]), data)
    verdict = Verdict(rec)
    _show(verdict)
    where = f"({ref}; notebook {_STATE['notebook']!r} at scale {_STATE['scale']!r})"
    if status == "failed":
        raise AssertionError(f"claim failed: {verdict.line} {where}")
    if status == "inconclusive" and _STATE["scale"] != "ci":
        raise AssertionError(f"claim inconclusive: {verdict.line} {where} — at book and paper scale every claim "
                             "must be conclusive: raise the sizes or seeds of this measurement")


def _vector(name: str, value: Any) -> np.ndarray:
    return V.numpy_array(name, value, integers=True).astype(np.float64).ravel()


class about:
    """The result the claims inside a ``with`` block support, said once::

        with nb.claims.about("Liu–Zhu–Belkin 2020, Eq. 2", label="prop-4-eq2"):
            nb.claims.bound("eq-2/lower-bound-holds", ...)
            nb.claims.order("sec-1.1/euclidean-distance-is-theta-1", ...)

    Every claim in the block takes this ``ref`` and ``label`` unless it names its own (a claim of a
    neighbouring result).  Blocks nest; the innermost wins.
    """

    def __init__(self, ref: str, *, label: str):
        self.ref, self.label = _check_ref(ref), _check_label(label)

    def __enter__(self) -> about:
        _STATE["about"].append((self.ref, self.label))
        return self

    def __exit__(self, *exc: Any) -> None:
        _STATE["about"].pop()


def _about(ref: str | None, label: str | None) -> tuple[str, str]:
    """``ref`` and ``label`` of a claim: as given, else from the innermost :class:`about` block."""
    if (ref is None or label is None) and not _STATE["about"]:
        missing = " and ".join(n for n, v in (("ref", ref), ("label", label)) if v is None)
        raise TypeError(f"a claim needs its {missing}: pass them, or make the claim inside "
                        "`with nb.claims.about(ref, label=...)`")
    ctx_ref, ctx_label = _STATE["about"][-1] if _STATE["about"] else (None, None)
    return _check_ref(ctx_ref if ref is None else ref), _check_label(ctx_label if label is None else label)


# ---------------------------------------------------------------------------------------------
# The typed claims
# ---------------------------------------------------------------------------------------------


def bound(claim: str, measured: Any, bound: Any, *, ref: str | None = None, label: str | None = None, rtol: float = 0.0,
          rtol_reason: str | None = None, names: tuple[str, str] = ("measured", "bound"),
          erratum: str | None = None, not_evidence: str | None = None, would_fail: str | None = None) -> None:
    """Claim ``measured ≤ bound·(1 + rtol)`` on every sample.

    Args:
        claim: the claim id, ``"<result>/<what>"``, e.g. ``"prop-2.3/bound-holds"``.
        measured: the measured values (any shape; finite).
        bound: the bound for each sample (same number of elements; finite).
        ref, label, erratum: see the module docstring.
        rtol: relative allowance for floating-point precision; when it is not 0, ``rtol_reason``
            says why (e.g. ``"float32 Lanczos: 1e-5"``) and is recorded.
        names: how the criterion names the two sides, e.g. ``("|ΔK|", "εR·‖∇f‖")``.
        not_evidence: for an inequality that holds by construction of the computation (not by the
            result it illustrates), why — the check is then recorded as an :func:`illustration` (shown,
            raises on failure, never counted as evidence).
        would_fail: what a false statement would have produced (default: "<measured> above <bound> on
            some sample"); see ``would_fail_text``.

    Records ``samples``, ``worst_ratio`` (max measured/bound), ``median_ratio`` and ``rtol``.
    """
    claim, (ref, label) = _check_claim(claim), _about(ref, label)
    m, b = _vector("measured", measured), _vector("bound", bound)
    if m.shape != b.shape:
        raise ValueError(f"measured and bound must have the same number of elements, got {m.size} and {b.size}")
    rtol = V.positive_float("rtol", rtol, allow_zero=True)
    if rtol > 0:
        rtol_reason = _text("rtol_reason", rtol_reason)
    if len(names) != 2:
        raise TypeError(f"names must be a pair (measured name, bound name), got {names!r}")
    ok = bool(np.all(m <= b * (1.0 + rtol)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(b > 0, m / b, np.where(m <= b, 0.0, np.inf))
    values = round_floats({"samples": int(m.size), "worst_ratio": quantize(np.max(ratio), RESOLUTION),
                           "median_ratio": quantize(np.median(ratio), RESOLUTION), "rtol": rtol})
    slack = f"·(1 + {fmt(values['rtol'])})" if rtol > 0 else ""
    criterion = (f"{names[0]} ≤ {names[1]}{slack} on {m.size} sample{'s' if m.size != 1 else ''}; "
                 f"worst ratio {fmt(values['worst_ratio'])}, median {fmt(values['median_ratio'])}")
    if rtol > 0:
        criterion += f" (rtol: {rtol_reason})"
    kind = "bound"
    if not_evidence is not None:
        kind, criterion = "illustration", _not_evidence_text(_text("not_evidence", not_evidence), criterion)
    else:
        criterion += would_fail_text(would_fail, f"{names[0]} above {names[1]} on some sample")
    _record(claim, kind=kind, ref=ref, label=label, criterion=criterion, measured=values,
            status="passed" if ok else "failed", erratum=erratum)


def _rate_claim(kind: str, claim: str, x: Any, y: Any, window: fitting.RateWindow, *, ref: str, label: str,
                variable: str, quantity: str, erratum: str | None, would_fail: str | None = None) -> None:
    fit = fitting.power_law_fit(x, y)
    decision = fitting.decide_rate(fit, window)
    xs = _vector("x", x)
    q = RESOLUTION
    seed = int.from_bytes(hashlib.sha256(claim.encode()).digest()[:4], "little")
    share = quantize(fitting.verdict_stability(x, y, window, decision.status, seed=seed), 1e-3)
    status = decision.status
    if status == "passed" and share < fitting.STABILITY_MIN:
        status = "inconclusive"
    values = round_floats({"slope": quantize(fit.slope, q), "stderr": quantize(fit.stderr, q),
                           "ci_low": quantize(fit.ci_low, q), "ci_high": quantize(fit.ci_high, q), "points": fit.n,
                           "x_min": float(xs.min()), "x_max": float(xs.max()), "r2": quantize(fit.r2, q),
                           "stability": share})
    win = round_floats({"predicted": window.predicted, "low": window.low, "high": window.high,
                        "allowance": window.allowance})
    rivals = round_floats(dict(window.rivals))
    rival_text = ", ".join(
        f"{name} = {fmt(rivals[name])} ({'inside the 95% CI' if name in decision.rivals_in_ci else 'excluded'})"
        for name, _ in window.rivals)
    criterion = (f"{quantity} ∝ {variable}^a: a = {fmt(values['slope'])} ± {fmt(values['stderr'], 2)} "
                 f"(95% CI [{fmt(values['ci_low'])}, {fmt(values['ci_high'])}], {fit.n} points, "
                 f"{variable} {fmt(values['x_min'], 4)}–{fmt(values['x_max'], 4)}); "
                 f"window [{fmt(win['low'])}, {fmt(win['high'])}) around {fmt(win['predicted'])}; "
                 f"rivals {rival_text}; this verdict in {fmt(100 * share)}% of "
                 f"{fitting.STABILITY_RESAMPLES} seed resamples (at least {fmt(100 * fitting.STABILITY_MIN)}% "
                 "to pass)")
    criterion += would_fail_text(would_fail, f"an exponent outside the window, near "
                                 f"{' or '.join(name for name, _ in window.rivals)}")
    _record(claim, kind=kind, ref=ref, label=label, criterion=criterion, measured=values, status=status,
            window=win, rivals=rivals, erratum=erratum)


def rate(claim: str, x: Any, y: Any, *, predicted: float, window: tuple[float, float],
         rivals: Mapping[str, float], allowance: str, ref: str | None = None, label: str | None = None,
         variable: str = "m", quantity: str = "y", erratum: str | None = None,
         would_fail: str | None = None) -> None:
    """Claim that y ∝ x^a with a fitted exponent a inside ``window`` and every rival ruled out.

    The exponent is the least-squares slope of log y on log x over all points
    (:func:`ntkbook.fitting.power_law_fit`; several seeds per x are several points), with its
    Student-t 95% interval.  Status (:func:`ntkbook.fitting.decide_rate`): passed when the slope is in
    ``window`` and the 95% interval excludes every rival exponent; failed when the slope is outside
    ``window``; inconclusive otherwise.

    Args:
        claim: the claim id.
        x, y: positive values (same number of points).
        predicted: the exponent the theory predicts.
        window: ``(low, high)``, the half-open window [low, high), fixed before measuring around
            ``predicted``; must contain ``predicted`` and no rival (``ValueError`` otherwise).  Never
            derived from the fit.
        rivals: name → exponent of the alternatives the data must rule out, e.g.
            ``{"Θ(1)": 0.0, "m^-3/4": -0.75}`` (at least one).
        allowance: the text that justifies the window's width (finite-size reasoning), as the chapter
            states it next to the claim.
        ref, label, erratum: see the module docstring.
        variable, quantity: names used in the criterion (``"‖H‖ ∝ m^a"``).

    Records the window, the rivals, the slope, its standard error and 95% interval, the number of
    points, the range of x and r².
    """
    claim, (ref, label) = _check_claim(claim), _about(ref, label)
    win = fitting.rate_window(predicted, window, rivals, allowance=allowance)
    _rate_claim("rate", claim, x, y, win, ref=ref, label=label, variable=_text("variable", variable),
                quantity=_text("quantity", quantity), erratum=erratum, would_fail=would_fail)


def order(claim: str, x: Any, y: Any, *, expect: Literal["constant", "decay"], ref: str | None = None,
          label: str | None = None,
          variable: str = "m", quantity: str = "y", erratum: str | None = None,
          would_fail: str | None = None) -> None:
    """Claim that y is Θ(1) in x (``expect="constant"``) or decays (``expect="decay"``).

    A rate claim (same fit, same rule) with the standard windows of
    :data:`ntkbook.fitting.ORDER_WINDOWS`:

    * ``"constant"``: predicted 0, window [−1/4, 1/4), rivals m^-1/2 (−1/2) and m^+1/2 (+1/2);
    * ``"decay"``: predicted −1/2, window [−2, −1/4), rival Θ(1) (0).

    Each window ends half-way between the prediction and the nearest rival, so the data decide for
    the nearer exponent, and the 95% interval must rule out the other.  Windows are half-open
    (:class:`ntkbook.fitting.RateWindow`), so the meeting point −1/4 is Θ(1), never both.
    """
    claim, (ref, label) = _check_claim(claim), _about(ref, label)
    V.choice("expect", expect, fitting.ORDER_WINDOWS)
    _rate_claim("order", claim, x, y, fitting.ORDER_WINDOWS[expect], ref=ref, label=label,
                variable=_text("variable", variable), quantity=_text("quantity", quantity), erratum=erratum,
                would_fail=would_fail)


def _closeness(value: Any, reference: Any, rtol: float, atol: float) -> tuple[bool, dict[str, Any]]:
    a = np.asarray(V.numpy_array("value", value, integers=True), dtype=np.float64)
    b = np.asarray(V.numpy_array("reference", reference, integers=True), dtype=np.float64)
    if a.shape != b.shape and b.ndim != 0:
        raise ValueError(f"value and reference must have the same shape (or a scalar reference), "
                         f"got {a.shape} and {b.shape}")
    b = np.broadcast_to(b, a.shape)
    rtol = V.positive_float("rtol", rtol, allow_zero=True)
    atol = V.positive_float("atol", atol, allow_zero=True)
    err = np.abs(a - b)
    tol = atol + rtol * np.abs(b)
    ok = bool(np.all(err <= tol))
    with np.errstate(divide="ignore", invalid="ignore"):
        used = np.where(tol > 0, err / tol, np.where(err == 0, 0.0, np.inf))
    # the worst relative error over the elements whose reference is not 0 (None when it is 0 everywhere)
    nonzero = b != 0
    max_rel = quantize(float(np.max(err[nonzero] / np.abs(b[nonzero]))), TOLERANCE_RESOLUTION * rtol) \
        if np.any(nonzero) else None
    r = TOLERANCE_RESOLUTION
    return ok, round_floats({"elements": int(a.size),
                             "max_abs_error": quantize(np.max(err), r * float(np.max(tol))),
                             "max_rel_error": max_rel,
                             "tolerance_used": quantize(np.max(used), r), "rtol": rtol, "atol": atol})


def _closeness_text(values: Mapping[str, Any]) -> str:
    tol = f"{fmt(values['rtol'])}·|reference|"
    if values["atol"]:
        tol = f"{fmt(values['atol'])} + " + tol
    n = values["elements"]
    rel = values["max_rel_error"]
    rel = "undefined (reference 0)" if rel is None else fmt(rel)
    return (f"|value − reference| ≤ {tol} on {n} element{'s' if n != 1 else ''}; worst relative error "
            f"{rel}, worst absolute error {fmt(values['max_abs_error'])} "
            f"({fmt(values['tolerance_used'])} of the tolerance)")


def close(claim: str, value: Any, reference: Any, *, rtol: float, atol: float = 0.0, precision_reason: str,
          ref: str | None = None, label: str | None = None, erratum: str | None = None,
          would_fail: str | None = None) -> None:
    """Claim ``|value − reference| ≤ atol + rtol·|reference|`` elementwise, against an independent reference
    (closed form, dense computation, another quadrature).

    ``precision_reason`` justifies the tolerance by the precision used, e.g. ``"float32 HVPs: 1e-5"``;
    it is recorded in the criterion.  Records the number of elements and the worst absolute and
    relative errors.
    """
    claim, (ref, label) = _check_claim(claim), _about(ref, label)
    reason = _text("precision_reason", precision_reason)
    ok, values = _closeness(value, reference, rtol, atol)
    text = f"{_closeness_text(values)} ({reason})" + would_fail_text(would_fail, "an error above the tolerance")
    _record(claim, kind="close", ref=ref, label=label, criterion=text,
            measured=values, status="passed" if ok else "failed", erratum=erratum)


def identity(claim: str, value: Any, reference: Any, *, rtol: float, atol: float = 0.0, ref: str | None = None,
             label: str | None = None,
             erratum: str | None = None) -> None:
    """Show an algebraic identity numerically (an illustration, never evidence: the ledger and the
    index list it as such).  Passes or fails like :func:`close`, and a failure raises (it means a bug)."""
    claim, (ref, label) = _check_claim(claim), _about(ref, label)
    ok, values = _closeness(value, reference, rtol, atol)
    _record(claim, kind="identity", ref=ref, label=label, criterion=f"illustration: {_closeness_text(values)}",
            measured=values, status="passed" if ok else "failed", erratum=erratum)


def condition(claim: str, ok: Any, *, criterion: str, ref: str | None = None, label: str | None = None,
              erratum: str | None = None, would_fail: str | None = None, **measured: Any) -> None:
    """Claim a boolean criterion that fits none of the other kinds (e.g. every run met the stopping
    rule).

    Args:
        ok: the outcome, a single boolean computed from measurements (never a constant).
        criterion: the criterion in words and numbers, e.g. ``"every run reached loss ≤ 1e-6 within
            2000 steps"``.
        **measured: the numbers behind it (scalars or small arrays), recorded.
    """
    claim, (ref, label) = _check_claim(claim), _about(ref, label)
    passed = _boolean(claim, ok)
    text = _text("criterion", criterion) + ("" if would_fail is None else would_fail_text(would_fail, ""))
    _record(claim, kind="condition", ref=ref, label=label, criterion=text,
            measured=measured, status="passed" if passed else "failed", erratum=erratum)


def illustration(claim: str, ok: Any, *, criterion: str, why: str, ref: str | None = None,
                 label: str | None = None,
                 erratum: str | None = None, **measured: Any) -> None:
    """Show a check that is not evidence: it is recorded and displayed like a claim (kind ``illustration``), and
    a failure raises like any claim's, but the ledger page and the index never count it as evidence.

    For what passes by construction or by slack at the sizes the book can afford — a guaranteed rate of
    1 − O(10⁻⁹) per step over a few thousand steps, a heuristic bound the paper does not prove — so that
    the reader sees it without mistaking it for a test of the result.

    Args:
        ok: the outcome, a single boolean computed from measurements (never a constant).
        criterion: the criterion in words and numbers.
        why: why this is an illustration and not evidence (recorded in the criterion).
        **measured: the numbers behind it, recorded.
    """
    claim, (ref, label) = _check_claim(claim), _about(ref, label)
    passed = _boolean(claim, ok)
    text = _not_evidence_text(_text("why", why), _text("criterion", criterion))
    _record(claim, kind="illustration", ref=ref, label=label, criterion=text, measured=measured,
            status="passed" if passed else "failed", erratum=erratum)


def would_fail_text(would_fail: str | None, default: str) -> str:
    """The clause an evidence claim's criterion ends with: what a false statement would have produced (issue of
    falsifiability: a check that no false statement could fail is an identity or an illustration)."""
    text = default if would_fail is None else _text("would_fail", would_fail)
    return f"; a false statement would show {text}"


def _not_evidence_text(why: str, criterion: str) -> str:
    """The criterion of a check shown as an illustration: why it is not evidence, then what it checks."""
    return f"illustration, not evidence ({why}): {criterion}"


def _boolean(claim: str, condition: Any) -> bool:
    cond = np.asarray(condition)
    if cond.shape != () or cond.dtype != np.bool_:
        raise TypeError(f"condition of claim {claim!r} must be a single boolean, got {condition!r}")
    return bool(cond)


__all__ = [
    "CLAIM_FUNCTIONS",
    "FIELDS",
    "ILLUSTRATION_KINDS",
    "KINDS",
    "PAPERS",
    "RATE_KINDS",
    "RESOLUTION",
    "SIGNIFICANT_DIGITS",
    "STATUSES",
    "STATUS_MARKS",
    "TOLERANCE_RESOLUTION",
    "Verdict",
    "about",
    "bound",
    "calls_claims",
    "close",
    "condition",
    "fmt",
    "identity",
    "illustration",
    "is_book_ref",
    "is_evidence",
    "kind_label",
    "ledger_dir",
    "ledger_path",
    "order",
    "quantize",
    "rate",
    "read_ledgers",
    "records",
    "round_floats",
    "start",
    "verdict_html",
    "verdict_line",
    "would_fail_text",
]
