"""Experiment results as Parquet tables: `runs`, `epochs`, `predictions`, partitioned by experiment."""
