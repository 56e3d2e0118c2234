"""Presets: the preprocessing of the DenseHMM paper's appendix and of its public reference code."""
from __future__ import annotations

import copy
from typing import Any, Dict

__all__ = ["PRESETS", "get_preset"]

#: name -> description, expected file, reader options (``load``), preprocessing options, split,
#: and the symbol counts the paper (or reference code) reports.  See docs/DATA.md.
PRESETS: Dict[str, Dict[str, Any]] = {
    "paper_protein": {
        "description": "DenseHMM paper, appendix 'Protein dataset preprocessing': the first 1,024 "
                       "sequences of RCSB pdb_seqres.txt, cut after 512 symbols, the rarest symbols "
                       "that together make up less than 0.2 % of all symbols merged into one residual "
                       "symbol; random 50:50 train/test split per experiment.",
        "format": "fasta",
        "expected_file": "RCSB pdb_seqres.txt",
        # 'first 1,024 sequences of the file': every record, whatever its mol: type.
        "load": {"mol": "all"},
        "preprocess": {"subset": 1024, "max_len": 512, "merge_below": 0.002},
        "split": {"test_fraction": 0.5},
        "paper_symbols": {"before": 22, "after": 19},
    },
    "paper_medpost": {
        "description": "DenseHMM paper, appendix 'Part-of-speech sequences preprocessing': 1,000 "
                       "sentences of MedPost tag_mb.ioc (tag sequences), cut after 40 tags, the rarest "
                       "tags that together make up less than 1 % of all tags merged into one residual "
                       "tag; random 50:50 train/test split per experiment.",
        "format": "medpost",
        "expected_file": "MedPost tag_mb.ioc",
        "load": {"observe": "tags"},
        "preprocess": {"subset": 1000, "max_len": 40, "merge_below": 0.01},
        "split": {"test_fraction": 0.5},
        "paper_symbols": {"before": 60, "after": 42},
    },
    "reference_code_protein": {
        "description": "What the paper's public reference code ran on protein data: sequences cut "
                       "after 500 symbols, the rarest symbols below 5 % cumulative frequency merged.",
        "format": "fasta",
        "expected_file": "RCSB pdb_seqres.txt",
        "load": {"mol": "all"},
        "preprocess": {"max_len": 500, "merge_below": 0.05},
        "split": {"test_fraction": 0.5},
        "paper_symbols": None,
    },
    "reference_code_penn": {
        "description": "What the paper's public reference code ran on part-of-speech data: the NLTK "
                       "Penn Treebank sample (tagged sentences, -NONE- traces kept as NLTK gives them), "
                       "cut after 45 tags, the rarest tags below 10 % cumulative frequency merged "
                       "(20 symbols).",
        "format": "ptb",
        "expected_file": "Penn Treebank sample (NLTK treebank, wsj_0001-wsj_0199 .mrg)",
        "load": {"observe": "tags", "drop_traces": False},
        "preprocess": {"max_len": 45, "merge_below": 0.10},
        "split": {"test_fraction": 0.5},
        "paper_symbols": {"after": 20},
    },
}


def get_preset(name: str) -> Dict[str, Any]:
    """A deep copy of preset ``name`` (``ValueError`` for an unknown name)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return copy.deepcopy(PRESETS[name])
