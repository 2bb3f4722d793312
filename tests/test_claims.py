"""The typed claims of ntkbook.claims and the rate rule of ntkbook.fitting, on constructed data.

Every kind is shown to pass, to fail and (rates) to be inconclusive; window/rival validation; the
scale rule for inconclusive claims; byte-identical ledgers; the exact record fields; verdict lines.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ntkbook import claims, fitting

P20 = "Liu–Zhu–Belkin 2020, Prop. 2.3"
RIVALS = {"Θ(1)": 0.0, "m^-3/4": -0.75}
M = np.repeat(np.geomspace(64, 16384, 9), 4)


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("NTKBOOK_LEDGER_DIR", str(tmp_path))
    claims.start("99-test", scale="ci")
    return tmp_path / "99-test.jsonl"


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def power_law(exponent, noise, seed=0, x=M):
    rng = np.random.default_rng(seed)
    return 2.0 * x**exponent * np.exp(noise * rng.normal(size=x.size))


def rate(claim, y, x=M, **kw):
    kw = {"predicted": -0.5, "window": (-0.6, -0.4), "rivals": RIVALS, "allowance": "log factors: ±0.1",
          "ref": "Liu–Zhu–Belkin 2020, Thm 3.1", "label": "thm-3-1", **kw}
    claims.rate(claim, x, y, **kw)


# ---------------------------------------------------------------------------------------------
# Each kind: passed / failed / inconclusive
# ---------------------------------------------------------------------------------------------


def test_bound_passes_and_fails(ledger, capsys):
    claims.bound("prop-2.3/bound-holds", [0.1, 0.2, 0.5], [1.0, 1.0, 1.0], ref=P20, label="prop-2-3")
    assert capsys.readouterr().out.strip() == ("PASSED  prop-2.3/bound-holds  [bound]  measured ≤ bound on 3 samples; "
                                               "worst ratio 0.5, median 0.2; a false statement would show measured "
                                               "above bound on some sample")
    with pytest.raises(AssertionError, match=r"FAILED  prop-2.3/too-tight  \[bound\].*worst ratio 1.5"):
        claims.bound("prop-2.3/too-tight", [1.5, 0.2], [1.0, 1.0], ref=P20, label="prop-2-3")
    recs = lines(ledger)
    assert [r["status"] for r in recs] == ["passed", "failed"]
    assert recs[0]["measured"] == {"samples": 3, "worst_ratio": 0.5, "median_ratio": 0.2, "rtol": 0.0}
    assert recs[1]["measured"]["worst_ratio"] == 1.5


def test_bound_rtol_needs_a_reason(ledger):
    with pytest.raises(TypeError, match="rtol_reason"):
        claims.bound("b/rtol", [1.0], [1.0], ref=P20, label="prop-2-3", rtol=1e-6)
    claims.bound("b/rtol", [1.0 + 1e-7], [1.0], ref=P20, label="prop-2-3", rtol=1e-6,
                 rtol_reason="float32 Lanczos residual 1e-6")
    rec = lines(ledger)[0]
    assert rec["status"] == "passed" and "float32 Lanczos residual 1e-6" in rec["criterion"]
    assert rec["measured"]["rtol"] == 1e-6
    with pytest.raises(ValueError, match="same number of elements"):
        claims.bound("b/sizes", [1.0, 2.0], [1.0], ref=P20, label="prop-2-3")
    with pytest.raises(ValueError, match="non-finite"):
        claims.bound("b/nan", [math.nan], [1.0], ref=P20, label="prop-2-3")


def test_rate_passes_fails_and_is_inconclusive(ledger):
    rate("thm-3.1/clean", power_law(-0.5, 0.02))
    with pytest.raises(AssertionError, match=r"FAILED  thm-3\.1/slow"):
        rate("thm-3.1/slow", power_law(-0.3, 0.02))
    # the right exponent but so few, so noisy points that the 95% interval contains Θ(1): inconclusive
    few = np.array([64.0, 128.0, 256.0])
    rate("thm-3.1/noisy", 2.0 * few**-0.5 * np.exp([0.2, -0.25, 0.1]), x=few)
    recs = lines(ledger)
    assert [r["status"] for r in recs] == ["passed", "failed", "inconclusive"]
    noisy = recs[2]
    assert -0.6 <= noisy["measured"]["slope"] <= -0.4
    assert noisy["measured"]["ci_low"] <= -0.75 or noisy["measured"]["ci_high"] >= 0.0
    assert "inside the 95% CI" in noisy["criterion"]
    clean = recs[0]
    assert clean["window"] == {"predicted": -0.5, "low": -0.6, "high": -0.4, "allowance": "log factors: ±0.1"}
    assert clean["rivals"] == RIVALS
    assert set(clean["measured"]) == {"slope", "stderr", "ci_low", "ci_high", "points", "x_min", "x_max", "r2",
                                         "stability"}
    assert clean["measured"]["points"] == M.size and clean["measured"]["x_min"] == 64.0


def test_a_noisier_measurement_never_passes_more_easily(ledger):
    """The window does not grow with the standard error: a wrong exponent fails however noisy the data,
    as long as the slope lands outside the window, and noise only turns a pass into inconclusive."""
    y = power_law(-0.2, 0.02)
    with pytest.raises(AssertionError):
        rate("r/wrong", y)
    fit = fitting.power_law_fit(M, y)
    win = fitting.rate_window(-0.5, (-0.6, -0.4), RIVALS, allowance="x")
    assert fitting.decide_rate(fit, win).status == "failed"
    # the same slope with a huge interval is still judged by the slope: failed, not inconclusive
    wide = fitting.PowerLawFit(-0.2, 0.0, 1.0, -3.0, 2.6, 0.1, 10)
    assert fitting.decide_rate(wide, win).status == "failed"
    inside = fitting.PowerLawFit(-0.5, 0.0, 1.0, -3.0, 2.0, 0.1, 10)
    decision = fitting.decide_rate(inside, win)
    assert decision.status == "inconclusive" and decision.rivals_in_ci == ("Θ(1)", "m^-3/4")


def test_inconclusive_raises_at_book_and_paper_but_not_at_ci(tmp_path, monkeypatch):
    monkeypatch.setenv("NTKBOOK_LEDGER_DIR", str(tmp_path))
    few = np.array([64.0, 128.0, 256.0])
    y = 2.0 * few**-0.5 * np.exp([0.2, -0.25, 0.1])
    for scale in ("ci", "book", "paper"):
        claims.start(f"99-{scale}", scale=scale)
        if scale == "ci":
            rate("r/inconclusive", y, x=few)
        else:
            with pytest.raises(AssertionError, match=r"inconclusive.*raise the sizes or seeds"):
                rate("r/inconclusive", y, x=few)
        assert lines(tmp_path / f"99-{scale}.jsonl")[0]["status"] == "inconclusive"


def test_window_and_rival_validation(ledger):
    y = power_law(-0.5, 0.02)
    with pytest.raises(ValueError, match="contains the rival exponent m\\^-3/4"):
        rate("r/v", y, window=(-0.8, -0.4))
    with pytest.raises(ValueError, match="does not contain the predicted exponent"):
        rate("r/v", y, window=(-0.45, -0.3), rivals={"Θ(1)": 0.0})
    with pytest.raises(ValueError, match="at least one rival"):
        rate("r/v", y, rivals={})
    with pytest.raises(ValueError, match="low < high"):
        rate("r/v", y, window=(-0.4, -0.6))
    with pytest.raises(ValueError, match="allowance"):
        rate("r/v", y, allowance=" ")
    with pytest.raises(TypeError, match="pair"):
        rate("r/v", y, window=-0.5)
    assert not ledger.read_text(), "a programming error records nothing"


def test_order_constant_and_decay(ledger):
    claims.order("k/constant", M, 1.0 + 0.01 * np.random.default_rng(1).normal(size=M.size), expect="constant",
                 ref="book, the kernel's limit", label="thm-3-1")
    claims.order("h/decays", M, power_law(-0.5, 0.02), expect="decay", ref="book, the Hessian decays",
                 label="thm-3-1")
    with pytest.raises(AssertionError, match="FAILED  k/not-constant"):
        claims.order("k/not-constant", M, power_law(-0.5, 0.02), expect="constant", ref="book, x", label="thm-3-1")
    with pytest.raises(AssertionError, match="FAILED  h/constant"):
        claims.order("h/constant", M, power_law(0.0, 0.02), expect="decay", ref="book, x", label="thm-3-1")
    few = np.array([64.0, 128.0])
    claims.order("k/two-points", few, np.array([1.0, 1.1]), expect="constant", ref="book, x", label="thm-3-1")
    recs = lines(ledger)
    assert [r["status"] for r in recs] == ["passed", "passed", "failed", "failed", "inconclusive"]
    assert {r["kind"] for r in recs} == {"order"}
    assert recs[0]["window"]["low"] == -0.25 and recs[0]["rivals"] == {"m^-1/2": -0.5, "m^+1/2": 0.5}
    assert recs[1]["window"] == {"predicted": -0.5, "low": -2.0, "high": -0.25,
                                 "allowance": fitting.ORDER_WINDOWS["decay"].allowance}
    with pytest.raises(ValueError, match="unknown expect"):
        claims.order("k/x", M, M, expect="grow", ref="book, x", label="thm-3-1")


def test_order_windows_exclude_their_rivals():
    for win in fitting.ORDER_WINDOWS.values():
        assert win.contains(win.predicted)
        assert not any(win.contains(e) for _, e in win.rivals)


def test_windows_are_half_open_so_adjacent_windows_share_no_exponent():
    constant, decay = fitting.ORDER_WINDOWS["constant"], fitting.ORDER_WINDOWS["decay"]
    assert decay.high == constant.low == -0.25
    assert constant.contains(-0.25) and not decay.contains(-0.25)  # the meeting point is Θ(1) only
    assert decay.contains(np.nextafter(-0.25, -1.0)) and not constant.contains(np.nextafter(-0.25, -1.0))
    assert not constant.contains(0.25) and constant.contains(np.nextafter(0.25, 0.0))
    grid = np.linspace(-2.5, 1.0, 1401)  # includes ±0.25 exactly
    assert not np.any([constant.contains(a) and decay.contains(a) for a in grid])
    m_half = fitting.rate_window(-0.5, (-0.75, -0.25), {"Θ(1)": 0.0, "m^-1": -1.0}, allowance="x")
    assert not any(m_half.contains(a) and constant.contains(a) for a in grid)
    # a rival at the excluded upper end is allowed; one at the included lower end is not
    fitting.rate_window(-0.5, (-0.75, 0.0), {"Θ(1)": 0.0}, allowance="x")
    with pytest.raises(ValueError, match=r"contains the rival exponent"):
        fitting.rate_window(-0.5, (-1.0, -0.25), {"m^-1": -1.0}, allowance="x")
    with pytest.raises(ValueError, match=r"does not contain the predicted"):
        fitting.rate_window(-0.25, (-0.75, -0.25), {"Θ(1)": 0.0}, allowance="x")


def test_a_slope_on_the_meeting_point_is_theta_1_and_not_decay():
    fit = fitting.PowerLawFit(slope=-0.25, intercept=0.0, stderr=0.01, ci_low=-0.27, ci_high=-0.23, r2=1.0, n=12)
    assert fitting.decide_rate(fit, fitting.ORDER_WINDOWS["constant"]).status == "passed"
    decay = fitting.decide_rate(fit, fitting.ORDER_WINDOWS["decay"])
    assert decay.status == "failed" and "above the window [-2, -0.25)" in decay.reasons[0]


def test_close_and_identity(ledger, capsys):
    claims.close("hvp/dense", [1.0, 2.0], [1.0, 2.0 + 1e-7], rtol=1e-6, precision_reason="float32 HVPs: 1e-6",
                 ref="Liu–Zhu–Belkin 2022, Thm 2", label="ch7-thm-2")
    with pytest.raises(AssertionError, match="FAILED  hvp/off"):
        claims.close("hvp/off", [1.0, 2.1], [1.0, 2.0], rtol=1e-6, precision_reason="float32 HVPs: 1e-6",
                     ref="Liu–Zhu–Belkin 2022, Thm 2", label="ch7-thm-2")
    claims.identity("prop-2.1/equality", 3.0, 3.0, rtol=1e-12, ref="Liu–Zhu–Belkin 2020, Prop. 2.1", label="prop-2-1")
    with pytest.raises(AssertionError, match=r"\[identity, illustration\]"):
        claims.identity("prop-2.1/broken", 3.0, 3.5, rtol=1e-12, ref="Liu–Zhu–Belkin 2020, Prop. 2.1",
                        label="prop-2-1")
    recs = lines(ledger)
    assert [(r["kind"], r["status"]) for r in recs] == [("close", "passed"), ("close", "failed"),
                                                        ("identity", "passed"), ("identity", "failed")]
    assert "float32 HVPs: 1e-6" in recs[0]["criterion"]
    assert recs[0]["measured"]["elements"] == 2 and recs[1]["measured"]["max_rel_error"] == 0.05
    assert recs[2]["criterion"].startswith("illustration: ")
    assert "PASSED  prop-2.1/equality  [identity, illustration]" in capsys.readouterr().out
    with pytest.raises(TypeError, match="precision_reason"):
        claims.close("c/x", 1.0, 1.0, rtol=1e-6, precision_reason="", ref=P20, label="prop-2-3")


def test_condition(ledger):
    claims.condition("thm-5.1/stopping", True, criterion="every run reached loss ≤ 1e-6 within 2000 steps",
                     ref="Liu–Zhu–Belkin 2020, Thm 5.1", label="thm-5b-5-1", runs=8, worst_steps=1234)
    with pytest.raises(AssertionError, match=r"FAILED  thm-5\.1/never"):
        claims.condition("thm-5.1/never", np.bool_(False), criterion="c", ref="Liu–Zhu–Belkin 2020, Thm 5.1",
                         label="thm-5b-5-1")
    with pytest.raises(TypeError, match="single boolean"):
        claims.condition("c/float", 1.0, criterion="c", ref=P20, label="prop-2-3")
    rec = lines(ledger)[0]
    assert rec["measured"] == {"runs": 8, "worst_steps": 1234}
    assert rec["criterion"] == "every run reached loss ≤ 1e-6 within 2000 steps"


def test_illustration_is_recorded_but_not_evidence(ledger, capsys):
    claims.illustration("thm-2.6/slow-bound", np.bool_(True), criterion="mean ≤ bound; worst ratio 0.99995",
                        why="the bound falls by 3e-7 over the run", ref="Oymak–Soltanolkotabi 2020, Eq. (2.10)",
                        label="thm-9-2-6", worst_ratio=0.99995)
    with pytest.raises(AssertionError, match=r"FAILED  thm-2\.6/broken  \[illustration\]"):
        claims.illustration("thm-2.6/broken", False, criterion="c", why="w", ref=P20, label="prop-2-3")
    with pytest.raises(TypeError, match="why"):
        claims.illustration("thm-2.6/no-reason", True, criterion="c", why=" ", ref=P20, label="prop-2-3")
    recs = lines(ledger)
    assert [(r["kind"], r["status"]) for r in recs] == [("illustration", "passed"), ("illustration", "failed")]
    assert recs[0]["criterion"] == ("illustration, not evidence (the bound falls by 3e-7 over the run): "
                                    "mean ≤ bound; worst ratio 0.99995")
    assert recs[0]["measured"] == {"worst_ratio": 0.99995}
    assert not claims.is_evidence(recs[0]) and not claims.is_evidence({"kind": "identity"})
    assert all(claims.is_evidence({"kind": k}) for k in claims.KINDS if k not in claims.ILLUSTRATION_KINDS)
    assert "PASSED  thm-2.6/slow-bound  [illustration]" in capsys.readouterr().out


def test_bound_that_holds_by_construction_is_an_illustration(ledger):
    why = "v is built with <a, v - w0> = 0"
    claims.bound("app-c/by-construction", [1.0, 2.0], [1.0, 3.0], ref=P20, label="prop-2-3", not_evidence=why)
    with pytest.raises(AssertionError, match=r"FAILED  app-c/broken  \[illustration\]"):
        claims.bound("app-c/broken", [2.0], [1.0], ref=P20, label="prop-2-3", not_evidence=why)
    with pytest.raises(TypeError, match="not_evidence"):
        claims.bound("app-c/no-reason", [1.0], [1.0], ref=P20, label="prop-2-3", not_evidence="")
    recs = lines(ledger)
    assert [(r["kind"], r["status"]) for r in recs] == [("illustration", "passed"), ("illustration", "failed")]
    assert recs[0]["criterion"] == (f"illustration, not evidence ({why}): measured ≤ bound on 2 samples; "
                                    "worst ratio 1, median 0.833")
    assert not claims.is_evidence(recs[0]) and recs[0]["measured"]["worst_ratio"] == 1.0


def test_erratum_is_recorded(ledger):
    claims.rate("ex-2-relu/random-direction", M, power_law(-0.75, 0.02), predicted=-0.75, window=(-0.85, -0.65),
                rivals={"m^-1/2 (the book's old claim)": -0.5, "m^-1": -1.0}, allowance="±0.1: sign cancellations",
                ref="book, ReLU kernel change in a random direction", label="ex-2-relu",
                erratum="The chapter said ReLU has the same O(R/√m) rate as smooth activations; it is m^-3/4.")
    rec = lines(ledger)[0]
    assert rec["status"] == "passed" and rec["erratum"].startswith("The chapter said")


# ---------------------------------------------------------------------------------------------
# Records, refs, determinism
# ---------------------------------------------------------------------------------------------


def test_record_fields_are_exactly_the_documented_ones(ledger):
    claims.bound("a/b", [1.0], [2.0], ref=P20, label="prop-2-3")
    rate("a/rate", power_law(-0.5, 0.02), erratum="text")
    claims.condition("a/condition", True, criterion="c", ref=P20, label="prop-2-3", n=3)
    base = {"claim", "ref", "label", "kind", "criterion", "measured", "status", "scale", "notebook"}
    bound_rec, rate_rec, cond = lines(ledger)
    assert set(bound_rec) == base
    assert set(rate_rec) == base | {"window", "rivals", "erratum"}
    assert set(cond) == base and cond["kind"] == "condition" and cond["label"] == "prop-2-3"
    assert {r["kind"] for r in (bound_rec, rate_rec, cond)} <= set(claims.KINDS)
    assert set(rate_rec) <= set(claims.FIELDS)
    assert bound_rec["scale"] == "ci" and bound_rec["notebook"] == "99-test"
    assert not any(k in bound_rec for k in ("date", "time", "backend"))


def test_refs_labels_and_ids_are_validated(ledger):
    for bad in ("Prop. 2.3", "Liu et al. 2020, Prop. 2.3", "Liu-Zhu-Belkin 2020, Prop. 2.3", "book", "book,  "):
        with pytest.raises(ValueError, match="ref must name the paper"):
            claims.bound("a/b", [1.0], [2.0], ref=bad, label="prop-2-3")
    for i, good in enumerate(("Liu–Zhu–Belkin 2020, supp. Lemma F.1", "Liu–Zhu–Belkin 2022, Thm 2",
                              "Oymak–Soltanolkotabi 2020, Lemma 6.4", "book, Θ(1) limit of the kernel")):
        claims.bound(f"a/{i}", [1.0], [2.0], ref=good, label="prop-2-3")
    with pytest.raises(ValueError, match="label"):
        claims.bound("a/b", [1.0], [2.0], ref=P20, label="has space")
    with pytest.raises(TypeError, match="label"):
        claims.bound("a/b", [1.0], [2.0], ref=P20, label=None)
    with pytest.raises(ValueError, match="whitespace"):
        claims.bound("a b", [1.0], [2.0], ref=P20, label="prop-2-3")


def test_claim_ids_are_unique_in_a_notebook(ledger):
    claims.bound("a/b", [1.0], [2.0], ref=P20, label="prop-2-3")
    claims.bound("a/c", [1.0], [2.0], ref=P20, label="prop-2-3")
    claims.bound("a/b", [1.0], [2.0], ref=P20, label="prop-2-3")  # the same cell again: kept once
    with pytest.raises(ValueError, match="already recorded in this run with other numbers"):
        claims.bound("a/b", [1.0], [4.0], ref=P20, label="prop-2-3")  # e.g. a loop reusing one id
    recs = lines(ledger)
    assert [r["claim"] for r in recs] == ["a/b", "a/c"] and recs[0]["measured"]["worst_ratio"] == 0.5
    assert claims.records() == recs


def _run_all(noise_bits: float) -> None:
    """Every kind once; ``noise_bits`` perturbs the inputs in the last bits (summation-order noise)."""
    e = 1.0 + noise_bits
    claims.bound("a/bound", np.array([0.1, 0.2, 0.3]) * e, [1.0, 1.0, 1.0], ref=P20, label="prop-2-3")
    rate("a/rate", power_law(-0.5, 0.02) * e)
    claims.order("a/order", M, (1.0 + 0.01 * np.random.default_rng(3).normal(size=M.size)) * e, expect="constant",
                 ref="book, x", label="thm-3-1")
    claims.close("a/close", np.array([1.0, 2.0]) * e, [1.0, 2.0], rtol=1e-6, precision_reason="float64: 1e-12",
                 ref=P20, label="prop-2-3")
    claims.identity("a/identity", 2.0 * e, 2.0, rtol=1e-9, ref=P20, label="prop-2-3")
    claims.condition("a/condition", True, criterion="always", ref=P20, label="prop-2-3", value=0.123456789 * e)
    claims.bound("a/bound-ratios", [1.0 * e, 2.0], [2.0, 2.0], ref=P20, label="prop-2-3")


def test_two_runs_write_byte_identical_ledgers(tmp_path, monkeypatch):
    texts = []
    for i, noise in enumerate((0.0, 3e-16)):
        monkeypatch.setenv("NTKBOOK_LEDGER_DIR", str(tmp_path / f"run{i}"))
        claims.start("01-chapter", scale="ci")
        _run_all(noise)
        texts.append((tmp_path / f"run{i}" / "01-chapter.jsonl").read_bytes())
    assert texts[0] == texts[1]
    assert len(texts[0].splitlines()) == 7


def test_round_floats_and_fmt():
    assert claims.round_floats({"a": 0.1234567891, "b": [1e-20 * 3.14159265, -0.0], "c": 3, "d": math.inf}) == {
        "a": 0.123457, "b": [3.14159e-20, 0.0], "c": 3, "d": "inf"}
    assert claims.fmt(0.18512) == "0.185" and claims.fmt(108) == "108" and claims.fmt(math.nan) == "nan"
    assert claims.fmt(list(range(10))) == "[0, 1, 2, … (10 values)]"


def test_verdict_html_and_line_agree():
    rec = {"claim": "x/y", "kind": "identity", "status": "passed", "criterion": "a < b & c"}
    v = claims.Verdict(rec)
    assert repr(v) == "PASSED  x/y  [identity, illustration]  a < b & c"
    html = v._repr_html_()
    assert 'class="ntkbook-badge ntkbook-passed"' in html and "a &lt; b &amp; c" in html
    assert "ntkbook-kind-identity" in html


def test_calls_claims():
    assert claims.calls_claims("nb.claims.rate(\n 'x', ...)")
    for name in ("bound", "rate", "order", "close", "identity", "condition", "illustration"):
        assert claims.calls_claims(f"nb.claims.{name}('a', ok, ref=r, label=l)")
    assert set(claims.CLAIM_FUNCTIONS) == set(claims.KINDS)
    for removed in ("check", "check_all_leq", "check_between", "check_close"):  # the removed legacy interface
        assert not claims.calls_claims(f"claims.{removed}('a', True, ref='r')")
        assert not hasattr(claims, removed)
    assert not claims.calls_claims("nb.tables.show(rows)")
    assert not claims.calls_claims("my_claims.rate_of(x)")


def test_read_ledgers_is_recursive_and_rejects_duplicates(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "01-x.jsonl").write_text('{"claim": "c", "status": "passed"}\n\n{"claim": "d"}\n')
    out = claims.read_ledgers(tmp_path)
    assert out == {"01-x": [{"claim": "c", "status": "passed"}, {"claim": "d"}]}
    (tmp_path / "01-x.jsonl").write_text("")
    with pytest.raises(ValueError, match="two ledgers"):
        claims.read_ledgers(tmp_path)


@pytest.mark.parametrize("bad", ["not json", '{"claim": "c", "status": "pas', "[1, 2]", '"passed"'])
def test_a_corrupt_ledger_line_raises_naming_file_and_line(tmp_path, bad):
    path = tmp_path / "01-x.jsonl"
    path.write_text('{"claim": "c", "status": "passed"}\n' + bad + "\n")
    with pytest.raises(ValueError, match=rf"ledger {tmp_path}/01-x\.jsonl, line 2 is not .*corrupt"):
        claims.read_ledgers(tmp_path)


# ---------------------------------------------------------------------------------------------
# Conditions and the other kinds in a ledger
# ---------------------------------------------------------------------------------------------


def test_passing_condition_is_recorded(ledger):
    assert claims.condition("demo/ok", np.float64(1.0) < 2.0, criterion="1 < 2", ref="book, demo", label="demo",
                            measured=np.array([1.0, 2.0]), n=3) is None
    rec = json.loads(ledger.read_text().splitlines()[0])
    assert rec["status"] == "passed" and rec["claim"] == "demo/ok" and rec["scale"] == "ci"
    assert rec["measured"] == {"measured": [1.0, 2.0], "n": 3}
    assert rec["notebook"] == "99-test" and rec["ref"] == "book, demo" and rec["kind"] == "condition"
    assert rec["label"] == "demo" and "date" not in rec


def test_failing_condition_raises_and_is_recorded(ledger):
    with pytest.raises(AssertionError, match=r"FAILED  demo/bad  \[condition\]  slope ≥ 0; slope = -0\.3 "
                                              r"\(Liu–Zhu–Belkin 2020, Thm 1; notebook '99-test' at scale 'ci'\)"):
        claims.condition("demo/bad", False, criterion="slope ≥ 0; slope = -0.3", ref="Liu–Zhu–Belkin 2020, Thm 1",
                         label="thm-1", slope=-0.3)
    assert json.loads(ledger.read_text())["status"] == "failed"


def test_condition_must_be_one_boolean_with_a_ref_and_label(ledger):
    with pytest.raises(TypeError, match="single boolean"):
        claims.condition("demo/array", np.array([True, False]), criterion="c", ref="book, x", label="x")
    with pytest.raises(TypeError, match="single boolean"):
        claims.condition("demo/float", 1.0, criterion="c", ref="book, x", label="x")
    with pytest.raises(TypeError, match="ref"):
        claims.condition("demo/noref", True, criterion="c", ref="", label="x")
    with pytest.raises(TypeError, match="label"):
        claims.condition("demo/nolabel", True, criterion="c", ref="book, x", label="")
    with pytest.raises(TypeError, match="criterion"):
        claims.condition("demo/nocriterion", True, criterion=" ", ref="book, x", label="x")
    assert not ledger.read_text()


def test_statuses_of_several_kinds_in_one_ledger(ledger):
    claims.bound("demo/leq", [1.0, 2.0], [2.0, 2.0], ref="book, r", label="r")
    with pytest.raises(AssertionError, match=r"worst ratio 1\.5"):
        claims.bound("demo/leq-fails", [3.0, 1.0], [2.0, 2.0], ref="book, r", label="r")
    value, low, high = -0.49, -0.55, -0.45
    claims.condition("demo/between", low <= value <= high, criterion="-0.55 ≤ value ≤ -0.45", ref="book, r",
                     label="r", value=value)
    value = -0.2
    with pytest.raises(AssertionError):
        claims.condition("demo/outside", low <= value <= high, criterion="-0.55 ≤ value ≤ -0.45", ref="book, r",
                         label="r", value=value)
    claims.close("demo/close", [1.0, 2.0 + 1e-9], [1.0, 2.0], rtol=1e-8, precision_reason="float64: 1e-8",
                 ref="book, r", label="r")
    with pytest.raises(AssertionError):
        claims.close("demo/far", [1.0, 2.0 + 1e-7], [1.0, 2.0], rtol=1e-8, precision_reason="float64: 1e-8",
                     ref="book, r", label="r")
    records = claims.read_ledgers(ledger.parent)["99-test"]
    assert [r["status"] for r in records] == ["passed", "failed", "passed", "failed", "passed", "failed"]
    assert [r["kind"] for r in records] == ["bound", "bound", "condition", "condition", "close", "close"]


def test_start_validates(tmp_path, monkeypatch):
    monkeypatch.setenv("NTKBOOK_LEDGER_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="unknown scale 'huge'; expected one of 'ci', 'book', 'paper'"):
        claims.start("x", scale="huge")
    with pytest.raises(ValueError, match="file stem"):
        claims.start("a/b", scale="ci")


# ---------------------------------------------------------------------------------------------
# fitting helpers
# ---------------------------------------------------------------------------------------------


def test_log_factor_allowance_is_the_slope_of_a_pure_log_factor():
    widths = np.array([100.0, 10_000.0])
    for power in (0.5, 1.0):
        fit = fitting.power_law_fit(widths, np.log(widths) ** power)
        assert fitting.log_factor_allowance(widths, power) == pytest.approx(fit.slope, rel=1e-12)
    with pytest.raises(ValueError, match="two distinct"):
        fitting.log_factor_allowance([64, 64])


def test_ci_position():
    fit = fitting.PowerLawFit(-0.5, 0.0, 0.01, -0.6, -0.4, 1.0, 10)
    assert [fitting.ci_position(fit, v) for v in (-0.7, -0.6, -0.5, -0.4, -0.3)] == [
        "below", "inside", "inside", "inside", "above"]


def test_fit_geometric_rate():
    t = np.arange(5, 40)
    assert fitting.fit_geometric_rate(t, 3.0 * 0.9**t) == pytest.approx(0.9, rel=1e-12)
    with pytest.raises(ValueError, match="positive"):
        fitting.fit_geometric_rate([1, 2], [1.0, 0.0])



def test_close_against_a_zero_reference_reports_no_relative_error(ledger, capsys):
    claims.close("c/zero-reference", [0.0, 1e-9], [0.0, 0.0], rtol=1e-6, atol=1e-8,
                 precision_reason="float64 sums: 1e-8", ref=P20, label="prop-2-3")
    claims.close("c/mixed-reference", [1e-9, 2.0], [0.0, 1.0], rtol=2.0, atol=1e-8,
                 precision_reason="float64 sums: 1e-8", ref=P20, label="prop-2-3")
    zero, mixed = lines(ledger)
    assert zero["status"] == "passed" and zero["measured"]["max_rel_error"] is None
    assert "worst relative error undefined (reference 0)" in capsys.readouterr().out
    assert mixed["measured"]["max_rel_error"] == 1.0  # |2 − 1|/1; the zero-reference element is left out


def test_about_gives_ref_and_label_once(ledger):
    with claims.about(P20, label="prop-2-3"):
        claims.bound("prop-2.3/in-block", [0.1], [1.0])
        claims.bound("prop-2.3/own-label", [0.1], [1.0], label="prop-2-3-bis")
        with claims.about("Liu–Zhu–Belkin 2020, Thm 3.1", label="thm-3-1"):
            claims.condition("thm-3.1/nested", np.bool_(True), criterion="nested block wins")
        claims.condition("prop-2.3/after-nested", np.bool_(True), criterion="the outer block again")
    recs = {r["claim"]: r for r in lines(ledger)}
    assert (recs["prop-2.3/in-block"]["ref"], recs["prop-2.3/in-block"]["label"]) == (P20, "prop-2-3")
    assert recs["prop-2.3/own-label"]["label"] == "prop-2-3-bis"
    assert recs["thm-3.1/nested"]["ref"] == "Liu–Zhu–Belkin 2020, Thm 3.1"
    assert recs["prop-2.3/after-nested"]["ref"] == P20
    with pytest.raises(TypeError, match="needs its ref and label"):
        claims.bound("prop-2.3/outside", [0.1], [1.0])
    with pytest.raises(ValueError, match="ref must name the paper"):
        claims.about("a paper", label="x")
    with pytest.raises(ValueError, match="label must be"):
        claims.about(P20, label="two words")


def test_a_rate_decided_by_lucky_seeds_is_inconclusive(ledger):
    """Four seeds per width, slope near the window's edge: the fit passes on these seeds, but many resamples of
    the seeds fall outside the window, so the claim is inconclusive (stability < 0.95)."""
    x = np.repeat(np.geomspace(64, 16384, 5), 4)
    rng = np.random.default_rng(3)
    y = x**-0.72 * np.exp(0.25 * rng.normal(size=x.size))
    fit = fitting.power_law_fit(x, y)
    window = fitting.rate_window(-0.5, (fit.slope - 0.01, -0.25), {"Θ(1)": 0.0}, allowance="test")
    assert fitting.decide_rate(fit, window).status == "passed"  # inside, by 0.01
    share = fitting.verdict_stability(x, y, window, "passed")
    assert 0.3 < share < 0.8  # about half of the resamples put the slope below the window's edge
    rate("thm-3.1/lucky", y, x=x, window=(fit.slope - 0.01, -0.25), rivals={"Θ(1)": 0.0})
    rec = lines(ledger)[-1]
    assert rec["status"] == "inconclusive" and rec["measured"]["stability"] == pytest.approx(share, abs=0.1)
    clean = x**-0.5 * np.exp(0.01 * rng.normal(size=x.size))
    rate("thm-3.1/clean", clean, x=x, window=(-0.75, -0.25), rivals={"Θ(1)": 0.0})
    assert lines(ledger)[-1]["status"] == "passed" and lines(ledger)[-1]["measured"]["stability"] == 1.0
    one_per_x = np.geomspace(64, 16384, 5)
    assert fitting.verdict_stability(one_per_x, one_per_x**-0.5, window, "passed") == 1.0


def test_each_evidence_claim_says_what_would_have_failed_it(ledger):
    claims.bound("prop-2.3/default", [0.1], [1.0], ref=P20, label="prop-2-3", names=("ΔK", "εR"))
    claims.bound("prop-2.3/own", [0.1], [1.0], ref=P20, label="prop-2-3", would_fail="ΔK growing with R²")
    rate("thm-3.1/rate", power_law(-0.5, 0.01))
    claims.close("prop-2.3/close", [1.0], 1.0, rtol=1e-6, precision_reason="float64", ref=P20, label="prop-2-3")
    claims.condition("prop-2.3/cond", np.bool_(True), criterion="every run converged", ref=P20, label="prop-2-3",
                     would_fail="a run above the loss tolerance")
    claims.bound("prop-2.3/construction", [0.1], [1.0], ref=P20, label="prop-2-3", not_evidence="by construction")
    text = {r["claim"]: r["criterion"] for r in lines(ledger)}
    assert text["prop-2.3/default"].endswith("; a false statement would show ΔK above εR on some sample")
    assert text["prop-2.3/own"].endswith("; a false statement would show ΔK growing with R²")
    assert text["thm-3.1/rate"].endswith("a false statement would show an exponent outside the window, near Θ(1) "
                                         "or m^-3/4")
    assert text["prop-2.3/close"].endswith("an error above the tolerance")
    assert text["prop-2.3/cond"].endswith("a run above the loss tolerance")
    assert "false statement" not in text["prop-2.3/construction"]  # an illustration cannot fail a false statement


def test_archive_witness_ids_pair_with_the_build_claim():
    assert claims.witnessed_claim("fig-1/archive/swish-kernel-change-order-one") == "fig-1/swish-kernel-change-order-one"
    assert claims.witnessed_claim("fig-2/archive/a/b") == "fig-2/a/b"
    for not_a_witness in ("fig-1/swish-kernel-change-order-one", "archive/fig-1/x", "fig-1/x/archive", "fig-1/archive"):
        assert claims.witnessed_claim(not_a_witness) is None
    recs = [{"claim": "fig-1/x", "kind": "order"}, {"claim": "fig-1/archive/x", "kind": "order", "status": "passed"},
            {"claim": "fig-2/archive/only-the-archive", "kind": "condition"}]
    assert claims.archive_witnesses(recs) == {"fig-1/x": recs[1]}
    with pytest.raises(TypeError):
        claims.witnessed_claim(3)


def test_a_witness_must_judge_the_same_statement(ledger):
    claims.order("w/x", [1, 2, 4, 8] * 3, [1.0, 1.1, 0.9, 1.0] * 3, expect="constant", ref="book, w", label="w")
    claims.order("w/archive/x", [1, 2, 4, 8] * 3, [1.0, 1.1, 0.9, 1.0] * 3, expect="constant", ref="book, w",
                 label="w")
    claims.close("w/y", [1.0], 1.0, rtol=1e-6, precision_reason="float64", ref="book, w", label="w")
    claims.close("w/archive/y", [1.0], 1.0, rtol=1e-3, precision_reason="float32", ref="book, w", label="w")
    recs = {r["claim"]: r for r in claims.records()}
    assert claims.witness_mismatch(recs["w/x"], recs["w/archive/x"]) == []
    assert claims.witness_mismatch(recs["w/y"], recs["w/archive/y"]) == ["rtol"]
    assert "window" in claims.witness_mismatch(recs["w/x"], {**recs["w/archive/x"], "window": [-1, 1]})
    for bad in ("archive/x/y", "w/archive/archive/x", "w/x/archive"):
        with pytest.raises(ValueError, match="archive"):
            claims.condition(bad, True, criterion="c", ref="book, w", label="w")
