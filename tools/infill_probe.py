"""Does a trained infiller read the expression, or the quantities' names? (issue 41)

    .venv/bin/python tools/infill_probe.py RUN_DIR [RUN_DIR ...]

For each PseDual run folder (from `psedual train` or a sweep's trial), prints its infilling on the
test split from the gold expression and from the gold scrambled (operators redrawn, leaves
shuffled: the right fillings are unchanged), and the rule with no model ("slot i gets N_i if the
gold uses N_i"), as infilling accuracy over every masked slot / perfect match / accuracy over the
slots the gold uses, in %. An infiller that needs the expression falls when it is scrambled; one
that reads the quantities' names (`--psedual.quantity_keys named`) hardly moves. The last columns
split the gold's score by whether the gold lists its quantities in text order ("first leaf,
first slot" answers those): a gap between them measures how much the infiller leans on leaf order.
"""

from __future__ import annotations

import argparse

from psedual.train.probe import Score, probe_run


def _cell(s: Score) -> str:
    return f"{100 * s.acc:.1f} / {100 * s.pmr:.1f} / {100 * s.acc_used:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="PseDual run folders (each with config.json and best.pt)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scrambles")
    args = parser.parse_args()
    print("| run | quantity keys | test problems | gold | scrambled | no-model rule | in text order (%) | gold, in order | gold, not in order |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for run in args.runs:
        p = probe_run(run, args.seed)
        print(f"| {p.run} | {p.quantity_keys} | {p.n} | {_cell(p.gold)} | {_cell(p.scrambled)} | "
              f"{_cell(p.rule)} | {100 * p.in_text_order:.1f} | {_cell(p.gold_in_order)} | {_cell(p.gold_out_of_order)} |")
    print("(each cell: infilling accuracy over every masked slot / perfect match / accuracy over the used slots, %)")


if __name__ == "__main__":
    main()
