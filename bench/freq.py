"""Corpus counting speed: DuckDB streaming counter vs a pure-Python ``re`` loop, side by side.

Generates a plain-text corpus (default 500 MB) of English-like lines full of numbers in every
form the rule must handle (integers, decimals, years, thousands separators, long digit runs,
ordinals, sentence-final numbers, Unicode punctuation), then runs each measurement in its own
subprocess (so each reports its own peak memory):

- magdash: :func:`magdash.frequency.count_corpus` with ``--threads`` DuckDB threads (default 2);
- python-re: the paper's regex with ``finditer`` over each line, one process;
- with ``--extras``: magdash with --words --sentence-final, and on a gzip copy.

MB/s is wall-clock throughput; MB per CPU-second is also printed because it does not depend on
other load on the machine. The counter on a fifth of the corpus is also run, to show that its peak memory does not grow
with corpus size. Counts from magdash and the Python loop must be identical.

    .venv/bin/python bench/freq.py                 # 500 MB in a temp dir
    .venv/bin/python bench/freq.py --size-mb 100 --extras
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
PAPER = re.compile(r"(?<![.\d])(\b\d{1,4}\b)(?![.\d])")
_WORD_TEXT = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an "
    "they you were her she there been one all we their has would when if so no will more can who its said two "
    "about also them time into only some could new first than other out after over years may these café naïve "
    "“quoted” — rôle Zürich twenty-one hundred"
)
WORDS = _WORD_TEXT.split(" ")


def _number(rng: np.random.Generator) -> str:
    kind = rng.random()
    if kind < 0.45:
        return str(int(rng.zipf(1.3)) % 2000)
    if kind < 0.60:
        return f"{rng.integers(0, 100)}.{rng.integers(0, 100)}"
    if kind < 0.70:
        return str(int(rng.integers(1900, 2030)))
    if kind < 0.80:
        return f"{rng.integers(1, 999)},{rng.integers(100, 999)}"
    if kind < 0.90:
        return str(int(rng.integers(0, 10**7)))
    return str(int(rng.integers(1, 40))) + str(rng.choice(["st", "nd", "rd", "th", "%", "."]))


def generate(path: Path, size_mb: float, seed: int = 0) -> int:
    """Write about ``size_mb`` MB: 20,000 distinct lines in random order, repeated."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(20_000):
        tokens = [_number(rng) if rng.random() < 0.08 else WORDS[rng.integers(len(WORDS))]
                  for _ in range(int(rng.integers(20, 160)))]
        lines.append((" ".join(tokens) + ".\n").encode("utf-8"))
    target = int(size_mb * 1e6)
    written = 0
    with open(path, "wb") as handle:
        while written < target:
            block = b"".join(lines[i] for i in rng.permutation(len(lines)))
            handle.write(block)
            written += len(block)
    return written


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child_magdash(path: str, threads: int, words: bool) -> dict:
    sys.path.insert(0, str(REPO))
    from magdash.frequency import CountOptions, count_corpus

    started, cpu = time.perf_counter(), _cpu_seconds()
    result = count_corpus(path, CountOptions(words=words, sentence_final=words), threads=threads)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "cpu_seconds": _cpu_seconds() - cpu, "documents": result.documents,
            "numbers_seen": result.numbers_seen, "counts": result.counts["count"].tolist(),
            "peak_rss_mb": _peak_rss_mb()}


def child_python(path: str) -> dict:
    started, cpu = time.perf_counter(), _cpu_seconds()
    counts: Counter[int] = Counter()
    documents = seen = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                documents += 1
            for match in PAPER.finditer(line):
                seen += 1
                value = int(match.group(1))
                if 1 <= value <= 1000:
                    counts[value] += 1
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "cpu_seconds": _cpu_seconds() - cpu, "documents": documents, "numbers_seen": seen,
            "counts": [counts.get(n, 0) for n in range(1, 1001)], "peak_rss_mb": _peak_rss_mb()}


def run_child(*args: str) -> dict:
    output = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=True)
    return json.loads(output.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--extras", action="store_true", help="also time --words --sentence-final and gzip input")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, path, *rest = args.child
        result = child_python(path) if kind == "python" else child_magdash(path, int(rest[0]), rest[1] == "words")
        print(json.dumps(result))
        return

    folder = Path(tempfile.mkdtemp(prefix="magdash-bench-freq-"))
    try:
        corpus = folder / "corpus.txt"
        started = time.perf_counter()
        size = generate(corpus, args.size_mb)
        print(f"generated {size / 1e6:.0f} MB in {time.perf_counter() - started:.0f} s: {corpus}")
        fifth = folder / "fifth.txt"
        with open(corpus, "rb") as source, open(fifth, "wb") as target:
            target.write(source.read(size // 5))
            target.write(source.readline())
        runs = [
            ("magdash (paper rule)", size, run_child("magdash", str(corpus), str(args.threads), "digits")),
            ("magdash, 1/5 corpus", fifth.stat().st_size, run_child("magdash", str(fifth), str(args.threads), "digits")),
            ("python re loop", size, run_child("python", str(corpus))),
        ]
        if args.extras:
            runs.append(("magdash --words --sentence-final", size,
                         run_child("magdash", str(corpus), str(args.threads), "words")))
            compressed = folder / "corpus.txt.gz"
            with open(corpus, "rb") as source, gzip.open(compressed, "wb", compresslevel=1) as target:
                shutil.copyfileobj(source, target, 1 << 24)
            runs.append(("magdash gzip input (MB of text)", size,
                         run_child("magdash", str(compressed), str(args.threads), "digits")))
        # MB per CPU-second does not depend on what else the machine runs; MB/s (wall) does.
        print(f"{'run':36s} {'MB':>7s} {'seconds':>8s} {'MB/s':>7s} {'MB/cpu-s':>9s} {'peak RSS MB':>12s}")
        for label, nbytes, result in runs:
            print(f"{label:36s} {nbytes / 1e6:7.0f} {result['seconds']:8.2f} {nbytes / 1e6 / result['seconds']:7.1f} "
                  f"{nbytes / 1e6 / result['cpu_seconds']:9.1f} {result['peak_rss_mb']:12.0f}")
        ours, python = runs[0][2], runs[2][2]
        print(f"speed-up over the Python loop: {python['seconds'] / ours['seconds']:.1f}x "
              f"(DuckDB threads: {args.threads})")
        identical = ours["counts"] == python["counts"] and ours["numbers_seen"] == python["numbers_seen"] \
            and ours["documents"] == python["documents"]
        print(f"counts identical to the Python loop: {identical} "
              f"({ours['documents']:,} documents, {ours['numbers_seen']:,} numbers, {sum(ours['counts']):,} in 1..1000)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
