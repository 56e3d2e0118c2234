"""``densehmm train``: building the model, training with progress, checkpoints and --resume."""
from __future__ import annotations

import math
import os
import signal
import time
from typing import Optional

from .common import (EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, UserError, _check_inference_memory,
                     _check_memory, _err, _impossible_note, _load_model, _metric_values, _out, _user_error_types)
from ..hyperparams import options_from_cli
from ..registry import model_class, model_classes
from .data import _load_train_data
from .progress import ProgressPrinter, SecondSignal, _progress_mode, _SigintCancel


_SIGTERM = getattr(signal, "SIGTERM", None)


# ----------------------------------------------------------------- models
def _check_positive(args, names) -> None:
    for opt in names:
        v = getattr(args, opt, None)
        if v is not None and not (v > 0 and math.isfinite(v)):  # NaN and inf fail too
            raise UserError(f"--{opt.replace('_', '-')} must be > 0 and finite, got {v}")


def _check_model_size(kind: str, cfg: dict) -> None:
    """Refuse a model that cannot fit in memory, before anything is allocated: the matrices,
    their expected counts and forward-backward buffers (about 8 copies of n^2 + n m floats),
    plus the embeddings and their Adam state for dense models."""
    n, m = int(cfg["n_states"]), int(cfg["n_symbols"])
    floats = 8 * (n * n + n * m)
    if kind == "dense":
        floats += 4 * (3 * n + m + 1) * int(cfg["dim"])
    what = f"a {kind} model with n={n}, m={m}" + (f", l={cfg['dim']}" if kind == "dense" else "")
    _check_memory(8.0 * floats, what)


def _refuse_dense_structure(args, *, fair: bool) -> None:
    """A standard HMM: ``--method`` (any) and ``--dim`` (but with ``--fair``, which matches a DenseHMM of
    that size) are a DenseHMM's; given, they are one line naming the flag (exit 2), never ignored."""
    if args.method is not None:
        raise UserError(f"--method {args.method} needs --model dense (standard HMMs are trained by Baum-Welch)")
    if args.dim is not None and not fair:
        raise UserError("--dim needs --model dense (or --model standard --fair: the DenseHMM whose "
                        "parameter count to match)")


def _model_config(args, n_symbols: int, gold_tags: Optional[int] = None):
    """``(kind, config)`` of the model the command line asks for: every flag maps to one option
    of the estimator's configuration (``--iter`` -> ``n_iter``, ``--steps`` -> ``cooc_steps``,
    ``--mstep-steps`` -> ``mstep_steps``, ...); :func:`densehmm_core.model_from_config` builds it.
    ``gold_tags``: how many gold tags the training words carry (named when ``--states`` is missing)."""
    kind = args.model or "dense"
    if args.states is None:
        per_tag = f" (the words carry {gold_tags} gold tags: --states {gold_tags} gives one state per tag)" \
            if gold_tags else ""
        raise UserError("--states N is required" + per_tag)
    _check_positive(args, ("states", "dim"))
    if args.states > 10 ** 7 or (args.dim is not None and args.dim > 10 ** 7):
        _check_memory(8.0 * max(args.states, args.dim or 0) ** 2, f"--states {args.states}"
                      + (f" --dim {args.dim}" if args.dim is not None else ""))
    cls = model_class(kind)
    # the structural flags (which model, its sizes) are read here; every other hyper-parameter flag comes
    # from the estimators' metadata (densehmm_core.hyperparams), checked against the model and fit method
    structural = ("n_states", "dim", "fit_method")
    if kind == "standard":
        _refuse_dense_structure(args, fair=bool(args.fair))
        if args.paper_settings:
            raise UserError("--paper-settings applies to dense models only")
        method = None
    else:
        if args.fair:
            raise UserError("--fair needs --model standard")
        if args.dim is None:
            raise UserError("--dim L is required for dense models")
        method = args.method or "cooc"
    try:
        options = options_from_cli(args, cls, method, model_classes(), skip=structural)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if "symbol_features" in options:
        from ..features import FEATURE_FUNCTIONS
        if options["symbol_features"] not in FEATURE_FUNCTIONS:
            raise UserError(f"--symbol-features: unknown {args.symbol_features!r}; "
                            f"available: {', '.join(sorted(FEATURE_FUNCTIONS))}")
    if kind == "standard":
        from ..standard import n_fair
        n = args.states
        if args.fair:
            if args.dim is None:
                raise UserError("--fair needs --dim L (the DenseHMM whose parameter count to match)")
            n = int(n_fair(args.states, n_symbols, args.dim))
        cfg = {"n_states": n, "n_symbols": n_symbols, "seed": args.seed, "device": "auto", **options}
        _check_model_size("standard", cfg)
        return "standard", cfg
    cfg = {"n_states": args.states, "dim": args.dim, "n_symbols": n_symbols, "fit_method": method,
           "seed": args.seed, "device": "auto", **options}
    if args.paper_settings:
        cfg["preset"] = "paper"
    _check_model_size("dense", cfg)
    return "dense", cfg


