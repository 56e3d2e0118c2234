"""App-side bookkeeping of what the user opened: data sets (a Corpus or the demo) and model files.

Only wiring: reading, preprocessing, splitting and statistics are the core's
(``densehmm_core.data``, ``densehmm_core.synthetic``, ``densehmm_core.modelfile``).
"""
from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any, List, Optional, Tuple

import numpy as np

__all__ = ["DataSet", "ModelSet", "demo_dataset", "DEMO_SIZE", "DEMO_FORM", "load_path", "is_model_file",
           "MODEL_SUFFIXES", "DATA_FILTERS", "data_filters", "dataset_summary",
           "preprocess_corpus", "split_corpus", "save_models", "score_model", "encode_for", "unknown_note",
           "reopen_dataset", "format_of_filter", "read_options", "is_tagged"]

MODEL_SUFFIXES = (".h5", ".hdf5", ".hdf")

def data_filters() -> str:
    """File-dialog filters: "All files (*)" first (the default: no file is hidden, each one that
    cannot be read is reported), then the core's reader formats plus HDF5 model files."""
    from densehmm_core.data import file_dialog_filters
    flt = list(file_dialog_filters())
    models = "DenseHMM model files (*.h5 *.hdf5)"
    if flt and flt[0].startswith("All supported files ("):
        flt[0] = flt[0][:-1] + " *.h5 *.hdf5)"
    return ";;".join(flt[-1:] + flt[:-1] + [models])


DATA_FILTERS = None  # computed lazily by data_filters()


@dataclasses.dataclass
class DataSet:
    """A data set the user can train on.

    ``corpus`` is the core Corpus as read (None for the demo); ``processed`` the corpus after
    the data panel's preprocessing; ``train``/``test`` what jobs train and evaluate on.
    """
    name: str
    path: Optional[str]
    train: Any
    test: Any = None
    vocabulary: Optional[List[str]] = None
    corpus: Any = None
    processed: Any = None
    true_params: Optional[dict] = None
    warnings: List[str] = dataclasses.field(default_factory=list)
    options: dict = dataclasses.field(default_factory=dict)

    @property
    def n_symbols(self) -> int:
        if self.vocabulary is not None:
            return len(self.vocabulary)
        seqs = _seqs(self.train) + (_seqs(self.test) if self.test is not None else [])
        return int(max(int(np.max(s)) for s in seqs)) + 1

    @property
    def all_sequences(self) -> List[np.ndarray]:
        return _seqs(self.train) + (_seqs(self.test) if self.test is not None else [])

    @property
    def is_demo(self) -> bool:
        return self.path is None

    @functools.cached_property
    def summary(self) -> dict:
        """:func:`dataset_summary`, computed once; :func:`dataset_from_corpus` computes it on the
        loading thread (for the Brown corpus's 57,000 sentences it took 0.25 s of the GUI thread)."""
        return dataset_summary(self)

    @property
    def observes_words(self) -> bool:
        """Whether the symbols are the words of a tagged corpus (read with ``observe="words"``),
        as the reader's provenance records it."""
        corpus = self.processed if self.processed is not None else self.corpus
        return corpus is not None and corpus.observes_words      # (None: the demo)

    @property
    def gold_tags(self) -> Optional[int]:
        """How many gold tags the words of a tagged corpus carry (None for other data sets, and for
        words without tags)."""
        corpus = self.processed if self.processed is not None else self.corpus
        if not self.observes_words or corpus.tag_vocabulary is None:
            return None
        return len(corpus.tag_vocabulary)


@dataclasses.dataclass
class ModelSet:
    """Models read from an HDF5 model file: ``models`` is a list of ``(name, model)``."""
    path: str
    models: List[Tuple[str, Any]]
    info: List[Any] = dataclasses.field(default_factory=list)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @property
    def is_session(self) -> bool:
        """Whether the file is a saved session of the app (File > Save session): its models
        are then not read here (``models`` is empty); the window opens it as a session."""
        from .session import is_session_info
        return any(is_session_info(i) for i in self.info)


def _seqs(data) -> List[np.ndarray]:
    if data is None:
        return []
    if hasattr(data, "sequences") and not isinstance(data, np.ndarray):
        data = data.sequences
    return [np.asarray(s) for s in data]


def is_model_file(path: str) -> bool:
    return str(path).lower().endswith(MODEL_SUFFIXES)


#: The demo's data: the paper's synthetic HMM (n = m = 5), with 50 training and 50 test
#: sequences of length 200 (five times the paper's 10 + 10: smoother curves).
DEMO_SIZE = {"n_train": 50, "n_test": 50, "length": 200}
#: What the model form is set to when the demo opens: the direct (co-occurrence) fit with a
#: smaller learning rate and more steps than the paper's (10,000 steps at 1e-3 take 1-3 s), so
#: that a new user watches the matrices and embeddings learn for about 15-30 s.
DEMO_FORM = {"model_type": "dense_cooc", "n": 5, "l": 3, "lr": 2e-4, "cooc_steps": 60000, "tol": 0.0}


