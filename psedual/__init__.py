"""PseDual Lab: data, solvers and pseudo-dual training for math word problems.

The package reads in one direction, down the layers `psedual.layers` lists.
"""