def _check_adjacent_pairs(model, train, source) -> None:
    """A co-occurrence fit counts adjacent symbols: training sequences of one symbol each give it nothing
    to fit (one line naming the way out, exit 2, before any training; EM and Baum-Welch start randomly)."""
    method = model.get_config().get("fit_method") if model.kind == "dense" else None
    if method in ("cooc", "cooc_em") and not any(len(s) >= 2 for s in train.sequences):
        raise UserError(f"{source}: no training sequence has two symbols or more, so the co-occurrence fit "
                        f"(--method {method}) has no adjacent pairs to fit: use --method em (or --model standard)")


def _final_metrics(model, train, test) -> dict:
    """Normalised NLL (both variants), co-occurrence MAD and, with gold tags, the tagging scores
    (M-1, 1-1, V-measure of the Viterbi states on the sentences with gold tags) through
    densehmm_core.metrics."""
    from .. import metrics as met
    out = {}
    for label, data in (("train", train), ("test", test)):
        if data is None:
            continue
        for key, value in _metric_values(met, model, data.sequences).items():
            out[f"{label}_{key}"] = value
        if getattr(data, "has_tags", False):  # gold tags (words or tags of a tagged corpus)
            gold = data.labelled()
            paths, _ = model.decode(gold.sequences)
            scores = met.tagging_scores(paths, gold.tags, n_states=model.n_states, n_tags=gold.n_tags)
            for key in ("m1", "one_to_one", "v_measure"):
                out[f"{label}_{key}"] = scores[key]
    return out


