"""Data sets of the main window: the demo, opening files (with progress), selection, preprocessing."""
from __future__ import annotations

import functools
import os
from typing import List, Optional

from PySide6.QtWidgets import QFileDialog

from .. import tasks
from ..modelspec import ModelSpec
from ..datasets import (DEMO_FORM, DataSet, ModelSet, data_filters, dataset_from_corpus, demo_dataset, format_of_filter,
                        is_model_file, load_path, reopen_dataset)

__all__ = ["DataSetsMixin"]


class DataSetsMixin:
    """What the user opened: data sets (``self.datasets``, ``self.current_dataset``) and model files."""

    def load_demo(self, seed: int = 0) -> Optional[DataSet]:
        """Add (or select) the built-in demo data set."""
        for i, ds in enumerate(self.datasets):
            if ds.is_demo:
                self.select_dataset(i)
                return ds
        ds = demo_dataset(seed)
        self.add_dataset(ds)
        # the demo's model settings: about 15-30 s of visible learning (DEMO_FORM)
        self.model_form.set_spec(ModelSpec.from_dict({**self.model_form.spec().to_dict(), **DEMO_FORM}))
        self.log_panel.log("Model form set for the demo: Dense-cooc n=5 l=3, "
                           f"{DEMO_FORM['steps']:,} steps at learning rate {DEMO_FORM['lr']:g}")
        return ds

    def add_dataset(self, ds: DataSet) -> None:
        self.datasets.append(ds)
        self._sync_dataset_list(len(self.datasets) - 1)
        for w in ds.warnings:
            self.log_panel.log(f"{ds.name}: {w}", "warning")
        self.log_panel.log(f"Data set added: {ds.name}")
        if self.current_job is not None and self._dashboard is not None:
            self._offer_decode_datasets(self.current_job)
        self.dataset_added.emit(ds)

    def _sync_dataset_list(self, current: int) -> None:
        self.data_panel.set_datasets([d.name for d in self.datasets], current)
        self.select_dataset(current)

    def select_dataset(self, index: int) -> None:
        if not (0 <= index < len(self.datasets)):
            return
        ds = self.datasets[index]
        self.current_dataset = ds
        if self.data_panel.selector.currentIndex() != index:
            self.data_panel.selector.blockSignals(True)
            self.data_panel.selector.setCurrentIndex(index)
            self.data_panel.selector.blockSignals(False)
        self.data_panel.set_dataset(ds)
        self.model_form.set_n_symbols(ds.n_symbols)
        self.model_form.set_words_data(ds.observes_words)
        self.data_dock.raise_()

    def _dataset_selected(self, index: int) -> None:
        self.select_dataset(index)

    def open_dialog(self) -> None:
        """File > Open: the file-type list also chooses the format (e.g. "CoNLL-U" reads the
        files as CoNLL-U whatever their names); "All supported files" detects it."""
        paths, chosen = QFileDialog.getOpenFileNames(self, "Open data or model files", self.settings.last_folder,
                                                     data_filters())
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
            self._start_load(path, fn, batch, progress=not is_model_file(path))

    def _start_load(self, path: str, fn, batch: int, progress: bool, replace: Optional[DataSet] = None) -> None:
        """Run ``fn`` (``fn(progress=report)`` when ``progress``) on a background thread as one
        file of ``batch``: the status bar's progress, the log and the one error dialog; the
        data set it gives is added, or replaces ``replace``."""
        self._pending_loads += 1
        self._load_serial += 1
        key = self._load_serial
        self._load_progress[key] = (0, None)
        self._update_busy()
        self.statusBar().showMessage(f"Loading {os.path.basename(path)}…")
        self.log_panel.log(f"Loading {path}")
        on_progress = None
        if progress:
            on_progress = functools.partial(self._load_step, key, path)
            fn = functools.partial(_load_with_progress, fn)
        tasks.run_background(fn, functools.partial(self._loaded_key, key, path, batch, replace=replace),
                             functools.partial(self._load_error_key, key, path, batch), on_progress=on_progress)

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
            if replace is not None and isinstance(result, DataSet) and replace in self.datasets:
                self._pending_loads -= 1
                self._update_busy()
                self._replace_dataset(replace, result)
                self.statusBar().showMessage(f"Read {os.path.basename(path)} again", 5000)
            else:
                self._loaded(path, result)
        finally:
            self._batch_done(batch)

    def _load_error_key(self, key: int, path: str, batch: int, exc, tb: str) -> None:
        self._load_progress.pop(key, None)
        message = self._load_error(path, exc, tb)
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
        self._refresh_recent()
        if isinstance(result, ModelSet) and result.is_session:   # a saved session: read, checked, restored
            self.open_session(path)
        elif isinstance(result, ModelSet):
            self._add_model_set(result)
        else:
            self.add_dataset(result)
        self.statusBar().showMessage(f"Opened {os.path.basename(path)}", 5000)

    def _replace_dataset(self, old: DataSet, new: DataSet) -> None:
        """``new`` (the same file read again) takes ``old``'s place and name."""
        idx = self.datasets.index(old)
        new.name = old.name
        self.datasets[idx] = new
        self._sync_dataset_list(idx)
        for w in new.warnings:
            if w not in old.warnings:
                self.log_panel.log(f"{new.name}: {w}", "warning")
        read = new.options.get("read") or {}
        s = self.data_panel.summary
        self.log_panel.log(f"{new.name}: read again ({_describe_options(read) or 'observe=tags'}): "
                           f"{s['n_sequences']:,} sequences, {s['n_tokens']:,} tokens, {s['n_symbols']} symbols")
        if self.current_job is not None and self._dashboard is not None:
            self._offer_decode_datasets(self.current_job)

    def _load_error(self, path: str, exc, tb: str) -> str:
        self._pending_loads -= 1
        self._update_busy()
        message = str(exc) or type(exc).__name__
        if os.path.basename(path) not in message:
            message = f"{path}: {message}"
        if "name the format to read it as" in message:  # the core's unknown-format error
            message += " (choose its type in the file-type list of File > Open)"
        self.log_panel.log(f"Could not open {path}: {message}", "error")
        self.statusBar().showMessage(f"Could not open {os.path.basename(path)}", 5000)
        self.load_failed.emit(path, message)
        return message

    def preprocess_current(self, options: dict) -> None:
        """Re-run the core's preprocessing and split on the current data set (off the GUI thread)."""
        ds = self.current_dataset
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
            idx = self.datasets.index(ds) if ds in self.datasets else -1
            if idx < 0:
                return
            self.datasets[idx] = new_ds
            self._sync_dataset_list(idx)
            s = self.data_panel.summary
            self.log_panel.log(f"{ds.name}: preprocessing applied ({_describe_options(options)}): "
                               f"{s['n_sequences']:,} sequences, {s['n_tokens']:,} tokens, "
                               f"{s['n_symbols']} symbols")

        def failed(exc, tb):
            self._error_dialog("Preprocessing failed", str(exc))

        tasks.run_background(work, done, failed)


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
