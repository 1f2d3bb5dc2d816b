"""`analyze report --experiment NAME --out DIR`: the paper as one Markdown report (and Figure 1 as PNG).

A `paper` sweep writes each part as an experiment `NAME.<part>`: `table1` (solver × dataset ×
{base, GRU, GCN} × seed; Table 4's infilling too), `table3` (teacher forcing vs scheduled fusion),
`figure1` (training sizes) and `table2` (LLM rows). Each section is built by the same code as its
`analyze` command (`presets`: `claims.build`, `selection.select`, `summaries`), so it refuses,
flags and notes what that command does; a section that cannot be built says why, and the report
is written from whatever parts and trials have finished. Beside each of our numbers stands the
paper's published one where `paper_numbers.csv` records it; "Missing or skipped" lists the parts
not present, cells without runs, trials not completed and paper cells we did not run.
"""

from __future__ import annotations

import itertools
import subprocess
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from analysis import presets
from analysis.checks import arms, guardrails, protocol, selection
from analysis.errors import ERRORS, one_line
from analysis.options import ReportOptions
from analysis.report import forest, learning, report
from analysis.tables import paper, read, text
from analysis.tables.claim import claims_of
from psedual.reexamine.config import BASE, EXPRESSION_ENCODERS

PARTS = {"table1": "Table 1", "table3": "Table 3", "figure1": "Figure 1", "table2": "Table 2"}
"""the sweep's parts, in the report's order (Table 4 is read from `table1`)"""
LLM_ARMS = guardrails.LLM_VARIANTS
COMPLETED = "completed"
FIGURE = "figure1.png"
LEARNING = "learning_{part}.png"
FOREST = "forest_{part}.png"
"""each claims part's forest plot (`analysis.report.forest`), in the report's folder"""
"""each claims part's learning curves, in the report's folder"""


