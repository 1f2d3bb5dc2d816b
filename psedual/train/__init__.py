"""Training of one solver, with or without the reexamining module, on the CPU, a GPU or as one
rank of a DDP group; it never imports Ray (`psedual/tune` wraps it in Tune trials and Ray Train
workers)."""
