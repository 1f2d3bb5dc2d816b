"""`psedual analyze optuna`: an Optuna sweep's study, opened from the file beside its experiment
(psedual/tune/study.py), as Optuna's own plots and the best trials per arm.

The study is Optuna's JournalStorage file `<root>/<experiment>/optuna.journal`, named as the
experiment; a remote root's copy is read into a temporary file first. The plots are
`optuna.visualization.matplotlib`'s, written as PNG (Agg: no display needed): the optimisation
history, each trial's per-epoch values (its reports to the searcher) and the parameters'
importances (PED-ANOVA, which needs no scikit-learn; fANOVA does).
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

from psedual.storage import filesystem, study_uri

PLOTS = ("history", "intermediate", "importances")
"""The PNGs written, `<out>/optuna_<name>.png`."""


def load(root: str, experiment: str):
    """The experiment's Optuna study, read-only in spirit (nothing is written to it)."""
    import optuna
    import pyarrow.fs as pafs
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    uri = study_uri(root, experiment)
    fs, fs_path = filesystem(uri)
    if fs.get_file_info(fs_path).type != pafs.FileType.File:
        raise ValueError(f"no Optuna study for experiment {experiment!r} at {uri} (only Optuna sweeps have one: "
                         "mode optuna)")
    path = uri
    if "://" in uri:  # Optuna reads a local file
        path = str(Path(tempfile.mkdtemp(prefix="psedual-study-")) / Path(fs_path).name)
        with fs.open_input_stream(fs_path) as src:
            Path(path).write_bytes(src.read())
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.load_study(study_name=experiment, storage=JournalStorage(JournalFileBackend(path)))


def best_per_arm(study) -> list[dict]:
    """Each arm's best complete trial (the arm: the trial's `variant` attribute, set when it was
    drawn), best first: number, arm, value, params and Ray trial id."""
    import optuna

    best: dict[str, optuna.trial.FrozenTrial] = {}
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        arm = str(trial.user_attrs.get("variant", trial.params.get("variant", "-")))
        if arm not in best or trial.value > best[arm].value:
            best[arm] = trial
    rows = [{"arm": arm, "number": t.number, "value": t.value, "trial": t.user_attrs.get("trial", "-"),
             "params": {k: v for k, v in t.params.items() if k != "variant"}} for arm, t in best.items()]
    return sorted(rows, key=lambda r: -r["value"])


def plots(study, out: Path) -> tuple[list[Path], list[str]]:
    """Optuna's matplotlib plots of the study as PNGs in `out`; (written, skipped with the reason)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display
    import matplotlib.pyplot as plt
    import optuna
    from optuna.visualization import matplotlib as ovm

    out.mkdir(parents=True, exist_ok=True)
    makers = {"history": lambda: ovm.plot_optimization_history(study),
              "intermediate": lambda: ovm.plot_intermediate_values(study),
              "importances": lambda: ovm.plot_param_importances(
                  study, evaluator=optuna.importance.PedAnovaImportanceEvaluator())}
    written, skipped = [], []
    for name in PLOTS:
        try:
            with warnings.catch_warnings():  # Optuna marks its matplotlib plots experimental, on every call
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                axes = makers[name]()
        except (ValueError, RuntimeError) as err:  # e.g. too few complete trials for importances
            skipped.append(f"{name}: {err}")
            continue
        path = out / f"optuna_{name}.png"
        axes.figure.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(axes.figure)
        written.append(path)
    return written, skipped
