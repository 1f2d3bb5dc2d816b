"""The statistics, each a checked call into scipy or statsmodels: the paired and across-seed tests and
intervals (`stats`), Holm and Benjamini-Hochberg (`multiple`), power and the minimal detectable effect
(`power`), the TOST equivalence test (`equivalence`). Imports only the tables room.
Import-free: import the module you use (`from analysis.stats import power`)."""
