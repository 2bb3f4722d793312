"""One module per chapter: the computations each notebook calls, tabulates and plots.

Liu, Zhu & Belkin (2020), *On the linearity of large non-linear models*:

* ``deep_hessian_ball`` — Chapter 3b (Section 3: Theorems 3.2–3.3, Section 3.3.3).

Modules are imported on demand (``from ntkbook.experiments import deep_hessian_ball``); importing this
package imports none of the heavier ones.
"""