def cmd_train(args) -> int:
    from ..events import CancelToken
    from ..modelfile import list_models, read_model_infos

    out = args.out
    if out is not None and not out.strip():
        raise UserError("--out needs a file name (an empty name would train and save nothing)")
    if args.checkpoint_every is not None:
        if not out:
            raise UserError("--checkpoint-every needs --out")
        if not args.checkpoint_every > 0:
            raise UserError("--checkpoint-every must be > 0 seconds")
    if not out and args.overwrite:
        raise UserError("--overwrite needs --out (without --out nothing is saved)")
    if not out and args.name is not None and not args.resume:
        raise UserError("--name names the model in --out: give --out FILE.h5 (without --out nothing is saved)")
    if out:
        from .. import fileio
        folder = os.path.dirname(os.path.abspath(out)) or "."
        if not os.path.isdir(folder):
            raise UserError(f"{out}: the folder {folder} does not exist")
        fileio.check_writable(out, what="model file")  # read-only file or folder: said now, not after training
        if os.path.lexists(out):
            # refuses foreign, damaged or hostile files (every model checked) before any training
            names = [i["name"] for i in read_model_infos(out, arrays=False, history=False)]
            same_file = bool(args.resume) and (args.resume is True or
                                               os.path.abspath(str(args.resume)) == os.path.abspath(out))
            if args.name and args.name in names and not (args.overwrite or same_file):
                raise UserError(f"{out} already holds a model named {args.name!r}: "
                                f"use --overwrite, --resume or another --name")
    if args.name is not None:
        from ..modelfile.schema import _check_name
        try:
            _check_name(args.name)
        except ValueError as e:
            raise UserError(str(e)) from None

    train, test = _load_train_data(args)
    vocab = getattr(train, "vocabulary", None)
    n_symbols = len(vocab) if vocab is not None else None
    if n_symbols is None:
        n_symbols = int(max(int(s.max()) for s in train.sequences)) + 1

    resume_from = None
    if args.resume:
        resume_from = out if args.resume is True else args.resume
        if not resume_from:
            raise UserError("--resume needs a checkpoint file (--resume FILE.h5 or --out FILE.h5)")
        model = _load_model(resume_from, args.name)
        if args.model and args.model != model.kind:
            raise UserError(f"--model {args.model} does not match the {model.kind} model in {resume_from}")
        if model.vocabulary is not None and vocab is not None and list(model.vocabulary) != list(vocab):
            raise UserError(f"the data's vocabulary differs from that of the model in {resume_from}: "
                            f"give the same DATA and data options as for the first run")
        if model.n_symbols != n_symbols:
            raise UserError(f"the data have {n_symbols} symbols but the model in {resume_from} has {model.n_symbols}")
        _apply_overrides(model, args)
        name = args.name or getattr(model, "model_name_", None)
        if (out and os.path.exists(out) and os.path.abspath(resume_from) != os.path.abspath(out)
                and name in list_models(out) and not args.overwrite):
            raise UserError(f"{out} already holds a model named {name!r}: use --overwrite or another --name")
    else:
        try:
            from ..registry import model_from_config
            words = args.observe == "words" and train.tag_vocabulary is not None
            model = model_from_config(*_model_config(args, n_symbols, len(train.tag_vocabulary) if words else None))
        except (TypeError, ValueError) as e:
            if isinstance(e, _user_error_types()):  # e.g. DeviceError: already a clear message
                raise
            raise UserError(f"invalid model options: {e}") from None
        name = args.name
    if vocab is not None and model.vocabulary is None:
        model.vocabulary = list(vocab)
    _check_adjacent_pairs(model, train, "demo" if args.demo else args.data)
    _check_inference_memory(model, train.sequences, test.sequences if test is not None else None, fitting=True)

    if not args.quiet:
        kind = model.kind
        what = f"{kind} HMM, n={model.n_states}" + (f", l={model.dim}" if kind == "dense" else "")
        ntok = sum(len(s) for s in train.sequences)
        _err(f"training {what} on {len(train.sequences)} sequences ({ntok} tokens)"
             + (f", testing on {len(test.sequences)}" if test is not None else "")
             + (" [resumed]" if resume_from else ""))
    token = CancelToken()
    printer = ProgressPrinter(_progress_mode(args), notes=not args.quiet)
    signals = _SigintCancel(token, args.quiet)
    try:
        # The handlers stay through the final save: a signal there lets the save finish
        # (exit 130 / 143); a second one aborts it, leaving the file as it was.
        with signals:
            return _train_and_save(args, model, train, test, name, bool(resume_from), token, printer, signals)
    except SecondSignal:
        printer.close()
        how = f"aborted ({signals.abort_name})"
        if signals.phase == "saving" and out:
            _err(f"{how} during the save: {out} was left as it was (no temporary or lock file remains)")
        else:
            _err(f"{how}: nothing saved" + (f"; {out} keeps its last checkpoint" if out else ""))
        return EXIT_TERMINATED if signals.aborted_by == _SIGTERM else EXIT_INTERRUPTED
    finally:
        printer.close()


