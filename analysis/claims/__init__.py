"""Claims: one claim per planned comparison (`claims`), its verdict (`verdicts`, its rule in words
`verdict_rule.md`), the runs a filter left out of it (`left_out`), and every unplanned pair of arms, shown with no
verdict (`exploratory`). Imports only lower rooms (tables, stats, checks). Import-free: import the
module you use (`from analysis.claims import claims`)."""
