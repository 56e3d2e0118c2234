"""The commands that use a saved model: ``evaluate``, ``info``, ``sample``, ``decode``, ``export``."""
from __future__ import annotations

import json
import shutil

from .common import (EXIT_OK, UserError, _check_memory, _impossible_note, _jsonable, _load_model, _metric_values,
                     _out, _safe, _token, _tty_safe)
from .data import _load_eval_data


# -------------------------------------------------------------- evaluate
def cmd_evaluate(args) -> int:
    from .. import metrics as met
    model = _load_model(args.model_file, args.name)
    seqs, corpus, _ = _load_eval_data(args, model)
    values = _metric_values(met, model, seqs)
    result = {"model_file": args.model_file, "model": getattr(model, "model_name_", args.name),
              "data": args.data, "part": args.part, **values}
    tagging = None
    if corpus.has_tags:
        paths, _ = model.decode(seqs)
        tagging = _tagging(met, model, paths, corpus)
        result["tagging"] = {k: tagging[k] for k in ("m1", "one_to_one", "v_measure", "n_tokens", "n_tags")}
        result["tagging"]["mapping"] = {str(i): (corpus.tag_vocabulary[t] if t >= 0 else None)
                                        for i, t in enumerate(tagging["mapping"].tolist())}
    if args.json:
        _out(json.dumps(_jsonable(result), indent=2))  # inf (an impossible sequence) -> null
    else:   # the result, also with --quiet (which hides notes and progress only)
        _out(f"model       {result['model']} ({args.model_file})")
        _out(f"data        {args.data}" + (f" ({args.part} part)" if args.part != "all" else "")
             + f": {values['n_sequences']} sequences, {values['n_tokens']} tokens")
        _out(f"log-likelihood          {values['loglik']:.6f}")
        _out(f"normalised NLL          {values['nll']:.6f}   (-log-likelihood / tokens)")
        if "paper_nll" in values:
            _out(f"normalised NLL (paper)  {values['paper_nll']:.6f}")
        if values["n_impossible"] and not args.quiet:
            _out(_impossible_note(model, values["n_impossible"], values["n_sequences"]))
        if "mad" in values:
            _out(f"co-occurrence MAD       {values['mad']:.6g}")
        if tagging is not None:
            _out(f"tagging against the gold tags ({tagging['n_tags']} tags, {tagging['n_tokens']} tokens):")
            _out(f"  many-to-one (M-1)     {tagging['m1']:.4f}")
            _out(f"  one-to-one (1-1)      {tagging['one_to_one']:.4f}")
            _out(f"  V-measure             {tagging['v_measure']:.4f}")
    return EXIT_OK


def _tagging(met, model, paths, corpus) -> dict:
    """Tagging scores of Viterbi paths against the corpus's gold tags (tokens without one left out)."""
    scores = met.tagging_scores(paths, corpus.tags, n_states=model.n_states, n_tags=corpus.n_tags)
    scores["n_tags"] = corpus.n_tags
    return scores


def cmd_info(args) -> int:
    from ..modelfile import list_models, read_model_infos
    all_names = list_models(args.model_file)
    # Read what is printed, in one read: arrays only with --arrays, the first and last history
    # rows unless --history or --json (so a file of 2,000 models is listed in proportion).
    history = True if (args.history or args.json) else 3
    infos = read_model_infos(args.model_file, [args.name] if args.name else None, arrays=bool(args.arrays),
                             history=history)
    if args.json:
        out = {"file": args.model_file, "format": infos[0]["file"] if infos else {}, "models": []}
        for info in infos:
            d = {k: v for k, v in info.items() if k not in ("arrays", "file")}
            d["shapes"] = {k: list(_shape(v)) for k, v in info["arrays"].items()}
            if args.arrays:
                d["arrays"] = info["arrays"]
            out["models"].append(d)
        _out(_json_safe(json.dumps(_jsonable(out), indent=2, ensure_ascii=False)))
        return EXIT_OK
    if not infos:
        _out(f"{_safe(args.model_file)}: no models")
        return EXIT_OK
    f = infos[0]["file"]
    _out(_safe(f"{args.model_file}: {f.get('format')} schema {f.get('schema_version')}, "
               f"{len(all_names)} model(s), written by {f.get('writer', '?')} at {f.get('modified_utc', '?')}"))
    for info in infos:
        _print_model_info(info, args)
    return EXIT_OK


