"""Single-process training of a solver; Ray (later) wraps this, it never needs Ray."""
