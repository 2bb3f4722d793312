"""The papers' datasets, generated or loaded from installed packages (nothing is downloaded at run time).

One module per dataset family.
"""
