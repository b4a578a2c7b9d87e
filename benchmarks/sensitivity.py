"""Sensitivity of the Fig. 4 / Fig. 6 ratios to each Decision (docs/reproduction.md).

Run: ``PYTHONPATH=. python benchmarks/sensitivity.py [--seeds N] [--jobs J] [--out FILE]``.
Prints the Markdown table of :func:`sjfbco.experiments.sensitivity.sensitivity_table`
and writes it (default ``docs/figures/sensitivity.md``) with the tidy rows beside it
(``sensitivity.csv``, one extra ``variant`` column).
"""

from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path

from sjfbco.experiments.reproduce import COLUMNS
from sjfbco.experiments.sensitivity import run_sensitivity, sensitivity_table
from sjfbco.files import atomic_write_text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--out", default="docs/figures/sensitivity.md")
    args = ap.parse_args()
    rows = run_sensitivity(args.seeds, jobs=args.jobs, progress=True)
    table = sensitivity_table(rows)
    print(table)
    out = Path(args.out)
    atomic_write_text(out, table)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["variant", *COLUMNS], lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r[k] for k in ["variant", *COLUMNS]})
    atomic_write_text(out.with_suffix(".csv"), buf.getvalue())
    print(f"wrote {out} and {out.with_suffix('.csv')}")


if __name__ == "__main__":
    main()
