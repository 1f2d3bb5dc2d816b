"""Ray Tune sweeps over the trainer: search spaces (`space`), one trial (`trial`), the sweep (`sweep`)."""
