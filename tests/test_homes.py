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


def test_api_page_documents_every_experiments_module():
    """Each chapter module's public members are on the API page (``:members:``), not only its name."""
    import pkgutil
    from pathlib import Path

    import ntkbook.experiments

    text = (Path(__file__).resolve().parents[1] / "book" / "api.md").read_text(encoding="utf-8")
    for info in pkgutil.iter_modules(ntkbook.experiments.__path__):
        assert f".. automodule:: ntkbook.experiments.{info.name}\n   :members:" in text, info.name
