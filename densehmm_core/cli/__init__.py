"""The ``densehmm`` command line (also ``python -m densehmm_core``).

Commands: ``train``, ``evaluate``, ``info``, ``sample``, ``decode``, ``export`` and
``reproduce`` (from :mod:`densehmm_core.experiments.cli`).  The command line
does no maths of its own: it loads data through :mod:`densehmm_core.data`, trains
through ``model.iter_fit`` and prints the :class:`~densehmm_core.events.ProgressEvent`
stream, computes metrics through :mod:`densehmm_core.metrics` and reads/writes
model files through :mod:`densehmm_core.modelfile`.

Exit status: 0 success, 1 failure (training diverged, internal error),
2 user error (bad option, missing or malformed file), 130 interrupted (Ctrl-C),
143 terminated (SIGTERM; ``train`` saves what was reached, as on Ctrl-C).

Importing this package is fast: numpy, h5py and TensorFlow are imported only by
the command that needs them.

Modules: :mod:`.parser` (arguments and ``--help`` texts), :mod:`.progress` (progress
printing and Ctrl-C), :mod:`.data` (loading data and encoding it for a model),
:mod:`.train` (train, resume, checkpoints), :mod:`.inspection` (evaluate, info, sample,
decode, export) and :mod:`.common` (exit codes, user errors, printing, model loading).
"""
from __future__ import annotations

import os
import sys
from typing import Optional, Sequence

from .common import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, PROG, UserError, _err, _user_error_types
from .parser import build_parser

__all__ = ["main", "build_parser", "UserError"]


def _drop_stdout() -> None:
    """Standard output can no longer be written (a closed pipe, a full disk): send the rest to nowhere, so
    that nothing is tried again (and reported) at exit."""
    try:
        sys.stdout = open(os.devnull, "w")
    except OSError:
        pass


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status (the console script exits with it)."""
    as_command = argv is None   # the real command (not a call from Python, e.g. a test)
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if as_command and not ({"-v", "--verbose", "--debug"} & set(argv)):
        from .quiet import filter_native_notices
        filter_native_notices()   # TensorFlow's start-up notices (oneDNN, absl) only with --verbose
    args = None
    try:
        with_reproduce = bool(argv) and argv[0] == "reproduce"
        parser = build_parser(with_reproduce=with_reproduce)
        args = parser.parse_args(argv)
        debug = debug or bool(getattr(args, "debug", False))
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help()
            return EXIT_USAGE
        rc = func(args)
        return EXIT_OK if rc is None else int(rc)
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `densehmm sample ... | head`
        _drop_stdout()
        return EXIT_OK
    except Exception as e:  # noqa: BLE001 - the command line's last line of defence
        from ..fileio import is_disk_full
        cmd = getattr(args, "command", None) if args is not None else None
        user_error = isinstance(e, _user_error_types())   # a save's full disk is one, in its own words
        if user_error or (isinstance(e, OSError) and is_disk_full(e)):
            if debug:
                import traceback
                traceback.print_exc()
            if user_error:
                msg = str(e)
            else:   # e.g. `densehmm sample ... > /dev/full`
                _drop_stdout()   # what could not be written is not tried again at exit
                msg = (f"cannot write {getattr(e, 'filename', None) or 'the output'}: the disk is full "
                       f"(no space left on device)")
            _err(f"{PROG}{(' ' + cmd) if cmd else ''}: error: {msg}")
            return EXIT_USAGE
        if isinstance(e, FileNotFoundError):
            _err(f"{PROG}{(' ' + cmd) if cmd else ''}: error: "
                 + (f"{e.filename}: no such file" if e.filename else str(e)))
            return EXIT_USAGE
        if debug:
            import traceback
            traceback.print_exc()
        _err(f"{PROG}: internal error: {type(e).__name__}: {e} (run again with --debug for a traceback)")
        return EXIT_FAIL
