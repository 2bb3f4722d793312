"""Root pytest configuration: notebooks collected by nbval run at ci scale with a private ledger."""

import os
import shutil
import tempfile

import pytest

_CREATED_LEDGER = pytest.StashKey[str]()


def pytest_configure(config):
    os.environ.setdefault("NTKBOOK_SCALE", "ci")
    os.environ.setdefault("NTKBOOK_PROGRESS", "0")
    if "NTKBOOK_LEDGER_DIR" not in os.environ:
        # a private ledger for this run (xdist workers inherit it from the controller), removed at the end
        config.stash[_CREATED_LEDGER] = os.environ["NTKBOOK_LEDGER_DIR"] = tempfile.mkdtemp(prefix="ntkbook-ledger-")


def pytest_unconfigure(config):
    created = config.stash.get(_CREATED_LEDGER, None)
    if created is not None:
        shutil.rmtree(created, ignore_errors=True)
