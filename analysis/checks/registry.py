"""The guardrails, as one registry: each a small named function with its scope and a docstring.

A guardrail reads what its scope gives it and returns its flags (the claim stands, flagged, each flag
spelt out under the report) or raises `GuardrailError` naming the runs (the claim, or the command,
is refused). Its scope says where it runs and what it reads:

- `slot`: every usable trial of the slots, before one per slot is kept (`selection.select`: `Slots`);
- `run`: each kept run against its own tables (`selection.select`: `Kept`);
- `arm`: one arm of a claim, its runs over the claim's seeds and folds (`claims.build`: `Pairing`
  and the arm's value);
- `arms`: the claim's two arms against each other (`Pairing`);
- `seed pair`: each seed pair of the claim, run against run (`Pairing.pairs`);
- `environment`: where the two arms' runs trained (`Pairing`).

`selection.select` runs the `slot` and `run` guardrails, `claims.build` the rest, every one in the
registry's order (a claim's flags are numbered in it); adding a check is one function and one entry in
`GUARDRAILS`. A `slot` or `run` guardrail's flags are said as notes under the command's output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

import polars as pl

from analysis.checks import arms as arm_flags
from analysis.checks import guardrails, labels, pairs, run_checks, validation
from analysis.checks.guardrails import FOLD, SEED
from analysis.stats.stats import seed_warning
from psedual.data.registry import DATASETS

Scope = Literal["slot", "run", "arm", "arms", "seed pair", "environment"]
SCOPES: tuple[str, ...] = get_args(Scope)


@dataclass(frozen=True)
class Slots:
    """What a `slot` guardrail reads: the trials of every slot before one per slot is kept."""

    runs: pl.DataFrame
    """every usable trial (finished, with a test result)"""
    slot: list[str]
    """the columns a slot is made of (the cell's, the arm, seed, fold)"""
    compared: list[str]
    """the config columns the arms must share"""
    epochs: pl.DataFrame
    """the trials' rows of the epochs table"""
    competing: frozenset[tuple[str, str]]
    """the trials (experiment, trial) that share their slot with another: one of them is picked by its score"""


@dataclass(frozen=True)
class Kept:
    """What a `run` guardrail reads: the run kept per slot, with its tables."""

    runs: pl.DataFrame
    """one run per slot"""
    slot: list[str]
    """the columns a slot is made of"""
    preds: dict[tuple[str, str], pl.DataFrame]
    """each kept run's prediction rows, by (experiment, trial)"""
    columns: list[str]
    """the prediction columns that must be non-null"""
    epochs: pl.DataFrame
    """the kept runs' rows of the epochs table"""


@dataclass(frozen=True)
class Pairing:
    """What a claim's guardrails read: its two arms' runs over the seeds and folds they share, paired."""

    cell: str
    """the cell, as said in messages"""
    arm: str
    """the arm column"""
    base_arm: str
    """the base arm's value"""
    treatment_arm: str
    """the treatment arm's value"""
    runs: dict[str, pl.DataFrame]
    """each arm's runs over the claim's seeds, by its value (base first)"""
    pairs: list[pairs.Pair]
    """the seed pairs (seed, fold, base run, treatment run), seed by seed and fold by fold"""
    compared: list[str]
    """the config columns the arms must share"""
    searched: set[str]
    """the columns a tuned sweep searched within the slots"""
    allowed: set[str]
    """the columns `--allow_diff` allows to differ (flagged)"""
    run_flags: dict[tuple[str, str], list[str]]
    """what selection said of each kept run (chosen on test, no validation split, ...)"""
    seeds: list[int]
    """the paired seeds"""
    folds: list[int | None]
    """the folds every seed covers"""
    dataset: str
    """the cell's dataset"""
    budgets: dict[str, int]
    """each arm's tuning budget (the most trials a slot held), by its value"""
    trainable: bool
    """whether the arms train (False for zero-shot LLM runs)"""


@dataclass(frozen=True)
class Guardrail:
    """One check, by the name it is registered under in `GUARDRAILS`."""

    scope: Scope
    """where it runs and what it reads (`SCOPES`; the module docstring)"""
    check: Callable[..., list[str]]
    """its function: `check(context)`, or for the `arm` scope `check(pairing, arm_value)`; returns its
    flags, raises `GuardrailError` to refuse; its docstring says what it checks"""
    applies: str = "every arm"
    """the arms (or runs) it applies to, in words: its function checks that an arm is one of them before it
    flags it (`applies_table`, docs/analysis.md)"""

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"guardrail {self.check.__name__}: unknown scope {self.scope!r}; valid: {', '.join(SCOPES)}")
        if not (self.check.__doc__ or "").strip():
            raise ValueError(f"guardrail {self.check.__name__}: its function needs a docstring saying what it checks")
        if not self.applies.strip():
            raise ValueError(f"guardrail {self.check.__name__}: say which arms it applies to")

    @property
    def about(self) -> str:
        """What it checks: its function's docstring, in one line."""
        return " ".join((self.check.__doc__ or "").split())


