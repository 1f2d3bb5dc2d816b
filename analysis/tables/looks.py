"""The `looks` table of a sweep in rounds (`<root>/looks/experiment=<name>/looks.parquet`, written by
the sweep's searcher at every look: `psedual/results/looks.py` holds its schema): read with its
experiment, each claim's verdict (its last look), and the looks section `psedual analyze` and the
study report print where a results root has one (`section`: the design, each look, the seeds after
each claim's decisive look and the rule for them)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from analysis.tables import text

TABLE = "looks"
"""The table's folder under a root."""


def read_looks(root: str, experiments: list[str] | None = None) -> pl.DataFrame:
    """Every look of the named experiments (all under `root` without names), with an `experiment`
    column from the folder; a root without looks, or a named experiment without them, is a
    FileNotFoundError naming what was looked for."""
    if "://" in root and not root.startswith("file://"):
        names = experiments or ["*"]
        return pl.concat([pl.read_parquet(f"{root.rstrip('/')}/{TABLE}/experiment={e}/looks.parquet", hive_partitioning=True)
                          for e in names], how="diagonal_relaxed")
    folder = Path(root.removeprefix("file://")) / TABLE
    found = {p.parent.name.removeprefix("experiment="): p for p in sorted(folder.glob("experiment=*/looks.parquet"))}
    if not found:
        raise FileNotFoundError(f"{folder}: no looks table here (a sweep in rounds writes experiment=<name>/looks.parquet)")
    missing = sorted(set(experiments or []) - set(found))
    if missing:
        raise FileNotFoundError(f"{folder}: no looks of experiment {', '.join(missing)}; present: {', '.join(found)}")
    # the experiment from the folder's name, whatever it holds (Polars' hive parsing would split `a=b`)
    return pl.concat([pl.read_parquet(found[e]).with_columns(experiment=pl.lit(e)) for e in (experiments or found)],
                     how="diagonal_relaxed")


def verdicts(looks: pl.DataFrame) -> pl.DataFrame:
    """Each experiment's claims at their last look: the verdict, its seeds and Δ with the repeated interval."""
    return (looks.group_by("experiment", "claim", maintain_order=True).last()
            .select("experiment", "claim", "look", "of", "seeds", "delta", "ci_low", "ci_high", "verdict"))


RULE = ("A claim's verdict is its decisive look's: the first look that reached a decision its design stops on "
        "(else its last look). Seeds that finished after it (trials already running when it was decided, or an "
        "arm another claim still needed) are reported, not judged: judging them would be a look the design did "
        "not plan, and its error rates would no longer hold. A claims table built from the same runs tests every "
        "paired seed as if their number had been fixed before the first look; beside a sweep in rounds its p's "
        "and verdicts are descriptive, the looks' are the study's.")
"""The rule for seeds after a claim's decisive look, said under every looks section."""
HEADER = ["claim", "look", "seeds", "Δ", "repeated CI", "t", "t boundary (±)", "α spent", "TOST interval",
          "margin (points of accuracy)", "target", "verdict", "no seeds"]
"""The looks section's columns: each look's figures as the looks table holds them (points of accuracy)."""


def present(root: str, experiments: list[str] | None = None) -> pl.DataFrame | None:
    """The looks of those `experiments` (all without names) that have a looks table under `root`;
    None where none has one (the runs of a sweep with a fixed seed count)."""
    try:
        found = read_looks(root)
    except (FileNotFoundError, OSError, pl.exceptions.ComputeError):  # a remote root's glob that finds none
        return None
    if experiments:
        found = found.filter(pl.col("experiment").is_in(list(experiments)))
    return None if found.is_empty() else found


def decisive(looks: pl.DataFrame) -> pl.DataFrame:
    """Each experiment's claims at their decisive look: a claim closes at its first decided look, so
    its last row is the decided one (or its last look, undecided)."""
    return looks.group_by("experiment", "claim", maintain_order=True).last()


def claim_name(treatment_arm: str, base_arm: str) -> str:
    """A claim's name as a sweep in rounds names it (`psedual.power_plan.names`, before its `where`)."""
    return f"{text.label(treatment_arm)} vs {text.label(base_arm)}"


