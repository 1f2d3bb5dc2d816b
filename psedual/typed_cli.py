"""The commands whose options are the typed configs' fields: `train`, `tune`, `llm`, `data fetch`.

jsonargparse builds each parser from the dataclasses themselves: one option per field, named by
the sweep files' dotted keys (`--lr`, `--data.fold`, `--model.hidden_size`, `--psedual.fusion`,
`--variant`), its help the field's docstring, its choices the field's Literal type (so the
registries' names), nested groups from nested configs, and `--config FILE.yaml` (flat dotted
keys or nested mappings) with command-line overrides after it; `--print_config` writes one.
Earlier versions' spellings still work (`--batch-size`, `--fold`, `--psedual gcn`): see `normalise`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, fields

from jsonargparse import ArgumentParser, Namespace, set_parsing_settings

# The help of each option is the docstring under its field.
set_parsing_settings(docstring_parse_attribute_docstrings=True)


@dataclass(frozen=True)
class Command:
    """A generated command: its one-line help, its parser and what it runs."""

    help: str
    parser: Callable[[], ArgumentParser]
    run: Callable[[Namespace], int | None]


def _parser(command: str, description: str) -> ArgumentParser:
    parser = ArgumentParser(prog=f"psedual {command}", description=description, exit_on_error=False,
                            default_env=False)
    parser.add_argument("--config", action="config", help="a YAML file of options (the same keys, dotted or "
                        "nested); options after it override it")
    return parser


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
    # TrainConfig's default data is MAWPS fold 0; on the command line the fold is said, as the
    # dataset is (a fixed-split dataset then needs no `--data.fold null`).
    p.set_defaults({"data.fold": None})
    encoders = "; ".join(f"`{name}`: PseDual reading the solver's expressions with {entry.about}"
                         for name, entry in EXPRESSION_ENCODERS.items())
    p.add_argument("--variant", type=Variant, default=BASE,
                   help=f"`{BASE}`: the solver alone; {encoders} (`--psedual NAME` is the same). "
                        "The psedual.* options need one of the latter.")
    p.add_class_arguments(PseDualConfig, nested_key="psedual", skip={"expression_encoder"}, fail_untyped=True)
    p.add_argument("--out", required=True, help="run folder: checkpoints, epochs/predictions/metrics Parquet")
    p.add_argument("--resume", action="store_true", help="continue from OUT/last.pt")
    return p


def _train_config(cfg: Namespace):
    """The TrainConfig of a parsed `train` command, built as a sweep builds a trial's."""
    from psedual.reexamine.config import BASE, EXPRESSION_ENCODERS, PseDualConfig
    from psedual.train.config import TrainConfig

    flat = _flatten(cfg.as_dict())
    for key in ("config", "out", "resume", "__path__"):
        flat.pop(key, None)
    defaults = PseDualConfig()
    psedual = {k: v for k, v in flat.items() if k.startswith("psedual.")}
    if flat["variant"] == BASE:
        changed = [k for k, v in psedual.items() if v != getattr(defaults, k.split(".", 1)[1])]
        if changed:
            raise ValueError(f"--{', --'.join(changed)} set PseDual's knobs: they need "
                             f"--variant {'|'.join(EXPRESSION_ENCODERS)}")
        flat = {k: v for k, v in flat.items() if k not in psedual}
    return TrainConfig.from_flat(flat)


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


def _run_train(cfg: Namespace) -> None:
    from psedual.train.trainer import train

    result = train(_train_config(cfg), cfg.out, resume=cfg.resume)
    print(summary(result))


# ---- tune ------------------------------------------------------------------------------------

def _tune_parser() -> ArgumentParser:
    from psedual.job import TuneJob

    p = _parser("tune", "The main job: a sweep on Ray Tune (Optuna/ASHA or a grid), then each trial's "
                "chosen checkpoint tested once; the runs table printed. Runs again and again: each run is "
                "a new experiment unless --resume names one.")
    p.add_class_arguments(TuneJob, nested_key=None, fail_untyped=True)
    return p


def _run_tune(cfg: Namespace) -> int:
    from psedual.job import TuneJob, run_job
    from psedual.paper_job import run_paper
    from psedual.tune.paper import is_paper_file

    job = TuneJob(**{f.name: cfg[f.name] for f in fields(TuneJob)})
    return run_paper(job) if is_paper_file(job.space) else run_job(job)


# ---- llm -------------------------------------------------------------------------------------