# slot: the trials of every slot, before one is kept
def labelled(s: Slots) -> list[str]:
    """A run is the arm its label says only if its config says so too (`labels.check`)."""
    labels.check(s.runs)
    return []


def keyed(s: Slots) -> list[str]:
    """The seed and fold columns hold what a slot is keyed by (`guardrails.check_keys`)."""
    guardrails.check_keys(s.runs, SEED, FOLD)
    return []


def one_data_version(s: Slots) -> list[str]:
    """The trials of a slot differ only in what a sweep searched: no other data, no replicates
    (`guardrails.check_slots`)."""
    guardrails.check_slots(s.runs, s.slot, s.compared)
    return []


def validation_scores(s: Slots) -> list[str]:
    """A trial's validation score, which may pick it, is its epochs table's (`run_checks.check_validation`)."""
    run_checks.check_validation(s.runs, s.epochs, set(s.competing))
    return []


# run: each kept run against its own tables
def complete_predictions(k: Kept) -> list[str]:
    """Each kept run's predictions are complete and agree with its row (`run_checks.check_predictions`)."""
    run_checks.check_predictions(k.runs, k.preds, k.columns)
    return []


def seed_replicates(k: Kept) -> list[str]:
    """No seed is counted twice: two seeds' runs that are the same run (`run_checks.check_seed_replicates`)."""
    run_checks.check_seed_replicates(k.runs, [c for c in k.slot if c not in (SEED, FOLD)], SEED, k.preds, k.epochs)
    return []


# arm, arms, seed pair, environment: a claim's
def pooled(p: Pairing, arm: str) -> list[str]:
    """The runs of one arm of a cell share their config but for what was searched within the slots
    (`guardrails.check_pooled`)."""
    guardrails.check_pooled(f"{p.cell}, {p.arm}={arm}", p.runs[arm], p.compared, p.searched, p.allowed)
    return []


def validated_apart(p: Pairing, arm: str) -> list[str]:
    """An arm is refused when every run of it was validated on its own test split (`validation.check_arm`)."""
    validation.check_arm(f"{p.cell}, {p.arm}={arm}", p.runs[arm])
    return []


def same_config(p: Pairing) -> list[str]:
    """The two arms differ in the arm and nothing else: another difference is refused, or flagged where
    searched or allowed (`guardrails.config_flags`)."""
    return guardrails.config_flags(p.cell, p.base_arm, p.treatment_arm, p.runs[p.base_arm], p.runs[p.treatment_arm],
                                   p.compared, p.searched, p.allowed)


def pairs_alike(p: Pairing) -> list[str]:
    """Each seed pair differs in the arm only: a column crossed over the seeds, or a validation split of
    another size, is refused or flagged where allowed (`pairs.check`)."""
    crossed = pairs.crossed(p.runs[p.base_arm], p.runs[p.treatment_arm], p.compared, p.searched)
    return pairs.check(p.cell, p.base_arm, p.treatment_arm, p.pairs, crossed, p.allowed)


def same_data(p: Pairing) -> list[str]:
    """Each seed pair trained and was tested on the same data (`guardrails.data_flags`)."""
    return guardrails.data_flags(p.cell, [(q.base, q.treatment) for q in p.pairs], p.allowed)


