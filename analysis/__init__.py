"""Analysis of PseDual Lab's result tables: Polars queries, significance checks, paper tables.

Reads the Parquet tables that `tune.py` writes (`<root>/{runs,epochs,predictions}/experiment=<name>/`)
with Polars, tests differences with scipy, and prints Markdown/LaTeX tables and a PNG figure.
It imports neither torch nor Ray, so it runs where only the tables are; of the `psedual` package
it reads only what is plain Python: the registries (arm labels, datasets' folds), the atomic
writer, the storage root and table names, the best-epoch rule, the data-identity hash, the unused-slot
marker, the row records, which say what is an outcome, the recipes' table and a command line's refusals
(tests/test_analysis.py checks the list).

Its modules, in rooms that import down (a module imports its own room and the rooms listed above it;
psedual/layers.py's ROOMS; analysis/README.md says more of each):

    tables/read.py           lazy scans of the tables and selection by config
    tables/table_files.py    a root's files checked before a scan (errors name the file or folder)
    tables/trials.py         an Optuna sweep's study (`analyze optuna`)
    tables/paper.py          the paper's published figures (paper_numbers.csv)
    tables/claim.py          a claim: one typed frozen record, the claims table's row
    tables/text.py           a table as Markdown or LaTeX, and its cells
    tables/looks.py          a sweep in rounds' looks table and its verdicts
    stats/stats.py           the paired, across-seed and interval computations (scipy)
    stats/multiple.py        Holm and Benjamini-Hochberg over a family of comparisons
    stats/power.py           each claim's power: its MDE and the seeds a target needs (statsmodels)
    stats/equivalence.py     the TOST at a margin and P(|delta| < margin)
    stats/sequential.py      seeds until decided: a group-sequential design (one name for the four below)
    stats/boundaries.py      its design and boundaries, calibrated to t at each look's seeds
    stats/decisions.py       what one look decides, and its verdict
    stats/margins.py         the margins a user could mean, the default margin, the test at a target
    stats/operating.py       many studies through a design: error rates and expected seeds
    checks/guardrails.py     what is refused between runs (other data, confounded configs) or flagged
    checks/pairs.py          each seed pair of a claim, run against run
    checks/validation.py     runs validated on their own test split
    checks/labels.py         a run's variant against its config's expression encoder
    checks/run_checks.py     each run against its own tables (predictions, epochs, replicate seeds)
    checks/selection.py      the one checked path from the runs table to one run per slot
    checks/arms.py           what an arm is, read from its runs (near teacher forcing, a control, sampling)
    checks/dropped.py        the seeds a claim drops, scored beside the kept ones
    checks/registry.py       every guardrail by name, with its scope: what selection and claims run
    checks/protocol.py       how the runs' protocol differs from the paper's
    claims/claims.py         one claim row per comparison
    claims/verdicts.py       a claim's verdict
    claims/targets.py        a verdict against its target and margin (smaller than the paper's?)
    claims/left_out.py       the runs a filter left out of a claim's arms
    claims/exploratory.py    every unplanned pair of arms, with no verdict
    report/report.py         Markdown / LaTeX claim tables, their footer, the training-size figure
    report/forest.py         the forest plot
    report/learning.py       learning curves per arm, and where the arms stand by epoch
    report/summaries.py      infilling accuracy and the training-size curve
    report/alone.py          each arm's accuracy alone beside the paper's
    cli.py                   `psedual analyze table1|table3|infill|curve|compare|report|optuna|study|leakage`
    options.py               each `analyze` command's typed options
    errors.py                one-line errors
    presets.py               the paper's comparisons from parsed options (commands and report alike)
    paper_report.py          `psedual analyze report`: the paper as one Markdown report
    study_report.py          `psedual analyze study`: a grid study's report
    leakage.py               `psedual analyze leakage`: test problems that repeat a training problem, apart
    __main__.py              `python -m analysis`
"""