def _llm_parser() -> ArgumentParser:
    from psedual.llm.run import LLMConfig

    p = _parser("llm", "A chat model (OpenAI-compatible endpoint) solves a test split zero-shot, optionally "
                "reexamining its own solutions.")
    p.add_class_arguments(LLMConfig, nested_key=None, fail_untyped=True)
    p.add_argument("--out", required=True, help="run folder: predictions/metrics Parquet and the reply cache "
                   "(rerun with the same folder to resume: answered requests are not sent again)")
    return p


def _run_llm(cfg: Namespace) -> None:
    from psedual.llm.client import LLMError
    from psedual.llm.run import LLMConfig, run

    config = LLMConfig(**{f.name: cfg[f.name] for f in fields(LLMConfig)})
    try:
        m = run(config, cfg.out, progress=sys.stderr.isatty())
    except LLMError as err:
        raise ValueError(str(err)) from None
    print(f"{m['variant']} {m['llm.model']} on {m['data.dataset']}: value {100 * m['test_value_acc']:.2f}% expr "
          f"{100 * m['test_expr_acc']:.2f}% over {m['n_test']} problems; {m['failures']} unusable replies; "
          f"reexamination changed {m['changed']} answers ({m['changed_to_right']} to right, {m['changed_to_wrong']} "
          f"to wrong); {m['calls']} calls, {m['cache_hits']} from the cache, {m['prompt_tokens']}+"
          f"{m['completion_tokens']} tokens; {m['seconds']:.1f} s | {cfg.out}")


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

    config = FetchConfig(**{f.name: tuple(cfg[f.name]) if f.name == "datasets" else cfg[f.name]
                            for f in fields(FetchConfig)})
    if cfg.sums or cfg.urls:
        print("\n".join(listing(config, "sums" if cfg.sums else "urls")))
        return
    fetch(config)


COMMANDS: dict[tuple[str, ...], Command] = {
    ("data", "fetch"): Command("download the benchmarks, pinned by commit, SHA256-checked", _fetch_parser,
                               _run_fetch),
    ("train",): Command("train one solver; test the best validation checkpoint once", _train_parser, _run_train),
    ("tune",): Command("the main job: a sweep on Ray Tune, then tests and the runs table (as tune.py)",
                       _tune_parser, _run_tune),
    ("llm",): Command("a chat model (OpenAI-compatible endpoint) solves a test split zero-shot",
                      _llm_parser, _run_llm),
}


_BOOLEAN_WORDS = {"true", "false", "yes", "no"}


def _is_flag(action: object) -> bool:
    """A bool field's option, which may stand alone (`--reexamine` = `--reexamine true`)."""
    return getattr(action, "_typehint", None) is bool or getattr(action, "nargs", None) == 0


def normalise(argv: list[str], options: dict) -> list[str]:
    """The spellings of earlier versions, mapped onto the generated options: dashes in option
    names (`--batch-size` → `--batch_size`), a nested field's bare name where it is unique
    (`--fold` → `--data.fold`, `--fusion` → `--psedual.fusion`), a bool field's option alone
    as a flag (`--reexamine` → `--reexamine true`), and `--psedual gcn` → `--variant gcn`.
    `options` maps option strings to the parser's actions."""
    from psedual.reexamine.config import VARIANTS

    by_leaf: dict[str, list[str]] = {}
    for option in options:
        by_leaf.setdefault("--" + option.rpartition(".")[2].lstrip("-"), []).append(option)
    out: list[str] = []
    for i, token in enumerate(argv):
        following = argv[i + 1] if i + 1 < len(argv) else None
        if token.startswith("--"):
            name, eq, value = token[2:].partition("=")
            name = "--" + name.replace("-", "_")
            if name not in options and len(by_leaf.get(name, [])) == 1:
                name = by_leaf[name][0]
            token = name + eq + value
            if not eq and name in options and _is_flag(options[name]) and options[name].nargs != 0 \
                    and (following is None or following.lower() not in _BOOLEAN_WORDS):
                out += [token, "true"]
                continue
        if token == "--psedual" and following in VARIANTS:
            token = "--variant"
        out.append(token)
    return out


def find(argv: list[str]) -> tuple[tuple[str, ...], Command] | None:
    """The generated command that argv starts with, if any."""
    for words, command in COMMANDS.items():
        if tuple(argv[:len(words)]) == words:
            return words, command
    return None