def _shape(v) -> tuple:
    return tuple(v.shape) if hasattr(v, "shape") else tuple(v)


def _json_safe(text: str) -> str:
    """JSON text with every non-printable character as a \\u escape (JSON escapes only the C0
    controls; DEL, the C1 controls such as CSI and bidi overrides would reach the terminal)."""
    if text.isprintable():
        return text
    return "".join(c if (c.isprintable() or c in "\n ") else json.dumps(c)[1:-1] for c in text)


def _kv(d: dict) -> str:
    """``key=value`` pairs, wrapped under the 15-column label of the info listing."""
    import textwrap
    width = max(60, min(120, shutil.get_terminal_size((100, 20)).columns))
    text = ", ".join(f"{k}={_short(v)}" for k, v in d.items())
    lines = textwrap.wrap(text, width=width - 15, break_long_words=False, break_on_hyphens=False)
    return ("\n" + " " * 15).join(lines)


#: longest list of values shown whole in the listing (a vocabulary or a long list of counts would fill screens:
#: --json has them); mappings and lists of mappings (the data's reading options, preprocessing steps, extra
#: files, split, reader counts: what reads the same data again) are always shown whole, wrapped
LIST_CHARS = 60


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, dict)):
        s = json.dumps(v)
        whole = isinstance(v, dict) or any(isinstance(x, dict) for x in v)
        return _safe(s if whole or len(s) <= LIST_CHARS else s[:LIST_CHARS - 3] + "...")
    return _safe(v)


def _print_model_info(info: dict, args) -> None:
    import numpy as np
    a = info["attrs"]
    _out("")
    head = (f"model {_safe(repr(info['name']))}: {a['kind']} HMM, n={a['n_states']} states, "
            f"m={a['n_symbols']} symbols")
    if a["kind"] == "dense":
        head += f", l={a.get('dim')}"
    _out(head)
    _out(_safe(f"  fit method   {a.get('fit_method') or '-'}    seed {a.get('seed', '-')}    "
               f"device {a.get('device_used') or '-'}    parameters {a.get('n_parameters', '-')}"))
    hist = info["history"]
    _out(_safe(f"  trained      {a.get('trained_utc') or a.get('created_utc', '?')}    "
               f"stop reason {a.get('stop_reason') or '-'}    {info.get('history_length', len(hist))} history records"))
    if info["config"]:
        _out(f"  config       {_kv(info['config'])}")
    if info.get("adam_state"):
        _out(f"  optimizer    Adam's state after {info['adam_state']['t']:.0f} steps: "
             "--resume continues as one run would")
    if info["metrics"]:
        _out(f"  metrics      {_kv(info['metrics'])}")
    for key, label in (("provenance", "data"), ("provenance_test", "test data")):
        if info.get(key):
            _out(f"  {label:<12} {_kv(info[key])}")
    if info["software"]:
        _out(f"  software     {_kv(info['software'])}")
    vocab = info["vocabulary"]
    if vocab is not None:
        shown = " ".join(_safe(v) for v in vocab[:40]) + (" ..." if len(vocab) > 40 else "")
        _out(f"  vocabulary   ({len(vocab)}) {shown}")
    tags = info.get("tag_vocabulary")
    if tags is not None:
        _out(f"  gold tags    ({len(tags)}) " + " ".join(_safe(t) for t in tags[:60])
             + (" ..." if len(tags) > 60 else ""))
    _out("  arrays       " + _kv({k: "x".join(map(str, _shape(v))) or "scalar" for k, v in info["arrays"].items()}))
    if hist:
        cols = [c for c in ("step", "phase", "loss", "train_ll", "test_ll", "mad") if any(c in r for r in hist)]
        total = info.get("history_length", len(hist))
        rows = hist if args.history else (hist[:3] + ([None] if total > 6 else []) + hist[-3:]
                                          if len(hist) > 6 or total > 6 else hist)
        _out("  history      " + "  ".join(f"{c:>12}" for c in cols))
        for r in rows:
            if r is None:
                _out("               " + "  ".join(f"{'...':>12}" for _ in cols))
                continue
            _out("               " + "  ".join(f"{_short(r.get(c)) if r.get(c) is not None else '-':>12}"
                                              for c in cols))
    if args.arrays:
        with np.printoptions(precision=6, suppress=True, linewidth=160, threshold=100000):
            for k, v in info["arrays"].items():
                _out(f"  {k}:")
                for line in str(v).splitlines():
                    _out("    " + line)


