"""Registered reproductions, one module each (imported by :mod:`ntkbook.reproduce` on first use)."""
