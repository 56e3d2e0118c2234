"""Running the command line in the test's process: its exit status, stdout and stderr lines, and the
check that stderr holds exactly one error line (the CLI's rule for user errors)."""
from __future__ import annotations


def cli(capsys, *argv):
    """(exit status, stdout, stderr lines) of the command line run in this process."""
    from densehmm_core.cli import main
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, [ln for ln in cap.err.splitlines() if ln.strip()]


def one_error(lines, phrase):
    """The one error line among ``lines`` (notes and the training line aside), which must hold ``phrase``."""
    errors = [ln for ln in lines if not ln.startswith("note: ") and not ln.startswith("training ")]
    assert len(errors) == 1 and errors[0].startswith("densehmm") and "error:" in errors[0], lines
    assert phrase in errors[0], errors[0]
    return errors[0]
