"""Every `psedual` command but `analyze` (`analysis.cli`, generated the same way from
`analysis.options`): its options are a typed config's fields.

jsonargparse builds each parser from the dataclasses themselves: one option per field, named by
the sweep files' dotted keys (`--lr`, `--data.fold`, `--model.hidden_size`, `--psedual.fusion`,
`--variant`), its help the field's docstring, its choices the field's Literal type (so the
registries' names), nested groups from nested configs, and `--config FILE.yaml` (flat dotted
keys or nested mappings) with command-line overrides after it; `--print_config` writes one.
A bool field's option alone is a flag (`--reexamine` = `--reexamine true`): see `flags`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path

from jsonargparse import ArgumentParser, Namespace, set_parsing_settings

# The help of each option is the docstring under its field.
set_parsing_settings(docstring_parse_attribute_docstrings=True)


@dataclass(frozen=True)
class Command:
    """A generated command: its one-line help, its parser and what it runs."""

    help: str
    parser: Callable[[], ArgumentParser]
    run: Callable[[Namespace], int | None]
    defaults: Callable[[Namespace], dict] | None = None
    """Defaults that depend on what was parsed (`train --recipe`): given, the command line is parsed
    again over them, so that its options and `--config` override them."""


def _parser(command: str, description: str) -> ArgumentParser:
    parser = ArgumentParser(prog=f"psedual {command}", description=description, exit_on_error=False,
                            default_env=False)
    parser.add_argument("--config", action="config", help="a YAML file of options (the same keys, dotted or "
                        "nested); options after it override it")
    return parser


def _build(cls, cfg: Namespace):
    """The config `cls` of a parsed command's options (a list option as the field's tuple)."""
    return cls(**{f.name: tuple(cfg[f.name]) if isinstance(cfg[f.name], list) else cfg[f.name] for f in fields(cls)})


def _config_parser(command: str, cls, positional: dict[str, tuple[str | None, str]]) -> ArgumentParser:
    """A command's parser: `positional` fields (name → (nargs, help)) as arguments, the others as options."""
    p = _parser(command, (cls.__doc__ or "").strip())
    for name, (nargs, text) in positional.items():
        if nargs:
            action = p.add_argument(name, nargs=nargs, help=text, **({"default": []} if nargs == "*" else {}))
            # the help says the effective default; jsonargparse's own `(default: [])` (the empty list that
            # stands for it) would be a second, wrong one: the help is taken as written
            action._jsonargparse_preexpanded_help = nargs == "*"
        else:
            p.add_argument(name, help=text)
    p.add_class_arguments(cls, nested_key=None, skip=set(positional), fail_untyped=True)
    return p


def _flatten(values: dict, prefix: str = "") -> dict:
    out: dict = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# ---- train -----------------------------------------------------------------------------------

def _train_parser() -> ArgumentParser:
    from psedual.reexamine.config import BASE, EXPRESSION_ENCODERS, PseDualConfig, Variant
    from psedual.train.config import TrainConfig

    p = _parser("train", "Train one solver; test the checkpoint of the best validation epoch once.")
    p.add_class_arguments(TrainConfig, nested_key=None, skip={"psedual"}, fail_untyped=True)
    # Unset (null) the fold is the dataset's first for a cross-validated one (MAWPS fold 0, TrainConfig's
    # default) and none for a fixed-split one, so `--data.dataset math23k` needs no `--data.fold null`
    # and a `--print_config` file (`fold: null`) loads back: `_train_config`.
    p.set_defaults({"data.fold": None})
    encoders = "; ".join(f"`{name}`: PseDual reading the solver's expressions with {entry.about}"
                         for name, entry in EXPRESSION_ENCODERS.items())
    p.add_argument("--variant", type=Variant, default=BASE,
                   help=f"`{BASE}`: the solver alone; {encoders}. The psedual.* options need one of the latter.")
    p.add_class_arguments(PseDualConfig, nested_key="psedual", skip={"expression_encoder"}, fail_untyped=True)
    p.add_argument("--out", required=True, help="run folder: checkpoints, epochs/predictions/metrics Parquet")
    p.add_argument("--resume", action="store_true", help="continue from OUT/last.pt")
    from psedual.train.recipes import RecipeName

    p.add_argument("--recipe", type=RecipeName | None, default=None,
                   help="train this solver at its published recipe (docs/solvers.md's table: optimiser, schedule, "
                   "epochs, batch, beam, sizes, and the encoder the data set's language takes); the options given "
                   "beside it override it")
    from psedual.train.trackers import SINGLE_RUN, TRACKERS

    p.add_argument("--loggers", nargs="+", choices=SINGLE_RUN, default=[],
                   help="trackers to log the config and every epoch's metrics to: " +
                   "; ".join(f"`{name}`: {TRACKERS[name].about}" for name in SINGLE_RUN))
    return p


