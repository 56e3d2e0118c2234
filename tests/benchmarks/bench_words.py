"""Benchmark of words mode (issue 14): reading tagged corpora as words with gold tags, and one corpus
from several files, against reading the same file as tags (the issue-4 reader) in the same run.

    .venv/bin/python tests/benchmarks/bench_words.py [--repeats 3] [--data ../shared/data]

Needs the shared data (``pos/ptb_wsj_sample_combined.mrg``, ``pos/brown_all.txt``,
``pos/conll2000_train.txt``); prints CPU seconds (``time.process_time``, median of the repeats),
tokens per CPU second and the ratio to the tags-mode load of the PTB sample, plus the
peak RSS of the process (``ru_maxrss``).  CPU time is reported because the development machine
is shared: its wall-clock time mostly measures the queue for a core.
"""
from __future__ import annotations

import argparse
import pathlib
import resource
import statistics
import time

from densehmm_core.data import load

REPO = pathlib.Path(__file__).resolve().parents[2]


def _cpu(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", default=None, help="the shared data folder (default: ../shared/data)")
    args = ap.parse_args()
    data = pathlib.Path(args.data) if args.data else next(
        (p for p in (REPO.parent / "shared" / "data", REPO.parent.parent / "shared" / "data") if p.is_dir()), None)
    if data is None or not (data / "pos" / "ptb_wsj_sample_combined.mrg").exists():
        raise SystemExit("the shared data are absent (give --data)")
    pos = data / "pos"
    ptb = pos / "ptb_wsj_sample_combined.mrg"
    extra = [pos / "brown_all.txt", pos / "conll2000_train.txt"]

    def lines():
        n = 0
        for f in [ptb, *extra]:
            with open(f, encoding="utf-8") as fh:
                for line in fh:
                    n += len(line.split())
        return n

    cases = [
        ("split() of every line of the 3 files (floor)", lines),
        ("PTB sample as tags (baseline)", lambda: load(ptb)),
        ("PTB sample as words, lower-cased", lambda: load(ptb, observe="words", lowercase=True)),
        ("PTB as words, min_count=2, rare='shape'",
         lambda: load(ptb, observe="words", lowercase=True, min_count=2, rare="shape")),
        ("PTB + Brown + CoNLL-2000 train as words (one vocabulary)",
         lambda: load(ptb, observe="words", lowercase=True, min_count=2, rare="shape", extra=extra)),
    ]
    base = None
    print(f"{'case':62s} {'CPU s':>7s} {'tokens':>10s} {'tok/CPU s':>10s} {'vs tags':>8s}")
    for label, fn in cases:
        sec, out = _cpu(fn, args.repeats)
        tokens = out if isinstance(out, int) else out.n_tokens
        if label.endswith("(baseline)"):
            base = sec / tokens
        ratio = "" if base is None or isinstance(out, int) else f"{(sec / tokens) / base:.2f}x"
        extra_info = "" if isinstance(out, int) else f"  m={out.n_symbols}"
        print(f"{label:62s} {sec:7.2f} {tokens:10d} {tokens / sec:10.0f} {ratio:>8s}{extra_info}")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
