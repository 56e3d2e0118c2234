"""Data sets of the main window: the demo, opening files (with progress), selection, preprocessing."""
from __future__ import annotations

import functools
import os
from typing import List, Optional

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressBar, QWidget

from .. import tasks
from ..modelspec import ModelSpec
from ..datasets import (DEMO_FORM, DataSet, ModelSet, data_filters, dataset_from_corpus, demo_dataset, format_of_filter,
                        is_model_file, load_path, reopen_dataset)
from .common import error_dialog

__all__ = ["DataController", "offer_complete_sentences"]


class DataController(QObject):
    """What the user opens: data sets (into the state) and files (model files and sessions handed on).

    Parameters
    ----------
    window : QWidget
        The shell: dialogs' parent, its status bar, ``window.dashboard`` and
        ``window.leave_start_page()`` (the centre shows the views once data are in).
    state : AppState
        The open data sets and the current one (changed only through its methods).
    settings : Settings
        Last folder and recent files.
    data_panel, model_form, log_panel :
        The panels it talks to (their public API): the data panel's list, summary and reading
        options; the model form's spec and sizes; the log.
    data_dock : QDockWidget
        Raised when a data set is shown.
    busy : QProgressBar
        The status bar's progress of the pending loads.

    Signals
    -------
    dataset_added(DataSet), load_failed(str path, str message), load_progress(str path, bytes read, total)
        For whoever follows loading (tests, benchmarks).
    models_read(ModelSet)
        An .h5 file of models was read (the window hands it to the results' controller).
    session_read(str path)
        A session file was recognised (the window hands it to the sessions' controller).
    recent_changed()
        A file joined the recent files (the window refreshes File > Open recent and the start page).
    """

    dataset_added = Signal(object)
    load_failed = Signal(str, str)      # path, message
    load_progress = Signal(str, object, object)  # path, bytes read, total bytes (None: unknown)
    models_read = Signal(object)
    session_read = Signal(str)
    recent_changed = Signal()

    def __init__(self, window: QWidget, state, settings, data_panel, model_form, log_panel, data_dock,
                 busy: QProgressBar) -> None:
        super().__init__(window)
        self.window = window
        self.state = state
        self.settings = settings
        self.data_panel = data_panel
        self.model_form = model_form
        self.log_panel = log_panel
        self.data_dock = data_dock
        self.busy = busy
        self._pending_loads = 0
        self._load_serial = 0
        self._load_progress: dict = {}      # load serial -> (bytes read, total or None)
        self._load_batch = 0
        self._batches: dict = {}            # open_files call -> {"pending": n, "failed": [(path, message)]}

    def _error_dialog(self, title: str, message: str) -> None:
        error_dialog(self.window, title, message)

    def _status(self, text: str, ms: int = 0) -> None:
        self.window.statusBar().showMessage(text, ms)

    def training_dataset(self) -> Optional[DataSet]:
        """The data set new jobs train on: the current one, the demo's when none is open."""
        if self.state.current_dataset is None:
            self.load_demo()
        return self.state.current_dataset

    def load_demo(self, seed: int = 0) -> Optional[DataSet]:
        """Add (or select) the built-in demo data set."""
        for i, ds in enumerate(self.state.datasets):
            if ds.is_demo:
                self.select_dataset(i)
                return ds
        ds = demo_dataset(seed)
        self.add_dataset(ds)
        # the demo's model settings: about 15-30 s of visible learning (DEMO_FORM)
        self.model_form.set_spec(ModelSpec.from_dict({**self.model_form.spec().to_dict(), **DEMO_FORM}))
        self.log_panel.log("Model form set for the demo: Dense-cooc n=5 l=3, "
                           f"{DEMO_FORM['cooc_steps']:,} steps at learning rate {DEMO_FORM['lr']:g}")
        return ds

    def add_dataset(self, ds: DataSet) -> None:
        for w in ds.warnings:
            self.log_panel.log(f"{ds.name}: {w}", "warning")
        self.log_panel.log(f"Data set added: {ds.name}")
        self.state.add_dataset(ds)
        if self.window.leave_start_page():   # the data are in: the views take the centre
            if self.state.current_job is None:
                self.window.dashboard.set_title(f"No job yet: press Train (Ctrl+T) to train a model on {ds.name}")
        self.dataset_added.emit(ds)

    def select_dataset(self, index: int) -> None:
        """Make the ``index``-th open data set the current one (what new jobs train on)."""
        datasets = self.state.datasets
        if 0 <= index < len(datasets):
            self.state.set_current_dataset(datasets[index])

    # listeners of the state (MainWindow._subscribe)
    def datasets_listed(self) -> None:
        """``datasets_changed``: the data panel's list."""
        ds, datasets = self.state.current_dataset, self.state.datasets
        self.data_panel.set_datasets([d.name for d in datasets], datasets.index(ds) if ds in datasets else -1)

    def dataset_shown(self, ds: DataSet) -> None:
        """``current_dataset_changed``: the data panel and the model form follow."""
        index = self.state.datasets.index(ds)
        if self.data_panel.selector.currentIndex() != index:
            self.data_panel.selector.blockSignals(True)
            self.data_panel.selector.setCurrentIndex(index)
            self.data_panel.selector.blockSignals(False)
        self.data_panel.set_dataset(ds)
        self.model_form.set_n_symbols(ds.n_symbols)
        self.model_form.set_words_data(ds.observes_words, ds.gold_tags)
        self.data_dock.raise_()

    def open_dialog(self) -> None:
        """File > Open: every file is listed ("All files", the default; those that cannot be read
        are reported together); the file-type list also chooses the format (e.g. "CoNLL-U" reads
        the files as CoNLL-U whatever their names); "All files" and "All supported files" detect it."""
        filters = data_filters()
        paths, chosen = QFileDialog.getOpenFileNames(self.window, "Open data or model files", self.settings.last_folder,
                                                     filters, filters.split(";;")[0])
        if paths:
            self.open_files(paths, format=format_of_filter(chosen))

    def open_files(self, paths: List[str], format: Optional[str] = None) -> None:
        """Open data files and .h5 model files, each read on a background thread; ``format``
        names the data files' format (None: detected).

        The status bar's progress bar shows the bytes read of the data files being loaded
        (the reader's throttled ``progress(bytes_read, total)`` reports); while any pending
        file has no known size yet (model files, a load not started) it is a busy indicator.
        Files that cannot be opened are reported together, in one dialog, once every file of
        this call has been tried.
        """
        self._load_batch += 1
        batch = self._load_batch
        self._batches[batch] = {"pending": len(paths), "failed": []}
        for path in paths:
            path = os.path.abspath(path)
            options = self.data_panel.options()
            fn = functools.partial(load_path, path, split=options["split"], seed=options["seed"],
                                   format=format or "auto")
            self._start_load(path, fn, batch, progress=not is_model_file(path), retry=fn)

    def _start_load(self, path: str, fn, batch: int, progress: bool, replace: Optional[DataSet] = None,
                    retry=None) -> None:
        """Run ``fn`` (``fn(progress=report)`` when ``progress``) on a background thread as one
        file of ``batch``: the status bar's progress, the log and the one error dialog; the
        data set it gives is added, or replaces ``replace``; ``retry`` (File > Open's ``load_path``):
        a file cut short may be read again with ``read=...`` (:func:`offer_complete_sentences`)."""
        self._pending_loads += 1
        self._load_serial += 1
        key = self._load_serial
        self._load_progress[key] = (0, None)
        self._update_busy()
        self._status(f"Loading {os.path.basename(path)}…")
        self.log_panel.log(f"Loading {path}")
        on_progress = None
        if progress:
            on_progress = functools.partial(self._load_step, key, path)
            fn = functools.partial(_load_with_progress, fn)
        tasks.run_background(fn, functools.partial(self._loaded_key, key, path, batch, replace=replace),
                             functools.partial(self._load_error_key, key, path, batch, fn=retry),
                             on_progress=on_progress)

    def reread_dataset(self, ds: Optional[DataSet], read: dict) -> None:
        """The data panel's Observe group: read ``ds``'s file again with the reader options
        ``read`` (``observe``, ``tagset``, ``drop_traces``, ``lowercase``, ``max_vocab``, ``min_count``,
        ``rare``), keeping its
        split, seed and preprocessing, on the loading path of File > Open (progress, one error
        dialog); the new data set takes the old one's place in the list."""
        if ds is None or ds.path is None or ds.corpus is None:
            return
        prov = ds.corpus.provenance
        fmt = "auto" if prov.get("format_detected", True) else prov.get("format", "auto")
        options = {k: v for k, v in (ds.options or {}).items() if k != "read"}
        if read:
            options["read"] = dict(read)
            kept = (ds.options or {}).get("read") or {}
            if "on_bad_sentence" in kept:      # a file cut short stays read without its broken sentences
                options["read"]["on_bad_sentence"] = kept["on_bad_sentence"]
        self._load_batch += 1
        batch = self._load_batch
        self._batches[batch] = {"pending": 1, "failed": []}
        self._start_load(ds.path, functools.partial(reopen_dataset, ds.path, options, format=fmt), batch,
                         progress=True, replace=ds)

    @property
    def loading(self) -> bool:
        return self._pending_loads > 0

    def _load_step(self, key: int, path: str, done, total) -> None:
        if key in self._load_progress:
            self._load_progress[key] = (int(done), int(total) if total else None)
            self._update_busy()
            self.load_progress.emit(path, int(done), int(total) if total else None)

    def load_fraction(self) -> Optional[float]:
        """Share of the pending loads' bytes read (0..1), or None when a pending total is unknown."""
        if not self._load_progress:
            return None
        parts = list(self._load_progress.values())
        if any(not total for _, total in parts):
            return None
        return min(1.0, sum(d for d, _ in parts) / float(sum(t for _, t in parts)))

    def _update_busy(self) -> None:
        self.busy.setVisible(self._pending_loads > 0)
        fraction = self.load_fraction()
        if fraction is None:
            self.busy.setRange(0, 0)          # busy indicator: size unknown
            self.busy.setFormat("")
        else:
            self.busy.setRange(0, 1000)
            self.busy.setValue(int(round(1000 * fraction)))
            self.busy.setFormat(f"{100 * fraction:.0f} %")
        self.busy.setTextVisible(fraction is not None)

    def _loaded_key(self, key: int, path: str, batch: int, result, replace: Optional[DataSet] = None) -> None:
        self._load_progress.pop(key, None)
        try:
            if replace is not None and isinstance(result, DataSet) and replace in self.state.datasets:
                self._pending_loads -= 1
                self._update_busy()
                self._replace_dataset(replace, result)
                self._status(f"Read {os.path.basename(path)} again", 5000)
            else:
                self._loaded(path, result)
        finally:
            self._batch_done(batch)

    def _load_error_key(self, key: int, path: str, batch: int, exc, tb: str, fn=None) -> None:
        self._load_progress.pop(key, None)
        message = self._load_error(path, exc, tb)
        if fn is not None and offer_complete_sentences(self.window, path, exc):
            # a CoNLL / CoNLL-U file cut short: read again, keeping its complete sentences
            self._batches[batch]["pending"] += 1
            self._start_load(path, functools.partial(fn, read={"on_bad_sentence": "skip"}), batch, progress=True)
        else:
            self._batches[batch]["failed"].append((path, message))
        self._batch_done(batch)

    def _batch_done(self, batch: int) -> None:
        """One file of an ``open_files`` call is done; after the last, ONE dialog lists the failures."""
        b = self._batches[batch]
        b["pending"] -= 1
        if b["pending"] > 0:
            return
        del self._batches[batch]
        failed = b["failed"]
        if not failed:
            return
        if len(failed) == 1:
            self._error_dialog("Cannot open file", failed[0][1])
            return
        lines = "\n".join(f"• {os.path.basename(p)}: {_reason(p, m)}" for p, m in failed)
        self._error_dialog("Cannot open files", f"{len(failed)} files could not be opened:\n\n{lines}")

    def _loaded(self, path: str, result) -> None:
        self._pending_loads -= 1
        self._update_busy()
        self.settings.last_folder = os.path.dirname(path)
        self.settings.add_recent_file(path)
        self.recent_changed.emit()
        if isinstance(result, ModelSet) and result.is_session:   # a saved session: read, checked, restored
            self.session_read.emit(path)
        elif isinstance(result, ModelSet):
            self.models_read.emit(result)
        else:
            self.add_dataset(result)
        self._status(f"Opened {os.path.basename(path)}", 5000)

    def _replace_dataset(self, old: DataSet, new: DataSet) -> None:
        """``new`` (the same file read again) takes ``old``'s place and name."""
        new.name = old.name
        self.state.replace_dataset(old, new)
        for w in new.warnings:
            if w not in old.warnings:
                self.log_panel.log(f"{new.name}: {w}", "warning")
        read = new.options.get("read") or {}
        s = self.data_panel.summary
        self.log_panel.log(f"{new.name}: read again ({_describe_options(read) or 'observe=tags'}): "
                           f"{s['n_sequences']:,} sequences, {s['n_tokens']:,} tokens, {s['n_symbols']} symbols")

    def _load_error(self, path: str, exc, tb: str) -> str:
        self._pending_loads -= 1
        self._update_busy()
        message = str(exc) or type(exc).__name__
        if os.path.basename(path) not in message:
            message = f"{path}: {message}"
        if "name the format to read it as" in message:  # the core's unknown-format error
            message += " (choose its type in the file-type list of File > Open)"
        self.log_panel.log(f"Could not open {path}: {message}", "error")
        self._status(f"Could not open {os.path.basename(path)}", 5000)
        self.load_failed.emit(path, message)
        return message

    def preprocess_current(self, options: dict) -> None:
        """Re-run the core's preprocessing and split on the current data set (off the GUI thread)."""
        ds = self.state.current_dataset
        if ds is None or ds.corpus is None:
            return
        from ..datasets import preprocess_corpus

        def work():
            processed = preprocess_corpus(ds, options)
            return dataset_from_corpus(ds.path, ds.corpus, options["split"], options["seed"], processed=processed)

        def done(new_ds: DataSet) -> None:
            new_ds.name = ds.name
            new_ds.options = dict(options)
            if (ds.options or {}).get("read"):   # how the file was read (the Observe group) stays
                new_ds.options["read"] = dict(ds.options["read"])
            if not self.state.replace_dataset(ds, new_ds):
                return   # closed meanwhile
            s = self.data_panel.summary
            self.log_panel.log(f"{ds.name}: preprocessing applied ({_describe_options(options)}): "
                               f"{s['n_sequences']:,} sequences, {s['n_tokens']:,} tokens, "
                               f"{s['n_symbols']} symbols")

        def failed(exc, tb):
            self._error_dialog("Preprocessing failed", str(exc))

        tasks.run_background(work, done, failed)