def _train_config(cfg: Namespace):
    """The TrainConfig of a parsed `train` command, built as a sweep builds a trial's."""
    from psedual.reexamine.config import BASE, EXPRESSION_ENCODERS, PseDualConfig
    from psedual.train.config import TrainConfig

    from psedual.data.registry import get_spec

    flat = _flatten(cfg.as_dict())
    if cfg.recipe is not None and flat["solver"] != cfg.recipe:
        raise ValueError(f"--recipe {cfg.recipe} trains {cfg.recipe}; --solver {flat['solver']} contradicts it")
    for key in ("config", "out", "resume", "loggers", "recipe", "__path__"):
        flat.pop(key, None)
    if flat.get("data.fold") is None and get_spec(flat["data.dataset"]).folds:
        flat["data.fold"] = 0
    defaults = PseDualConfig()
    psedual = {k: v for k, v in flat.items() if k.startswith("psedual.")}
    if flat["variant"] == BASE:
        changed = [k for k, v in psedual.items() if v != getattr(defaults, k.split(".", 1)[1])]
        if changed:
            raise ValueError(f"--{', --'.join(changed)} set PseDual's knobs: they need "
                             f"--variant {'|'.join(EXPRESSION_ENCODERS)}")
        flat = {k: v for k, v in flat.items() if k not in psedual}
    return TrainConfig.from_flat(flat)


def _recipe_defaults(cfg: Namespace) -> dict:
    """`--recipe SOLVER`: the solver's published recipe on the parsed data set (`train.recipes`)."""
    if cfg.recipe is None:
        return {}
    from psedual.train.recipes import get_recipe

    return get_recipe(cfg.recipe).flat(cfg.data.dataset)


def _run_train(cfg: Namespace) -> None:
    from psedual.results.records import values
    from psedual.train.trackers import RunTrackers
    from psedual.train.trainer import train

    config = _train_config(cfg)
    # every field, and the arm as sweeps and the runs table name it
    params = {**config.flat(), "variant": config.variant}
    trackers = RunTrackers(tuple(cfg.loggers), params, Path(cfg.out)) if cfg.loggers else None
    failed = True
    try:
        result = train(config, cfg.out, resume=cfg.resume, on_epoch=trackers.on_epoch if trackers else None)
        if trackers is not None:
            trackers.on_test(values(result), Path(cfg.out))
        failed = False
    finally:
        if trackers is not None:
            trackers.close(failed)
    from psedual.results.records import result_line

    print(result_line(result, config.psedual.control if config.psedual is not None else None))


# ---- tune ------------------------------------------------------------------------------------

def _tune_parser() -> ArgumentParser:
    from psedual.job import GROUPS, TuneJob

    p = _parser("tune", "The main job: a sweep on Ray Tune (Optuna/ASHA or a grid), then each trial's "
                "chosen checkpoint tested once; the runs table printed. Runs again and again: each run is "
                "a new experiment unless --resume names one.")
    # a group's options flat, as the job has always taken them (`--calibrate_steps`)
    p.add_class_arguments(TuneJob, nested_key=None, skip=set(GROUPS), fail_untyped=True)
    for group in GROUPS.values():
        p.add_class_arguments(group, nested_key=None, fail_untyped=True)
    return p


def _run_tune(cfg: Namespace) -> int:
    from psedual.job import OPTIONS, TuneJob, run_job
    from psedual.paper_job import run_paper
    from psedual.tune.paper import is_paper_file

    from psedual.sweeps import find

    job = TuneJob.of(**{name: cfg[name] for name in OPTIONS})
    job = replace(job, space=str(find(job.space)))  # a shipped file where the path is not here (a pip install)
    return run_paper(job) if is_paper_file(job.space) else run_job(job)


# ---- llm -------------------------------------------------------------------------------------

