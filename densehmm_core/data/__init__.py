"""Reading real data sets: FASTA and tagged corpora into a :class:`Corpus`.

>>> from densehmm_core.data import load
>>> corpus = load("pdb_seqres.txt", preset="paper_protein")     # doctest: +SKIP
>>> train, test = corpus.split(test_fraction=0.5, seed=0)        # doctest: +SKIP
>>> words = load("wsj.mrg", observe="words", lowercase=True, min_count=2, rare="shape",
...              extra=["brown_all.txt"])                           # doctest: +SKIP
>>> words.tags, words.tag_vocabulary                                 # doctest: +SKIP

See docs/DATA.md for the formats, options and presets.
"""
from .corpus import NO_TAG, Corpus
from .detect import ALIASES, FORMATS, describe_formats, detect_format, file_dialog_filters
from .errors import DataFormatError
from .fasta import ALPHABETS
from .loader import PREPROCESS_DEFAULTS, READER_DEFAULTS, WORDS_MIN_COUNT, load
from .modelvocab import (MODEL_READ_OPTIONS, encode_for_model, read_as_for_model, reading_for_model, residual_symbol,
                         training_read_options, unknown_report)
from .presets import PRESETS, get_preset
from .tagged import collapse_brown_tag
from .wordshape import SHAPE_CLASSES, SUFFIXES, word_shape

__all__ = ["load", "Corpus", "DataFormatError", "PRESETS", "get_preset", "FORMATS", "ALIASES", "ALPHABETS",
           "describe_formats", "file_dialog_filters", "detect_format", "READER_DEFAULTS",
           "PREPROCESS_DEFAULTS", "collapse_brown_tag", "NO_TAG", "word_shape", "SHAPE_CLASSES", "SUFFIXES",
           "encode_for_model", "residual_symbol", "WORDS_MIN_COUNT", "unknown_report", "MODEL_READ_OPTIONS",
           "training_read_options", "reading_for_model", "read_as_for_model"]
