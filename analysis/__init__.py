"""Analysis of PseDual Lab's result tables: Polars queries, significance checks, paper tables.

Reads the Parquet tables that `tune.py` writes (`<root>/{runs,epochs,predictions}/experiment=<name>/`)
with Polars, tests differences with scipy, and prints Markdown/LaTeX tables and a PNG figure.
It imports neither torch nor Ray, so it runs where only the tables are; of the `psedual` package
it reads only what is plain Python: the registries (arm labels, datasets' folds), the atomic
writer, the storage root and table names, the best-epoch rule, the data-identity hash, the unused-slot
marker and the row records, which say what is an outcome (tests/test_analysis.py checks the list).

    read.py      lazy scans of the tables and selection by config
    table_files.py  a root's files checked before a scan (errors name the file or folder)
    stats.py     the paired, across-seed and interval computations (scipy)
    multiple.py  Holm and Benjamini-Hochberg over a family of comparisons
    claims.py    one claim row per comparison
    guardrails.py  what is refused between runs (other data, confounded configs) or flagged
    run_checks.py  each run against its own tables (predictions, epochs, replicate seeds)
    selection.py the one checked path from the runs table to one run per slot
    summaries.py infilling accuracy and the training-size curve
    alone.py     each arm's accuracy alone beside the paper's (a Table 1 with no PseDual arm)
    learning.py  learning curves per arm, and where the arms stand by epoch
    presets.py   the paper's comparisons from parsed options (commands and report alike)
    report.py    Markdown / LaTeX tables, the training-size figure
    paper.py     the paper's published figures (paper_numbers.csv)
    paper_report.py  `psedual analyze report`: the paper as one Markdown report
    errors.py    one-line errors
    options.py   each `analyze` command's typed options
    cli.py       `psedual analyze table1|table3|infill|curve|compare|report`
"""
