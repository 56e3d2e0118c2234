"""What every command shares: exit codes, the user-error type, printing, model loading, metrics."""
from __future__ import annotations

import math
import sys
from typing import Optional

from ..commandline import UserError, user_error_types as _user_error_types  # noqa: F401 (the commands' names)

PROG = "densehmm"
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143


def _out(*a, **kw):
    print(*a, **kw)
    sys.stdout.flush()


def _err(msg: str) -> None:
    """A message on stderr; a closed stderr never stops the work."""
    try:
        print(msg, file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _jsonable(x):
    import numpy as np
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        return _jsonable(x.item())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _safe(text) -> str:
    """``text`` with control characters escaped repr-style (``\\x1b``, ``\\n``): a symbol or
    name read from a file can neither move the cursor, clear the screen nor forge an output line."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _tty_safe(text) -> str:
    """:func:`_safe` when stdout is a terminal; the text as it is when it goes to a file or pipe."""
    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    return _safe(text) if tty else str(text)


#: What a space inside a word or symbol is written as in a space-separated per-token column (U+00A0, the
#: no-break space): a CoNLL-U word may hold spaces ("10 000"), each column keeps one entry per token.
SPACE_IN_TOKEN = "\u00a0"


def _token(text) -> str:
    """One entry of a space-separated per-token column (``decode``'s symbols, words and tags, ``sample``'s
    symbols): :func:`_tty_safe`, and a space inside it written as :data:`SPACE_IN_TOKEN`."""
    return _tty_safe(text).replace(" ", SPACE_IN_TOKEN)


def _check_memory(nbytes: float, what: str) -> None:
    """Refuse work that cannot fit in memory before anything is allocated (one line, exit 2)."""
    from ..memory import TooLargeError, check_fits
    try:
        check_fits(nbytes, what)
    except TooLargeError as e:
        raise UserError(str(e)) from None


def _check_inference_memory(model, *parts, fitting: bool) -> None:
    """Refuse training (``fitting``), scoring or decoding ``parts`` (lists of sequences; None
    skipped) with ``model`` when the engine's buffers would not fit
    (:func:`densehmm_core.memory.inference_bytes`: the largest chunk, which one long sequence
    fills alone, and the data), before anything is allocated (one line, exit 2)."""
    from ..memory import TooLargeError, check_inference
    lengths = [len(s) for part in parts if part is not None for s in part]
    try:
        check_inference(lengths, model.n_states, model.n_symbols or 0,
                        tensorflow=fitting and model.needs_tensorflow)
    except TooLargeError as e:
        raise UserError(str(e)) from None


def _load_model(path: str, name: Optional[str]):
    from ..modelfile import load_model
    return load_model(path, name)


#: Above this many symbols the MAD is computed by metrics.cooc_mad_large (no m x m arrays).
MAD_DENSE_MAX_SYMBOLS = 1000


def _impossible_note(model, n_impossible: int, n_sequences: int, what: str = "") -> str:
    """One line saying that sequences have probability 0 under ``model`` and what to do about it."""
    line = (f"note: {n_impossible} of {n_sequences} {what}sequences are impossible under the model "
            f"(probability 0), so the log-likelihood is -inf")
    if model.kind == "standard" and not model.get_config().get("emission_pseudocount"):
        line += ("; plain Baum-Welch gives probability 0 to every symbol its training data lacks: "
                 "train with --pseudocount (e.g. 0.01) to smooth the emissions")
    return line


def _metric_values(met, model, seqs) -> dict:
    import numpy as np
    from ..maths import analytic_cooc, empirical_cooc
    m = model.n_symbols
    out = {}
    per_seq = np.asarray(model.score_per_sequence(seqs))   # scored once; both NLLs divide the sum
    out["loglik"] = float(per_seq.sum())
    out["n_impossible"] = int(np.count_nonzero(per_seq == -np.inf))
    out["nll"] = float(met.normalized_nll(out["loglik"], seqs))
    out["paper_nll"] = float(met.paper_nll(out["loglik"], seqs))
    if m > MAD_DENSE_MAX_SYMBOLS:  # words: the same MAD without m x m arrays
        try:
            out["mad"] = met.cooc_mad_large(seqs, m, None, model.transmat_, model.emissionprob_)
        except ValueError:
            pass
    else:
        try:
            omega_data = empirical_cooc(seqs, m)
        except ValueError:  # every sequence has length 1: no adjacent pairs, no MAD
            omega_data = None
        if omega_data is not None:
            omega_model = analytic_cooc(None, model.transmat_, model.emissionprob_)  # stationary pi
            out["mad"] = float(met.cooc_mad(omega_data, omega_model))
    out["n_sequences"] = len(seqs)
    out["n_tokens"] = int(sum(len(s) for s in seqs))
    return {k: v for k, v in out.items() if not (isinstance(v, float) and np.isnan(v))}
