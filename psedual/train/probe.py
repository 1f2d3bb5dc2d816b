"""Does a trained infiller read the expression? The probes of `reexamine.probe` on a run folder.

`probe_run(RUN_DIR)` loads the run's kept checkpoint (best.pt) and its test split, and scores the
infiller from the gold expression as the run's metrics do, then from the same gold scrambled,
beside the rule with no model. An infiller that reads the expression loses accuracy when it is
scrambled; one that reads slot names does not (`tools/infill_probe.py` prints the table).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import torch

from psedual.metrics import infilling_accuracy, perfect_match_ratio
from psedual.reexamine import Reexaminer
from psedual.reexamine import probe
from psedual.results.folder import BEST, RunFolder
from psedual.train import checkpoint
from psedual.train.test import infill
from psedual.train.view import sets, view


@dataclass(frozen=True)
class Score:
    """Infilling from one kind of expression, over the scored test problems."""

    acc: float
    """Share of every masked slot filled right (the paper's Table 4 "Acc": all masked numbers)."""
    pmr: float
    """Share of problems whose every slot is filled right (the paper's perfect match ratio)."""
    acc_used: float
    """Share of the slots the gold expression uses filled right."""


@dataclass(frozen=True)
class InfillProbe:
    """A PseDual run's infiller on its test split, from the gold and from what is not the gold."""

    run: str
    """The run folder."""
    quantity_keys: str
    """What its infiller saw of a quantity (`PseDualConfig.quantity_keys`)."""
    n: int
    """Test problems scored (those the infiller can read)."""
    gold: Score
    """From the gold expression (the run's own test metrics)."""
    scrambled: Score
    """From the gold with operators redrawn and leaves shuffled (the right fillings unchanged)."""
    rule: Score
    """The rule with no model: slot i gets N_i if the gold uses N_i, else unused."""
    in_text_order: float
    """Share of the scored problems whose gold lists its distinct quantities in text order."""
    gold_in_order: Score
    """`gold` over those problems only ("first leaf, first slot" would answer them)."""
    gold_out_of_order: Score
    """`gold` over the other problems (leaf order misleads there)."""


def _score(pred, right) -> Score:
    pairs = [(p, r) for p, r in zip(pred, right) if r is not None]
    pred, right = [p for p, _ in pairs], [r for _, r in pairs]
    return Score(infilling_accuracy(pred, right).value, perfect_match_ratio(pred, right).value,
                 infilling_accuracy(pred, right, used_only=True).value)


def probe_run(run_dir: str | Path, seed: int = 0) -> InfillProbe:
    """The probes on run folder `run_dir` (a PseDual run with best.pt), on the CPU. `seed` draws
    the scrambles and renamings."""
    folder = RunFolder(Path(run_dir))
    out, config = folder.path, folder.config()
    if config.psedual is None:
        raise ValueError(f"{out}: a base run has no infiller to probe")
    splits, info = view(config)
    _, _, test_set, vocab = sets(config, splits, info)
    state = checkpoint.load(folder.file(BEST))
    model = checkpoint.build_model(state, folder.file(BEST), config.solver, vocab)
    reexaminer = Reexaminer(vocab, config.model, config.psedual)
    reexaminer.load_state_dict(state["reexaminer"])
    device = torch.device("cpu")

    def run(show=None) -> Score:
        return _score(*infill(model, reexaminer, test_set, vocab, config.batch_size, device, show=show))

    rng = random.Random(seed)
    scrambles = {p.id: probe.scrambled(p.prefix, vocab.operators, rng) for p in test_set}
    gold = infill(model, reexaminer, test_set, vocab, config.batch_size, device)
    scored = [p for p, r in zip(test_set, gold[1]) if r is not None]
    rule = [probe.name_rule(p) for p in scored]
    order = [probe.in_text_order(p.prefix) for p in test_set]

    def where(keep: bool) -> Score:
        return _score(*([x for x, o in zip(column, order) if o == keep] for column in gold))

    return InfillProbe(str(out), config.psedual.quantity_keys, len(scored), _score(*gold),
                       run(lambda p: scrambles[p.id]),
                       _score([a for a, _ in rule], [b for _, b in rule]),
                       sum(probe.in_text_order(p.prefix) for p in scored) / max(len(scored), 1),
                       where(True), where(False))