def _llm_parser() -> ArgumentParser:
    from psedual.extras import require
    from psedual.llm.run import LLMConfig

    # before the options are parsed (their checks look for the data): one line naming the extra
    require("openai", "llm", "`psedual llm`")

    p = _parser("llm", "A chat model (OpenAI-compatible endpoint) solves a test split zero-shot, optionally "
                "reexamining its own solutions.")
    p.add_class_arguments(LLMConfig, nested_key=None, fail_untyped=True)
    p.add_argument("--out", required=True, help="run folder: predictions/metrics Parquet and the reply cache "
                   "(rerun with the same folder to resume: answered requests are not sent again)")
    return p


def _run_llm(cfg: Namespace) -> None:
    from psedual.llm.client import LLMError
    from psedual.llm.run import LLMConfig, run

    config = _build(LLMConfig, cfg)
    try:
        m = run(config, cfg.out, progress=sys.stderr.isatty())
    except LLMError as err:
        raise ValueError(str(err)) from None
    print(f"{m['variant']} {m['llm.model']} on {m['data.dataset']}: value {100 * m['test_value_acc']:.2f}% expr "
          f"{100 * m['test_expr_acc']:.2f}% over {m['n_test']} problems; {m['llm.failures']} unusable replies; "
          f"reexamination changed {m['llm.changed']} answers ({m['llm.changed_to_right']} to right, "
          f"{m['llm.changed_to_wrong']} to wrong); {m['llm.calls']} calls, {m['llm.cache_hits']} from the cache, "
          f"{m['llm.prompt_tokens']}+{m['llm.completion_tokens']} tokens; {m['test_seconds']:.1f} s | {cfg.out}")


# ---- data fetch ------------------------------------------------------------------------------

def _fetch_parser() -> ArgumentParser:
    from psedual.data.fetch import FetchConfig
    from psedual.data.manifest import MANIFEST

    p = _parser("data fetch", "Download benchmarks from their public sources, pinned by commit, each file checked "
                "against its SHA256 (psedual/data/manifest.tsv) and renamed into place only then.")
    p.add_argument("datasets", nargs="*", default=[],
                   help=f"any of {', '.join(MANIFEST)} (default: all; MathQA's training file is yours to bring)")
    p.add_class_arguments(FetchConfig, nested_key=None, skip={"datasets"}, fail_untyped=True)
    p.add_argument("--sums", action="store_true", help="print `SHA256  path` lines (sha256sum -c form) and exit")
    p.add_argument("--urls", action="store_true", help="print `URL  path` lines and exit")
    return p


def _run_fetch(cfg: Namespace) -> None:
    from psedual.data.fetch import FetchConfig, fetch, listing

    config = _build(FetchConfig, cfg)
    if cfg.sums or cfg.urls:
        print("\n".join(listing(config, "sums" if cfg.sums else "urls")))
        return
    fetch(config)


# ---- data stats, results add, test, solve -----------------------------------------------------

def _stats_parser() -> ArgumentParser:
    from psedual.data.registry import DATASETS
    from psedual.data.stats import DEFAULT_STATS, StatsConfig

    return _config_parser("data stats", StatsConfig, {"datasets": (
        "*", f"any of {', '.join(DATASETS)} (default: {' '.join(DEFAULT_STATS)})")})


def _run_stats(cfg: Namespace) -> None:
    from psedual.data.registry import DATASETS
    from psedual.data.stats import DEFAULT_STATS, StatsConfig, stats

    unknown = [name for name in cfg.datasets if name not in DATASETS]
    if unknown:
        raise ValueError(f"unknown dataset {', '.join(unknown)}; valid: {', '.join(DATASETS)}")
    c = _build(StatsConfig, cfg)
    print(stats(list(c.datasets or DEFAULT_STATS), data_root=c.data_root, user_path=c.user_path,
                use_cache=not c.no_cache, min_constant_count=c.min_constant_count,
                drop_inconsistent=c.drop_inconsistent))


def _add_parser() -> ArgumentParser:
    from psedual.results.collect import AddConfig

    return _config_parser("results add", AddConfig, {"folders": ("+", "run folders (trial id: the folder's name)")})


def _run_add(cfg: Namespace) -> None:
    from psedual.results.collect import AddConfig, add_run_folders

    c = _build(AddConfig, cfg)
    runs = add_run_folders(list(c.folders), c.root, c.experiment)
    for r in runs.iter_rows(named=True):
        what = (f"{r['variant']} ({r['llm.model']}, prompts {r['llm.prompt_version']})" if r["llm.model"] else
                f"{r['solver']} {r['variant']} fusion {r['psedual.fusion']} seed {r['seed']}")
        print(f"{c.experiment}/{r['trial']}: {what}: test value {100 * r['test_value_acc']:.2f}%, "
              f"{r['epochs_done']} epochs")
    print(f"{runs.height} run(s) in {c.root}/{{runs,epochs,predictions}}/experiment={c.experiment}/")


