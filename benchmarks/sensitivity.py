"""Sensitivity of the Fig. 4 / Fig. 6 ratios to each Decision (docs/reproduction.md).

Run: ``PYTHONPATH=. python benchmarks/sensitivity.py [--seeds N] [--workers J] [--out FILE]``
(``--quick``: 1 seed). Prints the Markdown table of
:func:`benchmarks.lab.sensitivity.sensitivity_table` and writes it
(default ``docs/figures/sensitivity.md``) with the tidy rows beside it
(``sensitivity.csv``; the ``reading`` column names the variant). The runs go
through the batch engine, journaled in ``sensitivity-runs.csv`` beside the
output, so an interrupted run continues with ``--resume``. ``main`` returns the
tidy rows.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchmarks.lab.sensitivity import run_sensitivity, sensitivity_table
from sjfbco.experiments.reproduce import BatchEngine, csv_text
from sjfbco.files import atomic_write_text


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--quick", action="store_true", help="1 seed")
    ap.add_argument("--out", default="docs/figures/sensitivity.md")
    args = ap.parse_args(argv)
    out = Path(args.out)
    rows = run_sensitivity(
        1 if args.quick else args.seeds,
        out=out.with_name("sensitivity-runs.csv"),
        engine=BatchEngine(workers=args.workers, resume=args.resume),
    )
    table = sensitivity_table(rows)
    print(table)
    atomic_write_text(out, table)
    atomic_write_text(out.with_suffix(".csv"), csv_text(rows))
    out.with_name("sensitivity-runs.csv").unlink(missing_ok=True)
    print(f"wrote {out} and {out.with_suffix('.csv')}")
    return {"rows": rows}


if __name__ == "__main__":
    main()
