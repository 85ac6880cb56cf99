"""Run one fuzz target under atheris (libFuzzer), coverage-guided, for a bounded time.

``python -m tests.fuzz.run TARGET --seconds N [--out DIR] [--crashes DIR]``

The seed corpus in ``tests/fuzz/corpus/<seed>/`` is read, never written: new inputs go
to ``--out`` (a temporary directory unless given). A crash (an exception other than
``ProtocolError``, an abort, a timeout of one input) writes its input to ``--crashes``
and exits non-zero; ``tests/fuzz/crashes/<target>/`` keeps the ones found so far, which
the test suite replays.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import atheris

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
CRASHES = HERE / "crashes"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("target")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=-1, help="stop after this many inputs")
    parser.add_argument("--out", default="", help="directory for new corpus inputs")
    parser.add_argument("--crashes", default="", help="directory for crash reproducers")
    parser.add_argument("--max-len", type=int, default=16384)
    args = parser.parse_args(argv)

    with atheris.instrument_imports(include=["kafkalite"]):
        from tests.fuzz import targets
    target = targets.TARGETS[args.target]
    out = args.out or tempfile.mkdtemp(prefix=f"fuzz-{args.target}-")
    Path(out).mkdir(parents=True, exist_ok=True)
    crashes = Path(args.crashes or tempfile.mkdtemp(prefix=f"fuzz-{args.target}-crash-"))
    crashes.mkdir(parents=True, exist_ok=True)
    seeds = [str(CORPUS / s) for s in targets.SEEDS[args.target]]
    libfuzzer = [
        sys.argv[0], out, *seeds,
        f"-max_total_time={args.seconds}", f"-runs={args.runs}",
        f"-max_len={args.max_len}", "-timeout=10", "-rss_limit_mb=2048",
        f"-artifact_prefix={crashes}/", "-print_final_stats=1",
    ]
    atheris.Setup(libfuzzer, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