def _test_parser() -> ArgumentParser:
    from psedual.train.test import TestConfig

    return _config_parser("test", TestConfig, {"run_dir": (None, "the folder `psedual train --out` wrote")})


def _run_test(cfg: Namespace) -> None:
    from psedual.train.test import TestConfig, test_run

    c = _build(TestConfig, cfg)
    from psedual.results.records import result_line

    tested = test_run(c.run_dir, c.device, c.allow_changed_data)
    print(result_line(tested.result, tested.config.psedual.control if tested.config.psedual is not None else None))


def _solve_parser() -> ArgumentParser:
    from psedual.train.solve import SolveConfig

    return _config_parser("solve", SolveConfig, {"text": (None, "the problem, as plain text")})


def _run_solve(cfg: Namespace) -> None:
    from psedual.train.solve import SolveConfig, checkpoint_file, solve

    c = _build(SolveConfig, cfg)
    path = checkpoint_file(c.checkpoint)
    if str(path) != c.checkpoint:  # on stderr: stdout is the answer alone
        print(f"psedual solve: {c.checkpoint} is a run folder: solving with its {path}", file=sys.stderr)
    infix, answer = solve(path, c.text, beam_size=c.beam_size)
    print(f"{infix} = {answer}")


def _sweeps_parser() -> ArgumentParser:
    from psedual.sweeps import SweepsConfig

    return _config_parser("sweeps", SweepsConfig, {"name": ("?", "a shipped sweep file to copy out; none: list them")})


def _run_sweeps(cfg: Namespace) -> None:
    from psedual.sweeps import SweepsConfig, run

    print("\n".join(run(_build(SweepsConfig, cfg))))


COMMANDS: dict[tuple[str, ...], Command] = {
    ("data", "fetch"): Command("download the benchmarks, pinned by commit, SHA256-checked", _fetch_parser,
                               _run_fetch),
    ("data", "stats"): Command("per dataset and split: kept, dropped by reason, sizes, constants", _stats_parser,
                               _run_stats),
    ("train",): Command("train one solver; test the best validation checkpoint once", _train_parser, _run_train,
                        _recipe_defaults),
    ("tune",): Command("the main job: a sweep on Ray Tune, then tests and the runs table (as tune.py)",
                       _tune_parser, _run_tune),
    ("llm",): Command("a chat model (OpenAI-compatible endpoint) solves a test split zero-shot",
                      _llm_parser, _run_llm),
    ("results", "add"): Command("add finished `psedual train`/`psedual llm` run folders to the result tables as "
                                "the trials of one experiment (then `psedual analyze` compares them)",
                                _add_parser, _run_add),
    ("test",): Command("test a trained run folder's best checkpoint (again), without training: finishes a run "
                       "whose test step failed", _test_parser, _run_test),
    ("solve",): Command("solve one problem with a trained checkpoint", _solve_parser, _run_solve),
    ("sweeps",): Command("the sweep files that ship with psedual: list them, or copy one out to edit",
                         _sweeps_parser, _run_sweeps),
}


_BOOLEAN_WORDS = {"true", "false", "yes", "no"}


def _is_flag(action: object) -> bool:
    """A bool field's option, which may stand alone (`--reexamine` = `--reexamine true`)."""
    return getattr(action, "_typehint", None) is bool or getattr(action, "nargs", None) == 0


def flags(argv: list[str], options: dict) -> list[str]:
    """A bool field's option alone as a flag: `--reexamine` → `--reexamine true` (jsonargparse
    wants the value). `options` maps option strings to the parser's actions."""
    out: list[str] = []
    for i, token in enumerate(argv):
        following = argv[i + 1] if i + 1 < len(argv) else None
        action = options.get(token)
        out.append(token)
        if token.startswith("--") and action is not None and _is_flag(action) and action.nargs != 0 \
                and (following is None or following.lower() not in _BOOLEAN_WORDS):
            out.append("true")
    return out


def find(argv: list[str]) -> tuple[tuple[str, ...], Command] | None:
    """The generated command that argv starts with, if any."""
    for words, command in COMMANDS.items():
        if tuple(argv[:len(words)]) == words:
            return words, command
    return None
