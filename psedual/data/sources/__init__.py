"""One module per benchmark source; each turns its files into Problems and counted Skips."""