def _train_and_save(args, model, train, test, name, resumed: bool, token, printer, signals) -> int:
    """Train with progress and checkpoints, then compute the metrics and save; the exit status."""
    from ..events import TrainingDiverged
    from ..modelfile import ModelFileError

    out = args.out
    import uuid
    run = _RunSave(out, uuid.uuid4().hex, replace=bool(args.overwrite or resumed), name=name)
    last_params = None
    last_ckpt = time.monotonic()
    ckpt_failures = 0
    stopped = "done"
    phase = ""
    error = None
    saved_name = name
    kind = model.kind
    try:
        for ev in model.iter_fit(train, eval_data=test, cancel=token, init=not resumed):
            printer(ev)
            if ev.params:
                last_params = ev.params
            if ev.done:
                stopped, phase = ev.reason or "done", ev.phase
            if (args.checkpoint_every and not ev.done
                    and time.monotonic() - last_ckpt >= args.checkpoint_every):
                try:
                    saved_name = run.save(model, train, test_corpus=test,
                                          params=_ckpt_params(model, last_params), metrics={"checkpoint": True})
                except (ModelFileError, OSError) as e:  # e.g. a full disk: warn once, keep training
                    ckpt_failures += 1
                    if ckpt_failures == 1:
                        _err(f"densehmm: warning: checkpoint failed: {e}; training goes on "
                             f"(later checkpoint failures are not reported)")
                except ValueError:
                    pass  # no complete parameters yet: the next interval will try again
                last_ckpt = time.monotonic()
    except TrainingDiverged as e:
        error = e
        stopped = "diverged"
    printer.close()
    signals.phase = "saving"       # metrics and the save: a signal lets them finish

    if token.cancelled:
        stopped = "cancelled"
    try:
        model._check_params()
    except (RuntimeError, ValueError):  # no parameters yet, or not stochastic
        _err(f"densehmm: error: training ended ({stopped}) before the model had parameters; nothing saved")
        return EXIT_FAIL if error else _signal_status(signals, EXIT_INTERRUPTED)

    metrics = {}
    if error is None:
        try:
            metrics = _final_metrics(model, train, test)
        except Exception as e:  # noqa: BLE001 - never lose a trained model over a metric
            _err(f"densehmm: warning: final metrics could not be computed ({type(e).__name__}: {e})")
    else:
        model.stop_reason_ = "diverged"
    metrics["stop_reason"] = stopped
    if out:
        saved_name = run.save(model, train, test_corpus=test, metrics=metrics)
        signals.phase = "saved"
        if signals.aborted_by is not None:
            # the abort reached the process where Python ignores exceptions (e.g. a fork
            # callback of the save's file probe): the save finished regardless; say so
            _err(f"densehmm: note: the {signals.abort_name} could not stop the save: {out} holds the model")
    # the result, also with --quiet (which hides notes and progress only)
    parts = [_stop_text(stopped, phase)]
    for k in ("train_nll", "test_nll", "test_mad", "train_m1", "test_m1"):
        if k in metrics:
            parts.append(f"{k} {_number(metrics[k])}")
    _out("; ".join(parts))
    if metrics.get("test_n_impossible") and not args.quiet:
        _out(_impossible_note(model, metrics["test_n_impossible"], metrics["test_n_sequences"], "test "))
    if out:
        _out(f"saved {kind} model {saved_name!r} to {out}")
    if error is not None:
        _err(f"densehmm: error: training diverged ({error}); "
             + (f"the last finite model was saved to {out}" if out else "the last finite model was kept"))
        return EXIT_FAIL
    return _signal_status(signals, EXIT_OK)


class _RunSave:
    """The saves of one ``densehmm train`` run to ``--out`` (its checkpoints and its final save) under one
    run id: this run replaces the model it wrote, never one of the same name written by another run started
    at the same time (``--overwrite`` and ``--resume`` replace any). That name taken, ``save_model`` stores
    the model as the next free ``NAME-k`` (chosen under the file's lock) and a note says so once; the
    later saves of the run go to that name."""

    def __init__(self, out: str, run_id: str, replace: bool, name: Optional[str]) -> None:
        self.out, self.run_id, self.replace, self.name = out, run_id, replace, name

    def save(self, model, corpus, **kw) -> str:
        from ..modelfile import save_model
        saved = save_model(self.out, model, self.name, corpus, overwrite=self.replace, run_id=self.run_id,
                           if_taken="next", **kw)
        if self.name is not None and saved != self.name:
            _err(f"densehmm: note: {self.out} got a model named {self.name!r} from another run meanwhile; "
                 f"this run's model is saved as {saved!r}")
        self.name = saved
        return saved


def _number(value) -> str:
    """A metric of the summary line: 6 significant digits, and 0 never written as -0 (a one-token model's
    train_nll is -0.0)."""
    text = f"{value:.6g}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _stop_text(reason: str, phase: str) -> str:
    """The last line's "stopped: ..." part: the machine value (as the model file records it) and what it
    means; for a run that used all its iterations, the option that gives it more."""
    from ..events import stop_meaning
    if reason == "max_steps":
        option, unit = ("--steps", "step") if phase == "cooc" else ("--iter", "iteration")
        return f"stopped: max_steps (every {unit} was run; a larger {option} trains longer)"
    meaning = stop_meaning(reason)
    return f"stopped: {reason}" + (f" ({meaning})" if meaning else "")


