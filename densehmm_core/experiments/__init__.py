"""Reproduction of the DenseHMM paper's experiments (``densehmm reproduce ...``).

* :mod:`.factorization` -- softmax vs normAbsLin matrix factorisation (Section 4, appendix table).
* :mod:`.comparison` -- DenseHMM-EM / DenseHMM-direct / standard / fair standard HMM on synthetic,
  protein, MedPost and Penn Treebank data (Section 5).
* :mod:`.runner` -- parallel, resumable execution (one CSV row per finished run).
* :mod:`.figures` -- matplotlib figures (Agg canvas).
* :mod:`.cli` -- the ``reproduce`` sub-command.

Importing this package imports neither TensorFlow nor matplotlib.
"""
