"""One module per chapter: the computations each notebook calls, tabulates and plots.

Liu, Zhu & Belkin (2020), *On the linearity of large non-linear models*:

* ``tangent_kernel`` — Chapter 1 (Section 2: the tangent kernel, Prop. 2.3);
* ``norm_221`` and ``one_hidden_layer`` — Chapter 2 (Definition 2.2, Proposition 2.1,
  Section 3.1);
* ``deep_hessian`` — Chapter 3 (Section 3: Prop. 3.1, Theorem 3.1, Lemma 3.1);
* ``breaking_linearity`` and ``optimization_without_linearity`` — Chapter 5 (Section 4,
  Table 1; Section 5, Theorem 5.1);
* ``linearity_experiments`` — Chapter 6 (Section 6 and Appendix B: Figures 1 and 2).

Liu, Zhu & Belkin (2022), *Transition to linearity ... as an emerging property of assembling weak
models*:

* ``assembly`` and ``orthogonality`` — Chapter 7 (Sections 2 and 3, Appendices A, B, E).

Oymak & Soltanolkotabi (2020), *Toward moderate overparameterization*:

* ``khatri_rao`` — Chapter 8 (Khatri–Rao products, covariances, Appendix H);
* ``moderate`` and ``phase_transition`` — Chapter 9 (Theorems 2.1, 2.6, 3.2, Section 4).

Modules are imported on demand (``from ntkbook.experiments import assembly``); importing this
package imports none of the heavier ones.
"""
