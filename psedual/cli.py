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


def _train(args: argparse.Namespace) -> None:
    from psedual.data.config import DataConfig
    from psedual.reexamine.config import PseDualConfig
    from psedual.solvers.config import SolverConfig
    from psedual.train.config import TrainConfig
    from psedual.train.trainer import train

    model = SolverConfig(**{k: getattr(args, k) for k in _MODEL_FIELDS})
    given = {k: getattr(args, k) for k in _PSEDUAL_FIELDS if getattr(args, k) is not None}
    if args.psedual is None and given:
        raise ValueError(f"--{', --'.join(k.replace('_', '-') for k in given)} need --psedual gru|gcn")
    psedual = PseDualConfig(expression_encoder=args.psedual, **given) if args.psedual else None
    data = DataConfig(args.dataset, fold=args.fold, data_root=args.data_root, user_path=args.user_path,
                      train_size=args.train_size)
    config = TrainConfig(data, model=model, psedual=psedual, **{k: getattr(args, k) for k in _TRAIN_FIELDS})
    result = train(config, args.out, resume=args.resume)
    print(summary(result))


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def summary(result) -> str:
    """One line of a run's result: accuracies (both expression definitions), infilling (all and
    used slots), the final ε and τ, training time."""
    line = (f"best epoch {result.best_epoch}: valid value {_percent(result.valid_value_acc)} "
            f"expr {_percent(result.valid_expr_acc)} | test value {_percent(result.test_value_acc)} "
            f"expr {_percent(result.test_expr_acc)} (by values {_percent(result.test_expr_acc_values)})")
    if result.final_epsilon is not None:
        tau = "unused" if result.final_tau is None else f"{result.final_tau:.4g}"
        line += (f" | infilling {_percent(result.test_infill_acc)} perfect match {_percent(result.test_perfect_match)}"
                 f" (used slots {_percent(result.test_infill_acc_used)} / {_percent(result.test_perfect_match_used)})"
                 f" | final ε {result.final_epsilon:.4g} τ {tau}")
    return f"{line} | {result.train_seconds:.0f} s training | {result.out_dir}"


def _results_add(args: argparse.Namespace) -> None:
    from psedual.results.collect import add_run_folders

    runs = add_run_folders(args.folders, args.root, args.experiment)
    for r in runs.iter_rows(named=True):
        what = (f"{r['variant']} ({r['llm.model']}, prompts {r['llm.prompt_version']})" if r["llm.model"] else
                f"{r['solver']} {r['variant']} fusion {r['psedual.fusion']} seed {r['seed']}")
        print(f"{args.experiment}/{r['trial']}: {what}: test value {100 * r['test_value_acc']:.2f}%, "
              f"{r['epochs_done']} epochs")
    print(f"{runs.height} run(s) in {args.root}/{{runs,epochs,predictions}}/experiment={args.experiment}/")


def _llm(args: argparse.Namespace) -> None:
    from psedual.llm.client import LLMError
    from psedual.llm.run import LLMConfig, run

    config = LLMConfig(**{k: getattr(args, k) for k in ("model", "base_url", "dataset", "fold", "api_key_env",
                                                         "reexamine", "rounds", "samples", "temperature", "limit",
                                                         "concurrency", "timeout", "max_retries")})
    try:
        m = run(config, args.out, progress=sys.stderr.isatty())
    except LLMError as err:
        raise ValueError(str(err)) from None
    print(f"{m['variant']} {m['llm.model']} on {m['data.dataset']}: value {100 * m['test_value_acc']:.2f}% expr "
          f"{100 * m['test_expr_acc']:.2f}% over {m['n_test']} problems; {m['failures']} unusable replies; "
          f"reexamination changed {m['changed']} answers ({m['changed_to_right']} to right, {m['changed_to_wrong']} "
          f"to wrong); {m['calls']} calls, {m['cache_hits']} from the cache, {m['prompt_tokens']}+"
          f"{m['completion_tokens']} tokens; {m['seconds']:.1f} s | {args.out}")


def _solve(args: argparse.Namespace) -> None:
    from psedual.train.solve import solve

    infix, answer = solve(args.checkpoint, args.text, beam_size=args.beam_size)
    print(f"{infix} = {answer}")


# TrainConfig and SolverConfig fields settable from the command line, with their types.
_TRAIN_FIELDS = {"solver": str, "epochs": int, "batch_size": int, "lr": float, "weight_decay": float,
                 "lr_step": int, "lr_gamma": float, "min_word_count": int, "beam_size": int, "seed": int,
                 "threads": int, "device": str, "precision": str, "lr_schedule": str, "warmup_fraction": float,
                 "plm_lr": float, "plm_weight_decay": float, "clip_grad_norm": float}
_MODEL_FIELDS = {"embedding_size": int, "hidden_size": int, "layers": int, "dropout": float, "plm": str,
                 "plm_layers": int, "plm_hidden": int}
