"""Training of one solver, with or without the reexamining module, on the CPU, a GPU or as one
rank of a DDP group; it never imports Ray (`psedual/tune` wraps it in Tune trials and Ray Train
workers). Its entry points: `trainer.train` (a `config.TrainConfig`), `test.test_run` (a run
folder's one test) and `solve.solve` (one problem through a checkpoint); what a run writes and
reads is `psedual.results`'."""
