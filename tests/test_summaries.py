"""Median and quartiles over repeats: one function (``maths.median_quartiles``) for every summary of
the package -- sweep tables, figures, the factorization experiment, the app's Sweep view.

Oracles: numpy's median and linear-interpolation quantiles (equal bit for bit on finite values) and
hand-computed quartiles where infinities are involved.  Found while reading a warning of the test
suite: a sweep whose every repeat had test NLL ``inf`` (a test word the standard HMM gives probability
0) reported the quartiles as NaN, with a RuntimeWarning from numpy's ``inf - inf``.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from densehmm_core.experiments.comparison import SUMMARY_METRICS, summarize
from densehmm_core.maths import median_quartiles


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 10, 31])
def test_finite_values_give_numpys_median_and_quantiles_exactly(size):
    rng = np.random.default_rng(size)
    v = rng.lognormal(size=size)
    assert median_quartiles(v) == (float(np.median(v)), float(np.quantile(v, 0.25)), float(np.quantile(v, 0.75)))
    assert median_quartiles(list(v)) == median_quartiles(v)


def test_infinities_are_values_and_never_give_nan_or_a_warning():
    inf = math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert median_quartiles([inf, inf]) == (inf, inf, inf)
        assert median_quartiles([inf, inf, inf]) == (inf, inf, inf)
        # n = 4: the 25th percentile at position 0.75 (between 1 and 2), the 75th at 2.25 (between inf
        # and inf), the median the mean of 2 and inf
        assert median_quartiles([2.0, inf, 1.0, inf]) == (inf, 1.75, inf)
        # n = 3: positions 0.5, 1 and 1.5
        assert median_quartiles([1.0, 3.0, inf]) == (3.0, 2.0, inf)
        assert median_quartiles([-inf, -inf, 5.0]) == (-inf, -inf, -inf)
        # positions that are whole numbers: the value there (numpy computed 4 + 0 * inf: NaN)
        assert median_quartiles([1.0, 2.0, 3.0, 4.0, inf]) == (3.0, 2.0, 4.0)
        assert median_quartiles([1.0, 2.0, inf, inf, inf]) == (inf, 2.0, inf)
        assert median_quartiles([1.0, inf, inf]) == (inf, inf, inf)
        assert median_quartiles([-inf, 2.0, 3.0]) == (2.0, -inf, 2.5)
    q = median_quartiles([-inf, inf])           # no answer between -inf and inf
    assert all(math.isnan(x) for x in q)


def test_nan_is_left_out_and_finite_only_leaves_out_infinities():
    inf, nan = math.inf, math.nan
    assert median_quartiles([nan, 1.0, 3.0, nan]) == median_quartiles([1.0, 3.0])
    assert median_quartiles([1.0, inf, 3.0], finite_only=True) == median_quartiles([1.0, 3.0])
    for empty in ([], [nan], [nan, nan]):
        assert all(math.isnan(x) for x in median_quartiles(empty))
    assert all(math.isnan(x) for x in median_quartiles([inf, -inf, nan], finite_only=True))


def _row(n, rep, test_nll):
    row = {"n": n, "l": 1, "model": "standard", "n_states": n, "status": "ok", "rep": rep}
    row.update({k: 0.5 + rep for k in SUMMARY_METRICS})
    row["test_nll"] = test_nll
    return row


def test_a_sweep_summary_of_infinite_test_nlls_says_inf_not_nan():
    """The sweep's summary table (``sweep_summary.csv``): every repeat of n = 3 scored a test word
    the model gives probability 0.  The quartiles were NaN there (and numpy warned)."""
    rows = [_row(2, 0, 1.37), _row(2, 1, 2.18), _row(3, 0, math.inf), _row(3, 1, math.inf)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = {s["n"]: s for s in summarize(rows)}
    assert (summary[3]["test_nll_median"], summary[3]["test_nll_q25"], summary[3]["test_nll_q75"]) == \
        (math.inf, math.inf, math.inf)
    assert (summary[2]["test_nll_median"], summary[2]["test_nll_q25"], summary[2]["test_nll_q75"]) == \
        (float(np.median([1.37, 2.18])), float(np.quantile([1.37, 2.18], 0.25)),
         float(np.quantile([1.37, 2.18], 0.75)))


def test_a_comparison_figure_names_the_runs_it_cannot_draw(tmp_path):
    """The figure leaves infinite values out (it cannot draw them); a note under it says which, so an
    empty column is not a mystery.  The tables keep them (above)."""
    from densehmm_core.experiments.figures import comparison_figure, left_out_note
    rows = [_row(2, 0, 1.37), _row(2, 1, 2.18), _row(3, 0, math.inf), _row(3, 1, math.inf), _row(4, 0, math.inf),
            _row(4, 1, 3.0), _row(5, 0, math.nan)]
    assert left_out_note(rows, "test_nll") == ("Not drawn, infinite test_nll: standard HMM at n=3 l=1 (2 of 2 runs); "
                                               "standard HMM at n=4 l=1 (1 of 2 runs)")
    assert left_out_note(rows, "test_nll", most=1).endswith("(2 of 2 runs), and 1 more")
    assert left_out_note(rows, "mad") == ""
    path = comparison_figure(rows, "test_nll", tmp_path / "nll.png", title="t")
    assert path.stat().st_size > 1000