_PSEDUAL_FIELDS = {"fusion": str, "epsilon_schedule": str, "epsilon0": float, "epsilon_final": float,
                   "epsilon_decay": float, "epsilon_hold_epochs": int, "epsilon_epoch_decay": float,
                   "tau_schedule": str, "tau0": float, "tau_final": float, "tau_reset": str, "tau_min": float,
                   "tau_rate": float, "tau_interval": int, "qp_gradient": str, "alpha": float,
                   "problem_encoder": str, "token_embedding_size": int, "max_length_factor": int}


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

    from psedual.solvers.config import SolverConfig
    from psedual.train.config import TrainConfig

    defaults = TrainConfig()
    model_defaults = SolverConfig()
    tr = commands.add_parser("train", help="train one solver; test the best validation checkpoint once")
    tr.add_argument("--dataset", default="mawps", choices=list(DATASETS))
    tr.add_argument("--fold", type=int, help="test fold of a cross-validated dataset (mawps: 0-4)")
    tr.add_argument("--data-root")
    tr.add_argument("--user-path")
    tr.add_argument("--train-size", type=int, help="train on a nested seeded subset of this size")
    for fields, source in ((_TRAIN_FIELDS, defaults), (_MODEL_FIELDS, model_defaults)):
        for name, kind in fields.items():
            tr.add_argument(f"--{name.replace('_', '-')}", type=kind, default=getattr(source, name),
                            help=f"default {getattr(source, name)}")
    from psedual.reexamine.config import EXPRESSION_ENCODERS, PseDualConfig

    ps = tr.add_argument_group("PseDual (reexamining module; needs --psedual)")
    ps.add_argument("--psedual", choices=EXPRESSION_ENCODERS, help="train with the reexamining module, reading "
                    "expressions with this encoder (default: the solver alone)")
    for name, kind in _PSEDUAL_FIELDS.items():
        ps.add_argument(f"--{name.replace('_', '-')}", type=kind, help=f"default {getattr(PseDualConfig(), name)}")
    tr.add_argument("--out", required=True, help="run folder: checkpoints, epochs/predictions/metrics Parquet")
    tr.add_argument("--resume", action="store_true", help="continue from OUT/last.pt")
    tr.set_defaults(run=_train)

    results = commands.add_parser("results", help="the result tables").add_subparsers(dest="results_command",
                                                                                       required=True)
    ra = results.add_parser("add", help="add finished `psedual train` run folders to the result tables as the "
                            "trials of one experiment (then `psedual analyze` compares them)")
    ra.add_argument("folders", nargs="+", metavar="RUN_DIR", help="run folders (trial id: the folder's name)")
    ra.add_argument("--experiment", required=True, help="experiment name in the tables")
    ra.add_argument("--root", default="results", help="results storage: folder or URI (default ./results)")
    ra.set_defaults(run=_results_add)

    ll = commands.add_parser("llm", help="a chat model (OpenAI-compatible endpoint) solves a test split zero-shot, "
                             "optionally reexamining its own solutions")
    ll.add_argument("--dataset", default="svamp", choices=list(DATASETS))
    ll.add_argument("--fold", type=int, help="test fold of a cross-validated dataset (mawps: 0-4)")
    ll.add_argument("--model", required=True, help="the endpoint's model name")
    ll.add_argument("--base-url", required=True, help="e.g. https://api.openai.com/v1, http://localhost:8000/v1 (vLLM), "
                    "http://localhost:11434/v1 (Ollama)")
    ll.add_argument("--api-key-env", default="OPENAI_API_KEY",
                    help="environment variable holding the API key (default OPENAI_API_KEY; never printed or stored)")
    ll.add_argument("--reexamine", action="store_true", help="reexamine each solution (see psedual/llm/run.py)")
    ll.add_argument("--rounds", type=int, default=1, help="re-solves of a solution reexamination rejects (default 1)")
    ll.add_argument("--samples", type=int, default=1, help="candidate solutions to choose among (default 1)")
    ll.add_argument("--temperature", type=float, default=0.0)
    ll.add_argument("--limit", type=int, help="only the first N test problems")
    ll.add_argument("--concurrency", type=int, default=8, help="problems in flight (default 8)")
    ll.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    ll.add_argument("--max-retries", type=int, default=4, help="retries with backoff on 429/5xx/timeouts (default 4)")
    ll.add_argument("--out", required=True, help="run folder: predictions/metrics Parquet and the reply cache "
                    "(rerun with the same folder to resume: answered requests are not sent again)")
    ll.set_defaults(run=_llm)

    so = commands.add_parser("solve", help="solve one problem with a trained checkpoint")
    so.add_argument("--checkpoint", required=True)
    so.add_argument("--beam-size", type=int, default=5)
    so.add_argument("text")
    so.set_defaults(run=_solve)

    from analysis.cli import add_commands  # torch-free: reads the results tables only

    add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    from analysis.cli import ERRORS, one_line

    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except (DataFileError, ValueError, FileNotFoundError) as err:  # checkpoint, vocabulary, guardrail errors too
        print(f"psedual: error: {err}", file=sys.stderr)
        return 2
    except ERRORS as err:  # `analyze` reads tables it did not write: any of these is one line, not a traceback
        if args.command != "analyze":
            raise
        print(f"psedual: error: {one_line(err)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