def after(looks: pl.DataFrame, claims: pl.DataFrame) -> dict[tuple[str, str], list[int] | None]:
    """(experiment, claim) → the paired seeds of its claim row (`claims`, built from the same runs)
    at or above its decisive look's planned seeds: those that finished after the look that decided it.
    None where no one claim row is the claim's (its name and the experiment of its runs)."""
    out: dict[tuple[str, str], list[int] | None] = {}
    for d in decisive(looks).iter_rows(named=True):
        rows = [r for r in claims.iter_rows(named=True) if _names(d["claim"], r)]
        rows = [r for r in rows if any(t.startswith(d["experiment"] + "/") for t in r["treatment_trials"])]
        bar = d.get("planned_seeds") or d["seeds"]
        out[(d["experiment"], d["claim"])] = sorted(s for s in rows[0]["seeds"] if s >= bar) if len(rows) == 1 else None
    return out


def _names(claim: str, row: dict) -> bool:
    """Whether a looks table's claim is this claim row's: its name, alone or before its `where` or cell."""
    name = claim_name(row["treatment_arm"], row["base_arm"])
    return claim == name or claim.startswith((name + " (", name + " ["))


def _figure(x: float | None, fmt: str = "+.2f") -> str:
    return "–" if x is None else format(x, fmt)


def _row(r: dict) -> list[str]:
    judged = r["delta"] is not None  # a look skipped for want of new pairs has no figures
    return [r["claim"], f"{r['look']} of {r['of']}" if r["of"] is not None else f"({r['look']}: skipped)",
            f"{r['seeds']}" + (f" (planned {r['planned_seeds']})" if r.get("planned_seeds") not in (None, r["seeds"])
                               else ""),
            _figure(r["delta"]), f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]" if judged else "–",
            _figure(r["statistic"]), _figure(r["boundary"], ".3f"), _figure(r["spent_alpha"], ".4f"),
            f"[{r['equivalence_low']:+.2f}, {r['equivalence_high']:+.2f}]" if judged else "–",
            "–" if r["margin"] is None else f"±{r['margin']:g}", _figure(r["target"], "+g"), r["verdict"],
            f"{r['not_seeds']} (seed{'' if r['not_seeds'] == 1 else 's'} {r['not_seeds_list']})" if r.get("not_seeds")
            else "–"]


def section(looks: pl.DataFrame, claims: pl.DataFrame | None = None, fmt: str = "markdown") -> str:
    """The looks on record: each experiment's design (spending, α's, look schedule), each look (seeds,
    Δ, repeated CI, statistic, boundary, spent α, TOST interval at the margin, target, verdict, the
    seeds that were no seeds), and each claim's seeds after its decisive look (from `claims`, the claim
    rows of the same runs), with the rule for them (`RULE`)."""
    lines = []
    for (experiment,), mine in looks.group_by("experiment", maintain_order=True):
        designs = [d for d in decisive(mine)["design"].to_list() if d]
        lines.append(f"Sweep in rounds `{experiment}`: its looks table ({mine.height} look"
                     f"{'' if mine.height == 1 else 's'}). Design: {'; '.join(dict.fromkeys(designs)) or 'not recorded'}.")
        lines += ["", text.render(HEADER, [_row(r) for r in mine.iter_rows(named=True)], fmt), ""]
        if claims is not None and not claims.is_empty():
            for (_, claim), seeds in after(mine, claims).items():
                last = decisive(mine.filter(pl.col("claim") == claim)).row(0, named=True)
                if seeds is None:
                    lines.append(f"- {claim}: no one claim row of these runs is this claim: its seeds after look "
                                 f"{last['look']} are not counted here")
                elif seeds:
                    lines.append(f"- {claim}: {len(seeds)} seed{'' if len(seeds) == 1 else 's'} finished after its "
                                 f"decisive look ({last['look']} of {last['of']}, {last['seeds']} seeds): "
                                 f"{', '.join(map(str, seeds))}; not judged (the rule below)")
                else:
                    lines.append(f"- {claim}: no seed finished after its decisive look ({last['look']} of "
                                 f"{last['of']}, {last['seeds']} seeds)")
        lines += ["", RULE]
    return "\n".join(lines)
