"""One module per chapter: the computations each notebook calls, tabulates and plots.

* :mod:`.tangent_kernel` — Chapter 1 (Section 2 of Liu, Zhu & Belkin 2020);
* :mod:`.norm_221` and :mod:`.one_hidden_layer` — Chapter 2 (Definition 2.2, Proposition 2.1,
  Section 3.1).
"""

from . import norm_221, one_hidden_layer, tangent_kernel

__all__ = ["norm_221", "one_hidden_layer", "tangent_kernel"]