def _signal_status(signals, otherwise: int) -> int:
    """143 after a SIGTERM, 130 after a Ctrl-C (whenever it came: training, metrics or the
    save), else ``otherwise``."""
    if signals.signal_received is None:
        return otherwise
    return EXIT_TERMINATED if signals.signal_received == _SIGTERM else EXIT_INTERRUPTED


def _ckpt_params(model, last_params):
    """Arrays for a checkpoint: the latest event snapshot, else the model's own arrays."""
    if not last_params:
        return None
    keys = {"startprob", "transmat", "emissionprob"}
    if not keys <= set(last_params):
        return None
    from ..maths import EMBEDDING_NAMES
    if model.kind == "dense" and not set(EMBEDDING_NAMES) <= set(last_params):
        return None
    return last_params


#: Configuration options a --resume may change (how much longer and how it trains on); every other
#: hyper-parameter flag given on --resume must equal the checkpoint's value.
RESUME_OPTIONS = ("device", "n_iter", "tol", "lr", "mstep_steps", "cooc_steps", "finish", "finish_steps")


def _apply_overrides(model, args) -> None:
    """--resume: apply the training options given on the command line to the loaded model
    (through ``set_params``, so every flag maps to one configuration option).  A flag the model or
    its fit method does not use exits 2 naming it, as for a new model; one that shapes the model
    (e.g. ``--l2``, ``--init``) and differs from the checkpoint's value too.

    Without ``--iter``, an EM / Baum-Welch run continues for the iterations it had left
    (the configured maximum minus the iterations in the saved history); with ``--iter K`` it runs K
    more iterations and the file then records ``n_iter`` K.
    """
    from ..hyperparams import cli_flags
    kind = model.kind
    for opt in ("fair", "paper_settings"):
        if getattr(args, opt, False):
            raise UserError(f"--{opt.replace('_', '-')} cannot be changed on --resume")
    if args.states is not None and args.states != model.n_states:
        raise UserError(f"--states {args.states} does not match the model in the checkpoint "
                        f"({model.n_states} states)")
    cfg = model.resolved_config()      # the settings the checkpoint trained with
    method = cfg.get("fit_method") if kind == "dense" else None
    if kind == "standard" and (args.method is not None or args.dim is not None):
        flag = "--method" if args.method is not None else "--dim"
        raise UserError(f"{flag} does not apply to the standard HMM in the checkpoint (trained by Baum-Welch)")
    if kind == "dense" and args.dim is not None and args.dim != cfg["dim"]:
        raise UserError(f"--dim {args.dim} does not match the model in the checkpoint (l={cfg['dim']})")
    if args.method and args.method != method:
        raise UserError(f"--method {args.method} does not match the checkpoint's fit method ({method})")
    try:
        options = options_from_cli(args, type(model), method, model_classes(), skip=("n_states", "dim", "fit_method"))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    # the flags of this model's options that its fit method uses
    flag_of = {hp.name: flag for flag, pairs in cli_flags([type(model)]).items() for _, hp in pairs
               if not hp.methods or method in hp.methods}
    for key, value in options.items():
        if key not in RESUME_OPTIONS and value != cfg.get(key):
            may = [flag_of[k] for k in RESUME_OPTIONS if k in flag_of]
            raise UserError(f"{flag_of.get(key, key)} {value} cannot be changed on --resume (the checkpoint has "
                            f"{cfg.get(key)}; --resume may change {', '.join(may)})")
    changes = {k: v for k, v in options.items() if k in RESUME_OPTIONS}
    if kind == "standard" or method in ("em", "marginal"):
        if "n_iter" not in changes:
            done = _iterations_done(model)
            changes["n_iter"] = max(0 if kind == "standard" else 1, int(cfg["n_iter"]) - done)
    try:
        model.set_params(**changes)
    except (TypeError, ValueError) as e:
        raise UserError(f"invalid model options: {e}") from None


def _iterations_done(model) -> int:
    """EM / Baum-Welch iterations recorded in the history (records with step > 0, over all resumes)."""
    return sum(1 for r in model.history_ if isinstance(r.get("step"), int) and r["step"] > 0
               and r.get("phase") in ("baum-welch", "em", "marginal"))