def offer_complete_sentences(parent, path: str, exc) -> bool:
    """A CoNLL / CoNLL-U file refused for one broken sentence (``DataFormatError.skippable``, e.g.
    a file cut in the middle of a line): ask whether to read its complete sentences (the data
    set's warnings then say how many were skipped)."""
    from densehmm_core.data import DataFormatError
    if not (isinstance(exc, DataFormatError) and exc.skippable):
        return False
    answer = QMessageBox.question(
        parent, "File cut short?",
        f"{exc}\n\n{os.path.basename(path)} has a sentence that is cut short or broken. Read its complete "
        f"sentences and skip the broken ones? (The Data panel's Warnings and the log say how many.)",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes)
    return answer == QMessageBox.StandardButton.Yes


def _reason(path: str, message: str) -> str:
    """A load error without the file's path in front (the dialog names the file already)."""
    for name in (path, os.path.basename(path)):
        for sep in (": ", ", "):        # "file: reason" or "file, line 3: reason"
            if message.startswith(name + sep):
                return message[len(name + sep):]
    return message


def _load_with_progress(load, report):
    """Run ``load(progress=report)`` (``app.tasks`` passes the throttled ``report``)."""
    return load(progress=report)


def _describe_options(o: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in o.items() if v not in (None, False, 0, 0.0) or k == "split")