def code_commit() -> str:
    """The checkout's commit (`git rev-parse`), else the installed package's version."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent,
                              capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        from importlib.metadata import version

        return f"package version {version('psedual')}"


def _expected(runs: pl.DataFrame, cells: list[str], arm: str, arms: tuple[str, ...]) -> list[tuple]:
    """The (cell..., arm) combinations of the values these runs hold that no finished run fills."""
    done = runs.filter(selection.FINISHED)
    have = set(done.select(*cells, arm).rows())
    values = [runs[c].unique(maintain_order=True).to_list() for c in cells]
    return [(*c, a) for c in itertools.product(*values) for a in arms if (*c, a) not in have]


class Report:
    """The report's sections and its "Missing or skipped" lines, built part by part."""

    def __init__(self, args: ReportOptions, name: str):
        self.args, self.name = args, name
        self.numbers = paper.load()
        self.shown: set[tuple] = set()  # the paper cells set beside ours
        self.sections: list[str] = []
        self.missing: list[str] = []
        self.out = Path(args.out)

    def part_args(self, part: str) -> ReportOptions:
        """The options of one part: its experiment, and a claims family of its own."""
        prefix = self.args.name or f"report_{self.name}"
        return replace(self.args, experiment=(f"{self.name}.{part}",), name=f"{prefix}.{part}")

    def published(self, table: str, dataset: str, solver: str, arm: str, metric: str,
                  encoder: str | None = None) -> str:
        hit = paper.find(self.numbers, table, dataset, solver, arm, metric, encoder)
        if hit is None:
            return "–"
        self.shown |= set(hit.cells)
        return str(hit)

    def figure(self, table: str, c, arm: str, encoder: str | None) -> str:
        """The paper's figure beside one arm of claim `c`: none beside a control (`CONTROL`), which the
        paper never ran, and none beside any arm of a claim with a control whose arms are not known
        (a table older than `control_arms`)."""
        if arm in c.control_arms or (c.controls and not c.control_arms):
            return CONTROL
        return self.published(table, c.dataset, c.solver, arm, c.metric, encoder)

    def section(self, title: str, build) -> None:
        """Append `build()`'s Markdown under `title`, or the one line that says why it is not there."""
        try:
            self.sections.append(f"## {title}\n\n{build()}")
        except ERRORS as err:
            self.sections.append(f"## {title}\n\nNot built: {one_line(err)}")
            self.missing.append(f"{title}: not built: {one_line(err)}")

    def claims(self, table: str, built, by: tuple[str, ...], runs: pl.DataFrame) -> str:
        """A claims section: each arm's accuracy beside the paper's, then the claim rows (n, Δ, CI,
        p, adjusted p, verdict, flags) with the paper's base → treatment, then flags and notes. Beside
        every paper figure: how the claim's runs' protocol differs from the paper's (`protocol`)."""
        rows = built.rows
        keys = [k for k in by if k != "data.dataset"]
        body, beside, shown = [], [], set()
        key = pl.col("experiment") + "/" + pl.col("trial")
        for c in claims_of(rows):
            differ = protocol.differences(runs.filter(key.is_in([*c.base_trials, *c.treatment_trials])),
                                          c.dataset)
            # Table 3's paper rows are GCN's: say so beside a run of another encoder
            encoder = c.group.split(" / ")[keys.index("variant")] if "variant" in keys else None
            # the base arm's line before the first treatment paired with these very base runs: a
            # treatment that lost seeds is paired with fewer base runs, and gets its own base line
            base_key = (c.cell, c.metric, tuple(c.base_trials))
            arm_rows = [] if base_key in shown else [(c.base_arm, c.base, c.base_sd, text.dash("the reference"))]
            shown.add(base_key)
            delta = f"{c.delta:+.2f}{report.claim_mark(c)}".replace("-", "−")
            arm_rows.append((c.treatment_arm, c.treatment, c.treatment_sd, delta))
            for arm, acc, sd, d in arm_rows:
                figure = self.figure(table, c, arm, encoder)
                body.append([c.dataset, c.group, c.metric, arms.named(arm, c.control_arms, c.controls), str(c.n_seeds),
                             text.score(acc, sd), d, _shown(figure, differ)])
            pair = [self.figure(table, c, a, encoder) for a in (c.base_arm, c.treatment_arm)]
            beside.append(_pair(pair, differ, c))
        group = " / ".join(k for k in by if k != "data.dataset")
        header = ["dataset", group, "metric", rows["arm"][0], "seeds", "ours (%)",
                  f"Δ vs {text.label(rows['base_arm'][0])}", "paper (%)"]
        parts = [text.render(header, body, "markdown"),
                 report.claim_lines(rows, "markdown", {"paper": beside})]
        if rows["folds"].list.len().max() > 1:
            parts.append("```\n" + report.fold_scores(rows).rstrip() + "\n```")
        parts.append(_bullets(report.footer(rows, built.notes)))
        plot = forest.figure(forest.planned_rows(rows, self.numbers), str(self.out / FOREST.format(part=table)),
                             f"{self.name}.{table}: Δ of each claim (95% CI), the paper's Δ beside it")
        parts.append(f"![forest plot of {table}]({Path(plot).name})")
        return "\n\n".join(parts)

    def table1(self, runs: pl.DataFrame) -> str:
        built, by = presets.paper_table(self.part_args("table1"), "table1", runs)
        return self.claims("table1", built, by, runs) + self.learning("table1", built, runs)

    def table3(self, runs: pl.DataFrame) -> str:
        built, by = presets.paper_table(self.part_args("table3"), "table3", runs)
        return self.claims("table3", built, by, runs) + self.learning("table3", built, runs)

    def learning(self, part: str, built, runs: pl.DataFrame) -> str:
        """The learning curves of the runs a part's claims paired (a figure), and where the arms
        stand by epoch: whether the budget, not the method, may have decided the claims."""
        if built.rows.is_empty():
            return ""
        curve = presets.learning_curves(self.part_args(part), built, runs)
        path = learning.figure(curve, str(self.out / LEARNING.format(part=part)),
                               f"{self.name}.{part}: validation value accuracy by epoch\nmean over seeds, band ± 1 sd; "
                               f"under each panel Δ vs its reference", learning.pairs(built.rows))
        lines = "\n".join(f"- {line}" for line in learning.standings(built.rows, curve))
        return (f"\n\n![learning curves of {part}]({Path(path).name})\n\nWhere the arms stand by epoch (validation "
                f"value accuracy, mean over seeds; descriptive):\n\n{lines}")

    def table4(self, runs: pl.DataFrame) -> str:
        """The paper's Table 4 (every masked number, its definition) beside the paper's figures, then
        ours over the used slots only, apart and named so: the paper has no figure of that."""
        args = self.part_args("table1")
        table, notes, by = presets.infill(args, runs, used_only=False)
        beside = [tuple(protocol.beside(self.published("table4", r["data.dataset"], r["solver"], r["variant"], m),
                                        protocol.of_row(runs, r, by))
                        for m in ("infill_acc", "perfect_match")) for r in table.iter_rows(named=True)]
        used, used_notes, _ = presets.infill(args, runs, used_only=True)
        return "\n\n".join([report.infill_table(table, by, "markdown", beside, used_only=False),
                            _bullets(report.infill_footer(table, notes, False, args.resamples, args.rng_seed)),
                            "Ours, over the used slots only (not the paper's Table 4 metric, so no paper column):",
                            report.infill_table(used, by, "markdown", used_only=True),
                            _bullets(report.infill_footer(used, used_notes, True, args.resamples, args.rng_seed))])

    def figure1(self, runs: pl.DataFrame, out: Path) -> str:
        points, built, _ = presets.curve(self.part_args("figure1"), runs, str(out / FIGURE))
        return "\n\n".join([f"![Figure 1: test value accuracy vs training size]({FIGURE})",
                            report.curve_table(points, "markdown"),
                            "The CIs in this table are of each arm's accuracy; those of the claims are of Δ.",
                            report.claim_lines(built.rows, "markdown"), _bullets(report.footer(built.rows, built.notes))])

    def table2(self, runs: pl.DataFrame) -> str:
        args = self.part_args("table2")
        cmp = presets.comparison(args, args.name, "variant", LLM_ARMS[0], LLM_ARMS[1:], ("data.dataset", "solver"))
        return self.claims("table2", presets.build(args, cmp, runs), cmp.by, runs)


