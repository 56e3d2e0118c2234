"""Sweep grids (densehmm_core.grid): the --grid text, the paper's grid, one owner for CLI and app."""
import pytest

from densehmm_core import grid


def test_parse_grid_is_every_combination_in_order():
    pairs, models = grid.parse_grid("n=5,3,5 l=2,1")
    assert pairs == ((5, 2), (5, 1), (3, 2), (3, 1)) and models is None
    pairs, models = grid.parse_grid("states=3; dim=4 models=b,a,b", models=("a", "b"))
    assert pairs == ((3, 4),) and models == ("b", "a")


@pytest.mark.parametrize("text, why", [("n=3", "l=... is missing"), ("n=3 l=x", "positive integers"),
                                       ("n=3 l=1 model=a", "unknown name 'model'"), ("n=0 l=1", ">= 1"),
                                       ("n=3 n=4 l=1", "twice"), ("n3 l=1", "NAME=VALUES"), ("n= l=1", "no values")])
def test_parse_grid_says_what_is_wrong(text, why):
    with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(".", r"\.")):
        grid.parse_grid(text)


def test_unknown_models_are_named():
    with pytest.raises(ValueError, match="unknown model.s. c .choose from a, b."):
        grid.parse_grid("n=3 l=1 model=a,c", models=("a", "b"))


def test_paper_grid_text_and_description():
    assert len(grid.PAPER_GRID) == 10 and grid.grid_text(grid.PAPER_GRID) is None   # not one product
    assert grid.describe_grid(grid.PAPER_GRID) == "n=3: l∈{1, 2, 3}, n=5: l∈{2, 3, 5}, n=10: l∈{2, 3, 5, 10}"
    pairs, _ = grid.parse_grid("n=3,5 l=1,2")
    assert grid.grid_text(pairs) == "n=3,5 l=1,2" and grid.parse_grid(grid.grid_text(pairs))[0] == pairs


def test_the_cli_and_the_comparison_use_the_core_grid():
    from densehmm_core.experiments import comparison
    from densehmm_core.experiments.cli import parse_grid
    assert comparison.PAPER_GRID is grid.PAPER_GRID
    with pytest.raises(ValueError, match="^--grid: l=... is missing"):
        parse_grid("n=3")
