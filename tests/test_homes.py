"""The object → module list of the API page names real, public objects, each object once."""

import pytest

from ntkbook import homes


def test_every_home_resolves_to_a_public_object():
    for home in homes.HOMES:
        obj = homes.resolve(home.name)
        assert not any(part.startswith("_") for part in home.name.split(".")), home.name
        assert obj is not None
        assert home.module.startswith("ntkbook")


def test_each_object_and_name_has_one_home():
    objects = [h.object for h in homes.HOMES]
    names = [h.name for h in homes.HOMES]
    assert len(set(objects)) == len(objects)
    assert len(set(names)) == len(names)


def test_resolve_rejects_unknown_names():
    with pytest.raises(ValueError, match="name"):
        homes.resolve("ntkbook.kernels.no_such_function")
    with pytest.raises(ValueError, match="name"):
        homes.resolve("numpy.linalg")


def test_homes_name_the_objects_the_chapters_stand_on():
    """The ball, the linearization and the Hessian bounds have homes; no home points into a chapter module."""
    modules = {h.module for h in homes.HOMES}
    assert {"ntkbook.ball", "ntkbook.linearization", "ntkbook.hessian_bounds"} <= modules, sorted(modules)
    assert not [h.name for h in homes.HOMES if ".experiments." in h.name]


def test_api_page_documents_every_reproduction():
    """Each command-line reproduction module is on the API page (the chapters and the CLI share it)."""
    import pkgutil
    from pathlib import Path

    import ntkbook.reproductions

    text = (Path(__file__).resolve().parents[1] / "book" / "api.md").read_text(encoding="utf-8")
    found = [info.name for info in pkgutil.iter_modules(ntkbook.reproductions.__path__)]
    assert found, "no reproduction modules: the test is stale"
    for name in found:
        assert f".. automodule:: ntkbook.reproductions.{name}\n   :members:" in text, name