def environment(column: str) -> Callable[[Pairing], list[str]]:
    """The `environment` guardrail of one `guardrails.ENVIRONMENT` column."""
    def check(p: Pairing) -> list[str]:
        return guardrails.environment_flags(p.base_arm, p.treatment_arm, p.runs[p.base_arm],
                                            p.runs[p.treatment_arm], (column,))
    check.__name__ = f"environment[{column}]"
    check.__doc__ = (f"The arms' runs recorded the same {column} (flagged, not refused: trials take the nodes "
                     f"that are free; `guardrails.environment_flags`).")
    return check


def near_teacher_forcing(p: Pairing, arm: str) -> list[str]:
    """A scheduled-fusion arm whose ε ended near 1 is close to teacher forcing (`arms.near_teacher_forcing`)."""
    return arm_flags.near_teacher_forcing(f"{p.arm}={arm}", p.runs[arm])


def control(p: Pairing, arm: str) -> list[str]:
    """An arm whose runs are controls (`psedual.control` other than `none`) is named so: a control, not the
    method, and no paper figure stands beside it (`arms.controls`)."""
    held = arm_flags.controls(p.runs[arm])
    if not held:
        return []
    # an arm named by psedual.control itself needs no "X's runs are X": the setting and its words suffice
    who = "" if p.arm == "psedual.control" else f"{p.arm}={arm}'s runs are "
    return [f"control: {who}psedual.control={', '.join(held)} "
            f"({arm_flags.control_words(held).removeprefix('control: ')}): a control, not the method; no paper "
            f"figure of the method stands beside it (docs/psedual.md)"]


def sampled(p: Pairing) -> list[str]:
    """A sampled run (an LLM at temperature > 0 or drawing several samples) is one sample: one per arm
    compares two samples, not the methods, and holds the verdict back as one seed of trained arms does;
    repeated samples (seeds) pair as seeds do (`arms.sampling`)."""
    said = {a: arm_flags.sampling(runs) for a, runs in p.runs.items()}
    said = {a: s for a, s in said.items() if s}
    if not said or len(p.seeds) > 1:
        return []
    which = "; ".join(f"{p.arm}={a}: {s}" for a, s in said.items())
    return [f"sampled: {which}: each run is one sample of its arm, so one run per arm compares two samples, "
            f"not the methods (no verdict beyond inconclusive); run more seeds, each a sample, and they pair as "
            f"seeds do"]


def selected(p: Pairing) -> list[str]:
    """What selection said of each paired run (chosen on test, no validation split, ...), seed by seed."""
    keys = {(q.seed, q.fold): [(r["experiment"], r["trial"]) for r in (q.base, q.treatment)] for q in p.pairs}
    return [f for s in p.seeds for side in (0, 1) for fold in p.folds for f in p.run_flags.get(keys[s, fold][side], [])]


def all_folds(p: Pairing) -> list[str]:
    """A dataset with folds is compared over all of them (MAWPS's five), else flagged."""
    protocol = DATASETS[p.dataset].folds if p.dataset in DATASETS else 0
    if len(p.folds) < protocol:
        return [f"{p.dataset} folds {p.folds} of {protocol}: not the {protocol}-fold protocol"]
    return []


def same_budget(p: Pairing) -> list[str]:
    """The arms were tuned with the same budget (trials per slot), else flagged."""
    base, treat = p.budgets[p.base_arm], p.budgets[p.treatment_arm]
    if base != treat:
        return [f"tuning budgets differ: {p.base_arm} {base} trial(s) per slot vs {p.treatment_arm} {treat}: "
                f"the better-tuned arm had more chances to win"]
    return []


def enough_seeds(p: Pairing) -> list[str]:
    """Too few seeds are said: one seed of trained arms compares two models, not the methods."""
    warning = seed_warning(len(p.seeds))
    if len(p.seeds) == 1 and any(arm_flags.sampling(r) for r in p.runs.values()):
        return []  # `sampled` says what one sample per arm is
    if len(p.seeds) == 1 and p.trainable:
        warning = ("1 seed: the test compares these two trained models on these test examples, not the "
                   "methods; seed-to-seed variation is not measured")
    return [warning] if warning else []