def demo_dataset(seed: int = 0) -> DataSet:
    """The built-in demo: the paper's synthetic setup (:data:`DEMO_SIZE`), generated by the core."""
    from densehmm_core.synthetic import demo_dataset as core_demo
    demo = core_demo(seed, **DEMO_SIZE)
    true = demo.params._asdict()  # startprob, transmat, emissionprob
    ds = DataSet(name="Demo: synthetic HMM (n = m = 5)", path=None, train=list(demo.train), test=list(demo.test),
                 vocabulary=[str(i) for i in range(true["emissionprob"].shape[1])], true_params=true)
    ds.options = {"seed": seed}
    return ds


def split_corpus(corpus, fraction: float = 0.5, seed: int = 0):
    """Seeded train/test split through the core (``Corpus.split``): ``fraction`` is the TRAIN share.

    A share of 0 (or a corpus of one sequence) means no split: everything trains, nothing is held out.
    """
    if fraction <= 0 or fraction >= 1 or len(corpus.sequences) < 2:
        return corpus, None
    return corpus.split(test_fraction=1.0 - float(fraction), seed=int(seed))


def dataset_from_corpus(path: str, corpus, split: float = 0.5, seed: int = 0, processed=None) -> DataSet:
    processed = corpus if processed is None else processed
    train, test = split_corpus(processed, split, seed)
    warnings = [str(w) for w in (getattr(corpus, "warnings", None) or [])]
    if processed is not corpus:
        warnings += [str(w) for w in (getattr(processed, "warnings", None) or []) if str(w) not in warnings]
    ds = DataSet(name=os.path.basename(path), path=os.path.abspath(path), train=train, test=test,
                 vocabulary=list(processed.vocabulary), corpus=corpus, processed=processed,
                 warnings=warnings, options={"split": split, "seed": seed})
    ds.summary    # noqa: B018 - computed here, on the loading thread, not when the window first shows it
    # and, on the loading thread too, what a job asks when it starts: the split's token counts (its
    # curves) and joined tokens (what it sends its worker; joined beside the window, the GIL stalls it)
    for part in (train, test):
        if part is not None:
            part.lengths  # noqa: B018 - cached by the Corpus
            part.tokens  # noqa: B018 - cached by the Corpus
    return ds


def load_models(path: str) -> ModelSet:
    """Every model of an .h5 file, with what the file keeps beside it (``info``: the
    ``read_model_info`` dicts).  A session file (its notes hold jobs) is only recognised:
    its models are read by :func:`app.session.load_session`, with its checks."""
    from densehmm_core import modelfile

    from .session import MAX_JOBS, is_session_info
    names = modelfile.list_models(path)
    if not names:
        raise modelfile.ModelFileError(path, "holds no models")
    if len(names) > MAX_JOBS:
        raise modelfile.ModelFileError(path, f"holds {len(names):,} models, more than the app opens "
                                             f"({MAX_JOBS:,}): refused")
    infos = modelfile.read_model_infos(path, arrays=False, history=False)
    if any(is_session_info(i) for i in infos):
        return ModelSet(path=os.path.abspath(path), models=[], info=infos)
    pairs = modelfile.load_models(path)
    return ModelSet(path=os.path.abspath(path), models=[(info["name"], model) for info, model in pairs],
                    info=[info for info, _model in pairs])


