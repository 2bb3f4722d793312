import json

import numpy as np
import pytest

from ntkbook import claims, scales


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("NTKBOOK_LEDGER_DIR", str(tmp_path))
    claims.start("99-test", scale="ci")
    return tmp_path / "99-test.jsonl"


def test_passing_claim_is_recorded(ledger):
    assert claims.check("demo/ok", np.float64(1.0) < 2.0, ref="Prop. 0", measured=np.array([1.0, 2.0]), n=3) is None
    rec = json.loads(ledger.read_text().splitlines()[0])
    assert rec["status"] == "passed" and rec["claim"] == "demo/ok" and rec["scale"] == "ci"
    assert rec["measured"] == {"measured": [1.0, 2.0], "n": 3}
    assert rec["notebook"] == "99-test" and rec["ref"] == "Prop. 0" and rec["kind"] == "legacy"
    assert rec["label"] is None and "date" not in rec


def test_failing_claim_raises_and_is_recorded(ledger):
    with pytest.raises(AssertionError, match=r"FAILED  demo/bad  \[legacy check\]  condition holds; slope = -0\.3 "
                                              r"\(Thm 1; notebook '99-test' at scale 'ci'\)"):
        claims.check("demo/bad", False, ref="Thm 1", slope=-0.3)
    assert json.loads(ledger.read_text())["status"] == "failed"


def test_condition_must_be_one_boolean(ledger):
    with pytest.raises(TypeError, match="single boolean"):
        claims.check("demo/array", np.array([True, False]), ref="x")
    with pytest.raises(TypeError, match="single boolean"):
        claims.check("demo/float", 1.0, ref="x")
    with pytest.raises(TypeError, match="ref"):
        claims.check("demo/noref", True, ref="")


def test_helpers(ledger):
    claims.check_all_leq("demo/leq", [1.0, 2.0], [2.0, 2.0], ref="r")
    with pytest.raises(AssertionError, match=r"worst ratio 1\.5"):
        claims.check_all_leq("demo/leq-fails", [3.0, 1.0], [2.0, 2.0], ref="r")
    claims.check_between("demo/between", -0.49, -0.55, -0.45, ref="r")
    with pytest.raises(AssertionError):
        claims.check_between("demo/outside", -0.2, -0.55, -0.45, ref="r")
    claims.check_close("demo/close", [1.0, 2.0 + 1e-9], [1.0, 2.0], ref="r", rtol=1e-8)
    records = claims.read_ledgers(ledger.parent)["99-test"]
    assert [r["status"] for r in records] == ["passed", "failed", "passed", "failed", "passed"]


def test_start_validates(tmp_path, monkeypatch):
    monkeypatch.setenv("NTKBOOK_LEDGER_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="unknown scale 'huge'; expected one of 'ci', 'book', 'paper'"):
        claims.start("x", scale="huge")
    with pytest.raises(ValueError, match="file stem"):
        claims.start("a/b", scale="ci")


def test_scales_table_is_complete():
    for experiment, by_scale in scales.TABLE.items():
        assert set(by_scale) == set(scales.SCALES), experiment
        types = {type(v) for v in by_scale.values()}
        assert len(types) == 1 and issubclass(types.pop(), scales.ExperimentSettings), experiment


def test_scale_resolution(monkeypatch):
    monkeypatch.delenv("NTKBOOK_SCALE", raising=False)
    assert scales.resolve() == "book"
    monkeypatch.setenv("NTKBOOK_SCALE", "ci")
    assert scales.resolve() == "ci"
    assert scales.get("prop_2_1") is scales.TABLE["prop_2_1"]["ci"]
    monkeypatch.setenv("NTKBOOK_SCALE", "tiny")
    with pytest.raises(ValueError, match="unknown scale 'tiny'; expected one of 'ci', 'book', 'paper'"):
        scales.resolve()
    s = scales.get("prop_2_1", "book")
    assert s.as_dict() == {"num_tensors": 200, "shape": (8, 6, 10)}
    with pytest.raises(AttributeError, match="nope"):
        _ = s.nope
    with pytest.raises(TypeError, match="nope"):  # a misspelled field is an error, never ignored
        s.replace(nope=1)
    with pytest.raises(TypeError, match=r"Prop21\.num_tensors must be an int"):
        s.replace(num_tensors=2.5)
    with pytest.raises(TypeError, match=r"Prop21.shape\[1\] must be an int"):
        s.replace(shape=(8, "6", 10))
    assert s.replace(shape=[1, 2, 3]).shape == (1, 2, 3)
    with pytest.raises(ValueError, match="unknown experiment"):
        scales.get("nope", "ci")
