"""Plotting views of DenseHMM Studio (pyqtgraph): heatmaps, embeddings, curves, decode,
before/after overview, model comparison, and the Dashboard that combines them.

Run ``python -m app.views.demo`` to see every view on a synthetic model.
"""
from .. import pyside_fix  # noqa: F401  (PySide6 6.12 + Python 3.11 None refcount bug; see module)
from .compare import CompareView
from .curves import TrainingCurves
from .dashboard import Dashboard
from .decode import DecodeView
from .embeddings import EmbeddingScatter
from .heatmap import MatrixHeatmap, ParameterHeatmaps
from .overview import OverviewView
from .sweep import SweepView
from .tagging import StateTagView, TaggingCurves
from .topwords import TopWordsTable

__all__ = ["Dashboard", "MatrixHeatmap", "ParameterHeatmaps", "EmbeddingScatter", "TrainingCurves",
           "DecodeView", "OverviewView", "CompareView", "SweepView", "StateTagView", "TaggingCurves",
           "TopWordsTable"]