# ---------------------------------------------------------------- sample
def cmd_sample(args) -> int:
    if args.n_sequences < 1:
        raise UserError(f"-n must be >= 1, got {args.n_sequences}")
    if args.length < 1:
        raise UserError(f"--length must be >= 1, got {args.length}")
    _check_memory(24.0 * args.n_sequences * args.length,
                  f"sampling {args.n_sequences} sequences of length {args.length}")
    model = _load_model(args.model_file, args.name)
    obs, states = model.sample(args.n_sequences, args.length, seed=args.seed)
    vocab = [_token(v) for v in model.vocabulary] if model.vocabulary else [str(i) for i in range(model.n_symbols)]
    sep = args.sep
    if sep is None:
        sep = "" if all(len(s) == 1 for s in vocab) else " "
    name = _tty_safe(getattr(model, "model_name_", None) or "model")
    for i, (o, s) in enumerate(zip(obs, states)):
        text = sep.join(vocab[int(k)] for k in o)
        if args.fasta:
            _out(f">sample_{i + 1} model={name} seed={args.seed} length={len(o)}")
            for j in range(0, len(text), 60) if sep == "" else [0]:
                _out(text[j:j + 60] if sep == "" else text)
        else:
            _out(text)
        if args.states:
            _out(("; states " if args.fasta else "") + " ".join(str(int(k)) for k in s))
    return EXIT_OK


# ---------------------------------------------------------------- decode
def cmd_decode(args) -> int:
    from .. import metrics as met
    model = _load_model(args.model_file, args.name)
    seqs, corpus, data = _load_eval_data(args, model)
    paths, logprobs = model.decode(seqs)
    vocab = [_token(v) for v in model.vocabulary] if model.vocabulary else [str(i) for i in range(model.n_symbols)]
    ids = getattr(corpus, "names", None)
    if ids is not None and len(ids) != len(seqs):
        ids = None
    words = data.observes_words
    tagged = corpus.has_tags
    header = ["index"] + (["id"] if ids is not None else []) + ["length", "log_prob", "states"]
    if args.symbols:
        header.append("symbols")
    if words:
        header.append("words")
    if tagged:
        header += ["gold_tags", "mapped_tags"]
        tags = [_token(t) for t in corpus.tag_vocabulary]
        mapping = _tagging(met, model, paths, corpus)["mapping"]
    _out("\t".join(header))
    for i, (s, p, lp) in enumerate(zip(seqs, paths, logprobs)):
        row = ([str(i)] + ([_tty_safe(ids[i])] if ids is not None else [])
               + [str(len(s)), repr(float(lp)), " ".join(str(int(k)) for k in p)])
        if args.symbols:
            row.append(" ".join(vocab[int(k)] for k in s))
        if words:
            row.append(" ".join(_token(w) for w in data.decode(data.sequences[i])))
        if tagged:
            row.append(" ".join(tags[int(t)] if t >= 0 else "_" for t in corpus.tags[i]))
            row.append(" ".join(tags[int(mapping[int(k)])] if mapping[int(k)] >= 0 else "_" for k in p))
        _out("\t".join(row))
    return EXIT_OK


# ---------------------------------------------------------------- export
def cmd_export(args) -> int:
    from ..export import export_csv
    if not args.target.strip():
        raise UserError("OUT is empty: give a folder, or a file name ending in .zip")
    written = export_csv(args.model_file, args.target, name=args.name)
    _out(f"wrote {len(written)} CSV file(s) to {args.target}")   # the result, also with --quiet
    return EXIT_OK