def load_path(path: str, split: float = 0.5, seed: int = 0, progress=None, format: str = "auto",
              read: Optional[dict] = None):
    """Read one file (runs on a background thread): a DataSet for data, a ModelSet for .h5 files.

    ``progress(bytes_read, total_bytes)`` is passed to ``densehmm_core.data.load`` for data
    files (model files report nothing: their size says little about the reading time);
    ``format`` names the data format ("auto": detected; see :func:`format_of_filter`);
    ``read`` holds reader options of ``data.load`` (the data panel's Observe group: ``observe``,
    ``lowercase``, ``max_vocab``, ``min_count``, ``rare``, ``tagset``, ``drop_traces``); the data
    set keeps them in ``options["read"]`` (sessions read the file again with them).
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if is_model_file(path):
        return load_models(path)
    from densehmm_core import data
    opts = dict(read or {})
    if opts.get("observe") == "words" and "min_count" in opts and opts["min_count"] is None:
        opts["min_count"] = 1   # saved before words defaulted to min. count 2: None meant every word
    corpus = data.load(path, format=format or "auto", progress=progress, **opts)
    ds = dataset_from_corpus(path, corpus, split, seed)
    if read:
        ds.options["read"] = dict(read)
    return ds


def is_tagged(ds: Optional[DataSet]) -> bool:
    """Whether a data set was read from a tagged corpus (any format but FASTA): it can observe
    its tags or its words."""
    return (ds is not None and ds.path is not None and ds.corpus is not None
            and ds.corpus.provenance.get("format", "fasta") != "fasta")


def read_options(ds: DataSet) -> dict:
    """How a tagged corpus was read, from its provenance (the reader's options, defaults
    included): ``observe``, ``lowercase``, ``max_vocab``, ``min_count``, ``rare``, for CoNLL-U
    ``tagset`` and for Penn Treebank ``drop_traces``."""
    opts = ds.corpus.provenance.get("options") or {}
    keys = ("observe", "lowercase", "max_vocab", "min_count", "rare", "tagset", "drop_traces")
    return {k: opts[k] for k in keys if k in opts}


def format_of_filter(chosen: str) -> Optional[str]:
    """The data format named by an Open dialog's file-type filter ("CoNLL-U (...)" -> "conllu");
    None for "All supported files", "All files" and model files (the format is then detected)."""
    from densehmm_core.data import FORMATS
    label = str(chosen or "").rsplit(" (", 1)[0].strip()   # "<label> (<patterns>)"
    for key, spec in FORMATS.items():
        if spec.get("label") == label:
            return key
    return None


def dataset_summary(ds: DataSet) -> dict:
    """Statistics to display: sequence, token and symbol counts, the sequence lengths and each symbol's
    occurrences, from the (preprocessed) Corpus (the demo: counted from its sequences); sizes of the
    train / test split.  Read it through :attr:`DataSet.summary`, which is computed once."""
    corpus = ds.processed if ds.processed is not None else ds.corpus
    if corpus is not None:
        lengths, freq = corpus.lengths, corpus.symbol_counts
    else:
        seqs = ds.all_sequences
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        freq = np.bincount(np.concatenate(seqs), minlength=ds.n_symbols) if seqs else np.zeros(ds.n_symbols)
    return {
        "n_sequences": len(lengths),
        "n_tokens": int(lengths.sum()),
        "n_symbols": ds.n_symbols,
        "lengths": lengths,
        "frequencies": np.asarray(freq, dtype=np.float64),
        "n_train": len(_seqs(ds.train)),
        "n_test": len(_seqs(ds.test)),
    }


PREPROCESS_KEYS = {"subset": "subset", "chunk_length": "chunk_len", "max_length": "max_len", "min_length": "min_len",
                   "merge_below": "merge_below", "dedupe": "dedupe"}


def preprocess_corpus(ds: "DataSet", options: dict):
    """Apply the data panel's options through the core; returns the preprocessed Corpus.

    Without a preset: ``Corpus.preprocess`` on the corpus as read.  With a preset
    (``paper_protein``...): the file is read again with ``data.load(path, preset=...)``, so
    the preset's reader options apply too; options set in the panel override the preset's.
    """
    from densehmm_core import data as core_data
    kw = _preprocess_kw(options)
    preset = options.get("preset")
    if preset:   # the Observe group's reader options stay, below the preset's
        read = options.get("read") or (ds.options or {}).get("read")
        return core_data.load(ds.path, preset=preset, defaults=read or None, **kw)
    if not kw:
        return ds.corpus
    return ds.corpus.preprocess(**kw)


def _preprocess_kw(options: dict) -> dict:
    """``Corpus.preprocess``'s arguments for the data panel's preprocessing ``options``."""
    kw = {core: options[k] for k, core in PREPROCESS_KEYS.items() if options.get(k)}
    if kw.get("subset") and options.get("subset_random"):
        kw["subset_seed"] = int(options.get("seed", 0))
    return kw


def job_read_options(job) -> dict:
    """The reader options of the job's training data (``densehmm_core.data.training_read_options``): its
    model's provenance (a model read from a file), else its data set's (a model trained here)."""
    from densehmm_core.data import training_read_options
    ds = getattr(job, "dataset", None)
    corpus = (ds.processed if ds.processed is not None else ds.corpus) if isinstance(ds, DataSet) else None
    return training_read_options(job.model, provenance=corpus.provenance if corpus is not None else None)


def reads_for_model(ds: DataSet, read_as: dict) -> bool:
    """Whether ``ds``'s sequences are read as data for a model whose training data were read with
    ``read_as`` (:func:`job_read_options`) are (the core's rule, ``densehmm_core.data.read_as_for_model``:
    the model's reading options, e.g. words, and every word as written); else :func:`read_for_model_again`
    reads its file again (Score, Decode)."""
    if ds.path is None or ds.corpus is None:
        return True
    from densehmm_core.data import read_as_for_model
    return read_as_for_model(ds.corpus.provenance.get("options"), read_as)


def read_for_model_again(ds: DataSet, read_as: dict) -> DataSet:
    """``ds``'s file read again as data for a model whose training data were read with ``read_as`` are (runs
    on a background thread): with the model's reading options and every word as written
    (``densehmm_core.data.reading_for_model``, as the command line's evaluate and decode read), the data
    set's format, encoding, sequence selection (subset, lengths, chunks; not its vocabulary steps or a
    preset's), split and seed, so its test part holds the same sequences."""
    from densehmm_core import data as core_data
    own = ds.corpus.provenance.get("options") or {}
    defaults = {k: own[k] for k in ("encoding", "on_malformed", "on_bad_sentence") if k in own}
    defaults.update(core_data.reading_for_model(read_as))
    corpus = core_data.load(ds.path, format=ds.corpus.provenance.get("format") or "auto", defaults=defaults)
    options = ds.options or {}
    kw = {k: v for k, v in _preprocess_kw(options).items() if k != "merge_below"}
    processed = corpus.preprocess(**kw) if kw else corpus
    out = dataset_from_corpus(ds.path, corpus, float(options.get("split", 0.5)), int(options.get("seed", 0)),
                              processed=processed)
    out.name = ds.name
    return out


def scored_part(ds: DataSet, n_scored: int) -> str:
    """What Score on data scored of ``ds`` (``n_scored`` sequences, after any left out): "test split,
    1,038 of 2,077 sequences" or "all 2,077 sequences"."""
    total = ds.summary["n_sequences"]
    if ds.test is not None:
        return f"test split, {n_scored:,} of {total:,} sequences"
    return f"all {total:,} sequences" if n_scored == total else f"{n_scored:,} of {total:,} sequences"


def save_models(path: str, items) -> List[str]:
    """Write ``(name, model, corpus, metrics[, extra])`` items into ONE new HDF5 file via the core
    writer (``extra``: more arguments of ``modelfile.save_model``, e.g. ``trained_utc``,
    ``test_corpus``, ``notes``): :func:`densehmm_core.modelfile.save_models`, one atomic
    replace (an existing file is never half-overwritten)."""
    from densehmm_core import modelfile
    entries = []
    for name, model, corpus, metrics, *extra in items:
        metrics = {k: v for k, v in (metrics or {}).items() if isinstance(v, (int, float))}
        entries.append(dict(extra[0] if extra else {}, name=name, model=model, corpus=corpus, metrics=metrics))
    return modelfile.save_models(path, entries)


def reopen_dataset(path: Optional[str], options: dict, progress=None, format: str = "auto") -> DataSet:
    """A data set opened again from its file with the options it had (split, seed, the reader
    options of the data panel's Observe group in ``options["read"]`` and the panel's
    preprocessing); the demo (``path`` None) is generated again.  Runs on a background thread
    (sessions; the Observe group's Apply, with ``progress`` as in :func:`load_path`)."""
    if path is None:
        return demo_dataset(int(options.get("seed", 0)))
    split, seed = float(options.get("split", 0.5)), int(options.get("seed", 0))
    ds = load_path(path, split=split, seed=seed, progress=progress, format=format, read=options.get("read"))
    if any(options.get(k) for k in PREPROCESS_KEYS) or options.get("preset"):
        processed = preprocess_corpus(ds, options)
        ds = dataset_from_corpus(path, ds.corpus, split, seed, processed=processed)
    ds.options = dict(options)
    return ds


def encode_for(model, data):
    """``data`` read with the model's alphabet: symbols matched by name through the core
    (:func:`densehmm_core.data.encode_for_model`, as the command line does).

    Raises ValueError naming the symbols the model does not know (and their token count)
    when it has no residual symbol to read them as.
    """
    from densehmm_core.data import encode_for_model
    return encode_for_model(data, model.vocabulary, model.n_symbols,
                            provenance=getattr(model, "provenance_", None))


def unknown_note(data) -> str:
    """What re-encoding did with symbols the model lacks (from the core's provenance), or ""."""
    for step in reversed((getattr(data, "provenance", None) or {}).get("preprocessing", []) or []):
        if isinstance(step, dict) and step.get("step") == "encode_with" and step.get("to_unknown"):
            names = ", ".join(repr(v) for v in step["to_unknown"][:8])
            return (f"{step.get('unknown_tokens', 0)} token(s) of {len(step['to_unknown'])} symbol(s) the model "
                    f"does not know ({names}) read as {step.get('unknown_symbol')!r}")
    return ""


def score_model(model, data) -> dict:
    """Normalised NLL (per token and the paper's variant) of a model on data, via the core; the
    data are first read with the model's alphabet (:func:`encode_for`)."""
    from densehmm_core.metrics import normalized_nll, paper_nll
    data = encode_for(model, data)
    ll = float(model.score(data))
    return {"loglik": ll, "nll": float(normalized_nll(ll, data)),
            "paper_nll": float(paper_nll(ll, data))}
