"""The tables, in and out: the result tables read with Polars (`read`, the files checked first by
`table_files`), an Optuna sweep's study (`trials`), the paper's published figures (`paper`), a claim as the claims table
stores it (`claim`), and a table rendered as Markdown or LaTeX (`text`). The bottom room of analysis: it imports no other room.
Import-free, as every room's `__init__` is: import the module you use (`from analysis.tables import read`)."""