CONTROL = text.dash("a control: the paper ran no such arm")
NO_FIGURE = text.dash("no paper figure for this cell")


def _shown(figure: str, differ: list[str]) -> str:
    """A paper figure beside one of our arms: with how the protocol differs; an absent one says why."""
    return NO_FIGURE if figure == "–" else figure if figure == CONTROL else protocol.beside(figure, differ)


def _pair(pair: list[str], differ: list[str], c) -> str:
    """The paper's base → treatment beside a claim; where a control stands in it, no pair at all."""
    if CONTROL in pair:
        return CONTROL
    if set(pair) == {"–"}:
        return NO_FIGURE
    return protocol.beside(" → ".join(pair), differ)


def _not_run(numbers: pl.DataFrame, shown: set[tuple]) -> list[str]:
    """The paper's figures set beside none of ours, one line per table, dataset and solver."""
    cell = ["table", "dataset", "solver", "arm", "metric"]
    left = numbers
    if shown:
        left = numbers.join(pl.DataFrame(sorted(shown), schema=cell, orient="row"), on=cell, how="anti",
                            maintain_order="left")
    out = []
    for part in left.partition_by(["table", "dataset", "solver"], maintain_order=True):
        r = part.row(0, named=True)
        figures = ", ".join(f"{a} {m} {paper.number(v)}" for a, m, v in part.select("arm", "metric", "value").rows())
        out.append(f"paper {r['table']} {r['dataset']} / {r['solver']}: {figures}; not run here")
    return out


def _bullets(text: str) -> str:
    return "\n".join(f"- {line}" for line in text.splitlines() if line.strip())


def _trials(runs: pl.DataFrame) -> list[str]:
    """The trials of a part that did not complete, and whether the claims could read them."""
    out = []
    for r in runs.filter(pl.col("status") != COMPLETED).sort("trial").iter_rows(named=True):
        used = ("a status the tables never record: the claims refuse it" if r["status"] not in selection.STATUSES
                else "no test result: skipped" if r["test_value_acc"] is None
                else "failed: skipped" if r["status"] == "error" or r.get("error")
                else "has a test result from its checkpoint, so the claims read it")
        error = f" ({' '.join(str(r['error']).split())})" if r.get("error") else ""
        out.append(f"trial {r['experiment']}/{r['trial']}: status {r['status']}{error}; {used}")
    return out


