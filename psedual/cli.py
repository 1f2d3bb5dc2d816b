"""The `psedual` command line. Subcommands build typed configs and call the library."""

from __future__ import annotations

import argparse
import sys

from psedual.data.files import DataFileError
from psedual.data.registry import DATASETS

DEFAULT_STATS = ["math23k", "mawps", "mawps-single", "svamp", "mathqa"]


def _data_stats(args: argparse.Namespace) -> None:
    from psedual.data.stats import stats

    names = args.datasets or DEFAULT_STATS
    print(stats(names, data_root=args.data_root, user_path=args.user_path, use_cache=not args.no_cache,
                min_constant_count=args.min_constant_count))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="psedual", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    data = commands.add_parser("data", help="benchmark data").add_subparsers(dest="data_command", required=True)
    st = data.add_parser("stats", help="per dataset and split: kept, dropped by reason, sizes, constants")
    st.add_argument("datasets", nargs="*", choices=[[]] + list(DATASETS), metavar="DATASET",
                    help=f"one or more of {', '.join(DATASETS)} (default: {' '.join(DEFAULT_STATS)})")
    st.add_argument("--data-root", help="benchmark folder (default: $PSEDUAL_DATA or a shared/data nearby)")
    st.add_argument("--user-path", help="MathQA's train.json, or the folder of a jsonl dataset")
    st.add_argument("--no-cache", action="store_true", help="process the sources again, ignoring the Parquet cache")
    st.add_argument("--min-constant-count", type=int, default=5, help="training problems a constant needs (default 5)")
    st.set_defaults(run=_data_stats)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except (DataFileError, ValueError) as err:
        print(f"psedual: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
