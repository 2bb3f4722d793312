"""Root pytest configuration: notebooks collected by nbval run at ci scale with a private ledger."""

import os
import tempfile


def pytest_configure(config):
    os.environ.setdefault("NTKBOOK_SCALE", "ci")
    os.environ.setdefault("NTKBOOK_PROGRESS", "0")
    os.environ.setdefault("NTKBOOK_LEDGER_DIR", tempfile.mkdtemp(prefix="ntkbook-ledger-"))