def write(args: ReportOptions) -> Path:
    """Write <out>/report.md (and <out>/figure1.png when Figure 1's part is there); returns the path."""
    if len(args.experiment or []) != 1:
        raise ValueError(f"analyze report reads one experiment, its parts NAME.{', NAME.'.join(PARTS)}: give one "
                         f"--experiment NAME (got {list(args.experiment) or 'none'})")
    name = args.experiment[0]
    everything = read.scan(args.root, "runs").select("experiment").unique().collect()["experiment"].to_list()
    present = {part: f"{name}.{part}" for part in PARTS if f"{name}.{part}" in everything}
    if not present:
        raise ValueError(f"{args.root}: no part of experiment {name!r} (looked for "
                         f"{', '.join(f'{name}.{p}' for p in PARTS)}); experiments present: "
                         f"{', '.join(sorted(everything))}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in (FIGURE, *(LEARNING.format(part=p) for p in PARTS)):  # an earlier report's figure is not this one's
        (out / old).unlink(missing_ok=True)
    rep = Report(args, name)
    runs: dict[str, pl.DataFrame] = {}
    for part, title in PARTS.items():
        if part not in present:
            why = " (run only when an LLM endpoint is configured)" if part == "table2" else ""
            rep.missing.append(f"{name}.{part} ({title}{' and Table 4' if part == 'table1' else ''}): not in the "
                               f"results storage{why}")
            continue
        try:
            runs[part] = presets.runs(rep.part_args(part))
        except ERRORS as err:
            rep.missing.append(f"{name}.{part} ({title}): no runs read: {one_line(err)}")
            continue
        rows = runs[part]
        header = f"{title} ({name}.{part})"
        if part == "table1":
            rep.section(header, lambda: rep.table1(rows))
            rep.section(f"Table 4: infilling accuracy and perfect match over every masked number ({name}.table1)", lambda: rep.table4(rows))
            expected = _expected(rows, ["data.dataset", "solver"], "variant", (BASE, *EXPRESSION_ENCODERS))
        elif part == "table3":
            rep.section(header, lambda: rep.table3(rows))
            treated = rows.filter(pl.col("variant") != BASE)
            expected = _expected(treated, ["data.dataset", "solver", "variant"], "psedual.fusion",
                                 presets.PRESETS["table3"][1:2] + presets.PRESETS["table3"][2]) if treated.height else []
        elif part == "figure1":
            rep.section(header, lambda: rep.figure1(rows, out))
            arms = (BASE, *(v for v in EXPRESSION_ENCODERS if v in set(rows["variant"].to_list())))
            expected = _expected(rows, ["data.dataset", "solver", "data.train_size"], "variant", arms)
        else:
            rep.section(header, lambda: rep.table2(rows))
            expected = _expected(rows, ["data.dataset", "solver"], "variant", LLM_ARMS)
        rep.missing += [f"{name}.{part}: no finished run for {' / '.join(map(str, cell))}" for cell in expected]
        rep.missing += _trials(rows)
    rep.missing += _not_run(rep.numbers, rep.shown)
    recorded = set(rep.numbers["table"].to_list())
    for table in paper.TABLES:
        if table not in recorded:
            rep.missing.append(f"paper {table}: no published figure: "
                               f"{paper.NO_FIGURES.get(table, 'none in analysis/tables/paper_numbers.csv')}")
    path = out / "report.md"
    path.write_text(_document(args, name, present, runs, rep), encoding="utf-8")
    return path


def _environments(runs: pl.DataFrame) -> str:
    """Where the runs trained, from the runs table's `env.*` columns: each GPU model (or `cpu`) with
    its torch and CUDA, and how many runs; `not recorded` for tables written before them."""
    cols = ("env.gpu", "env.device", "env.torch", "env.cuda")
    if not runs.height or any(c not in runs.columns for c in cols):
        return "not recorded in the runs table"
    known = runs.filter(pl.col("env.device").is_not_null())
    said = [f"{gpu or 'cpu'} (torch {torch}, CUDA {cuda}): {n} run(s)"
            for gpu, torch, cuda, n in known.group_by("env.gpu", "env.torch", "env.cuda").len()
            .sort("env.gpu", "env.torch", "env.cuda", nulls_last=True).rows()]
    missing = runs.height - known.height
    return "; ".join(said + ([f"not recorded: {missing} run(s)"] if missing else [])) or "not recorded"


def _document(args: ReportOptions, name: str, present: dict[str, str], runs: dict[str, pl.DataFrame],
              rep: Report) -> str:
    every = pl.concat(list(runs.values()), how="diagonal_relaxed") if runs else pl.DataFrame()
    statuses = (", ".join(f"{n} {s}" for s, n in every.group_by("status").len().sort("status").rows())
                if every.height else "none read")
    versions = ", ".join(sorted({str(v) for v in every["code_version"].to_list()})) \
        if "code_version" in every.columns else "not recorded"
    machine = _environments(every)
    header = [f"# PseDual Lab report: {name}", "",
              f"- experiment: {name}; parts present: {', '.join(present.values())}",
              f"- written: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
              f"- commit: {code_commit()}; the runs' code versions: {versions}",
              f"- machine: {machine}",
              f"- trials: {every.height} ({statuses})",
              f"- command: `psedual analyze report --experiment {name} --root {args.root} --out {args.out}` "
              f"(correction {args.correction}, {args.resamples} resamples, RNG seed {args.rng_seed}, one trial per "
              f"slot by {args.select_by})",
              "- paper: Bin et al., Solving Math Word Problems with Reexamination (arXiv 2310.09590); all 159 figures "
              "of its Tables 1-4 are in analysis/tables/paper_numbers.csv (made from shared/paper/figures.csv by "
              "`python -m analysis.tables.paper --sync`). Beside our base: the authors' rerun without PseDual, then the "
              "solver's own paper (`own paper`); beside GRU and GCN: the paper's GRU and GCN rows; `PseDual` "
              "(Table 4): the paper's row, its encoder not stated; `GCN` (Table 3): the paper's row is GCN's, ours "
              "another encoder; `by values`: the paper's expression accuracy beside our strict one; `ChatGPT` "
              "beside an LLM row: the paper's model, not ours."]
    missing = "\n".join(f"- {m}" for m in rep.missing) or "Nothing: every part, cell and trial is here."
    return "\n\n".join(["\n".join(header), *rep.sections, f"## Missing or skipped\n\n{missing}"]) + "\n"