GUARDRAILS: dict[str, Guardrail] = {
    "labelled": Guardrail("slot", labelled, "every run that names a PseDual variant or base (its config's encoder)"),
    "keyed": Guardrail("slot", keyed, "every run"),
    "one_data_version": Guardrail("slot", one_data_version, "every slot of more than one trial"),
    "validation_scores": Guardrail("slot", validation_scores,
                                   "trained runs that compete for a slot (a zero-shot LLM run has no validation)"),
    "complete_predictions": Guardrail("run", complete_predictions, "every kept run"),
    "seed_replicates": Guardrail("run", seed_replicates, "every arm of two or more seeds"),
    "pooled": Guardrail("arm", pooled, "every arm"),
    "validated_apart": Guardrail("arm", validated_apart, "trained arms (runs with a validation split)"),
    "same_config": Guardrail("arms", same_config, "every claim"),
    "pairs_alike": Guardrail("seed pair", pairs_alike, "every claim"),
    "same_data": Guardrail("seed pair", same_data, "every claim whose runs record their data identity"),
    **{f"environment[{c}]": Guardrail("environment", environment(c), "runs that record it (trained runs)")
       for c in guardrails.ENVIRONMENT},
    "near_teacher_forcing": Guardrail("arm", near_teacher_forcing,
                                      "scheduled-fusion arms whose infiller reads an expression (not `no_expression`)"),
    "control": Guardrail("arm", control, "arms whose runs are controls (`psedual.control` other than `none`)"),
    "selected": Guardrail("seed pair", selected, "every kept run"),
    "all_folds": Guardrail("arms", all_folds, "claims on a dataset with folds (MAWPS)"),
    "same_budget": Guardrail("arms", same_budget, "every claim (a tuned sweep's arms)"),
    "sampled": Guardrail("arms", sampled, "claims of one seed whose arms decode by sampling (an LLM at temperature "
                                          "> 0 or drawing several samples; no trained solver samples)"),
    "enough_seeds": Guardrail("arms", enough_seeds,
                              "claims of fewer than 6 seeds (one seed: trained or sampled arms only; one greedy "
                              "zero-shot LLM run is the method)"),
}
"""Every guardrail by name, in the order they run (and a claim's flags are numbered)."""


def applies_table() -> str:
    """Every guardrail, its scope, the arms it applies to and what it checks, as a Markdown table
    (docs/analysis.md holds it; a test keeps them equal)."""
    rows = ["| guardrail | scope | applies to | what it checks |", "|---|---|---|---|"]
    rows += [f"| `{name}` | {g.scope} | {g.applies} | {g.about.replace('|', '/')} |" for name, g in GUARDRAILS.items()]
    return "\n".join(rows)


def run(context: Slots | Kept | Pairing, scopes: tuple[str, ...]) -> list[str]:
    """Every guardrail of `scopes`, in the registry's order, on `context`; their flags in that order.
    Consecutive `arm` guardrails run arm by arm (the base arm's, then the treatment's)."""
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise ValueError(f"unknown scope(s) {unknown}; valid: {', '.join(SCOPES)}")
    chosen = [g for g in GUARDRAILS.values() if g.scope in scopes]
    flags: list[str] = []
    i = 0
    while i < len(chosen):
        if chosen[i].scope != "arm":
            flags += chosen[i].check(context)
            i += 1
            continue
        group = [chosen[i]]
        while i + len(group) < len(chosen) and chosen[i + len(group)].scope == "arm":
            group.append(chosen[i + len(group)])
        for arm in context.runs:  # a Pairing's arms, base first
            for g in group:
                flags += g.check(context, arm)
        i += len(group)
    return flags


SELECTION: tuple[str, ...] = ("slot",)
"""The scopes `selection.select` runs before a run per slot is kept."""
KEPT: tuple[str, ...] = ("run",)
"""The scopes `selection.select` runs on the kept runs."""
CLAIM: tuple[str, ...] = ("arm", "arms", "seed pair", "environment")
"""The scopes `claims.build` runs on each claim's pairing."""
