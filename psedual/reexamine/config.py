"""Typed configuration of the reexamining module (PseDual)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args


@dataclass(frozen=True)
class ExpressionEncoderEntry:
    """One way the infiller reads the solver's expression."""

    implementation: str
    """`module:Class` of the nn.Module, imported only when a reexaminer is built: this registry
    stays torch-free for analysis, and torch-geometric (~1.8 s) loads only for the GCN."""
    label: str
    """The arm's name in tables and reports."""
    about: str
    """What it reads, in a few words, for `--help` and the README's table."""


EXPRESSION_ENCODERS = {
    "gru": ExpressionEncoderEntry("psedual.reexamine.expression:GRUExpressionEncoder", "PseDual-GRU",
                                  "a bidirectional GRU over the expression's prefix tokens"),
    "gcn": ExpressionEncoderEntry("psedual.reexamine.expression:GCNExpressionEncoder", "PseDual-GCN",
                                  "two GCN layers over the expression tree, left and right operands told apart"),
}
"""The expression encoders, by name. The CLI's `--variant` choices, the sweep validation, the
analysis labels and comparisons, and the README's table (`make readme`) are derived from it:
adding an encoder is its module, one line here and a test, then `make readme`."""

BASE = "base"
"""The variant without PseDual: the solver alone."""
VARIANTS = (BASE, *EXPRESSION_ENCODERS)
"""Which PseDual arm a run is, the one name for it everywhere (CLI `--variant`, sweep key,
table column): `base`, or the expression encoder PseDual reads the solver's expressions with."""
Variant = Literal[VARIANTS]
VARIANT_LABELS = {BASE: "base", **{name: entry.label for name, entry in EXPRESSION_ENCODERS.items()}}
NEAR_TEACHER_FORCING = 0.9
PUBLISHED_EPOCHS = 100
"""The run the published code's per-epoch ε schedule was built for: ε0 for its first
`epsilon_hold_epochs` (20) of 100 epochs, then ×`epsilon_epoch_decay` (0.99) per epoch, ending at
0.99^80 = 0.448. The `epoch` schedule scales that shape to the run's own epochs (`schedules`)."""
"""A scheduled-fusion run whose ε ends above this is close to teacher forcing: its runs warn
(`schedules.warning`) and its claims are flagged (`analysis.checks.arms`)."""

# Each choice is one Literal type: the fields' annotations (so the CLI lists the choices), the
# checks below and the sweep validation all read it.
Fusion = Literal["scheduled", "teacher_forcing", "predicted"]
EpsilonSchedule = Literal["horizon", "step", "epoch"]
TauSchedule = Literal["horizon", "step"]
TauReset = Literal["none", "epoch"]
QPGradient = Literal["straight_through", "soft", "none"]
ProblemEncoder = Literal["shared", "separate"]
QuantityKeys = Literal["anonymous", "value", "named"]
Control = Literal["none", "other_problem", "no_expression"]
InfillAverage = Literal["problem", "slot"]
LeafOrder = Literal["written", "shuffled"]
ExpressionEncoder = Literal[tuple(EXPRESSION_ENCODERS)]
FUSIONS = get_args(Fusion)
EPSILON_SCHEDULES = get_args(EpsilonSchedule)
TAU_SCHEDULES = get_args(TauSchedule)
TAU_RESETS = get_args(TauReset)
QP_GRADIENTS = get_args(QPGradient)
PROBLEM_ENCODERS = get_args(ProblemEncoder)
QUANTITY_KEYS = get_args(QuantityKeys)
CONTROLS = get_args(Control)
INFILL_AVERAGES = get_args(InfillAverage)
LEAF_ORDERS = get_args(LeafOrder)


def _choose(name: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ValueError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")


def check_variant(variant: str) -> None:
    _choose("variant", variant, VARIANTS)


@dataclass(frozen=True)
class PseDualConfig:
    """The reexamining module and its schedules; defaults follow the paper."""

    expression_encoder: ExpressionEncoder = "gcn"
    """How the infiller reads an expression: a name in `EXPRESSION_ENCODERS`. Runs and sweeps set it
    through `variant`."""
    fusion: Fusion = "scheduled"
    """`scheduled`: Q = ε·Q_gold + (1−ε)·Q_pred; `teacher_forcing`: ε ≡ 1 (gold only, the paper's
    table-3 ablation, no expression is sampled); `predicted`: ε ≡ 0 (sampled only)."""
    epsilon_schedule: EpsilonSchedule = "horizon"
    """`horizon`: ε decays exponentially from epsilon0 at the first step to exactly
    `epsilon_final` at the run's last step, whatever the dataset size, batch size and epochs;
    `step`: ε_t = epsilon0 · epsilon_decay^t after t optimiser steps (the paper's literal rule,
    whose end point depends on the number of steps); `epoch`: the published code's per-epoch
    schedule scaled to the run: ε = epsilon0 for the same share of its epochs (20 of 100: the first
    20%), then multiplied by one factor per epoch, chosen so that its last epoch ends where the
    published 100-epoch run ends (0.99^80 = 0.448); at 100 epochs it is the published schedule."""
    epsilon0: float = 1.0
    """ε at the first step."""
    epsilon_hold: float = 0.2
    """`horizon` and `step`: the share of the run's steps during which ε stays at epsilon0 (no
    expression is sampled) before it decays; the published code holds ε = 1 for its first 20 of
    100 epochs, because early predicted expressions mislead the infiller. 0: decay from the first
    step (this platform's behaviour before the hold). The `epoch` schedule holds for
    `epsilon_hold_epochs` instead."""
    epsilon_final: float = 0.5
    """`horizon`: ε at the last step (the decay runs from the hold's end to the last step). 0.5 is where the published code's schedule ends after its
    80 epochs (0.99^60 = 0.547), reached here on every dataset."""
    epsilon_decay: float = 0.99999
    """Per-step decay r of the `step` schedule."""
    epsilon_hold_epochs: int = 20
    """Epochs at epsilon0 in the published 100-epoch run of the `epoch` schedule (a run of E
    epochs holds ⌊20·E/100⌋)."""
    epsilon_epoch_decay: float = 0.99
    """Per-epoch decay of the published 100-epoch run of the `epoch` schedule after its hold (a
    shorter run decays faster, to the same end)."""
    tau_schedule: TauSchedule = "horizon"
    """`horizon`: τ decays exponentially from tau0 to exactly `tau_final` at the last step of the
    anneal (the run's, or each epoch's with `tau_reset: epoch`); `step`: Jang et al.'s
    τ = max(tau_min, tau0 · exp(−tau_rate · t)), updated every `tau_interval` steps."""
    tau0: float = 1.0
    """Gumbel-softmax temperature at the first step of the anneal."""
    tau_final: float = 0.5
    """`horizon`: τ at the anneal's last step (the paper anneals towards 0.5)."""
    tau_reset: TauReset = "none"
    """`none`: one anneal over the whole run; `epoch`: the anneal restarts at tau0 every epoch, as
    the paper and the published code describe it."""
    tau_min: float = 0.5
    """`step`: the temperature is never annealed below this."""
    tau_rate: float = 3e-5
    """`step`: annealing rate per step (applied in blocks of `tau_interval` steps)."""
    tau_interval: int = 100
    """`step`: steps between temperature updates."""
    qp_gradient: QPGradient = "straight_through"
    """How the sampled expression Q_pred enters the infiller. `straight_through`: hard one-hot tokens
    forward, the Gumbel-softmax's gradient backward, so τ scales and shapes the gradient that
    reaches the decoder but not the expression read; `soft`: the relaxed Gumbel-softmax rows
    themselves, forward and backward (the token structure from their argmax), so τ also sets how
    sharp the tokens the infiller reads are; `none`: hard tokens without gradient, as the
    published code (τ then changes nothing)."""
    alpha: float = 1.0
    """Weight of the infilling loss: L = L_solve + alpha · L_infill."""
    quantity_keys: QuantityKeys = "anonymous"
    """What the expression encoder sees of a quantity token `N_k`. `anonymous`: one embedding
    shared by every quantity, so only the expression's structure can tell the infiller which
    slot a quantity fills; `value`: that shared embedding plus features of the quantity's value
    (sign, magnitude, integer or not), never its index or position in the problem; `named`: one
    embedding per slot name `N_k`, which *is* the infilling answer (the task is then solved by
    reading names: kept to measure what that leak does)."""
    leaf_order: LeafOrder = "written"
    """The gold expression the infiller reads in training. `written`: as the data writes it;
    `shuffled`: the operands of every `+` and `*` swapped at random (a fresh draw per step and
    problem; the same value and the same quantities). Most golds list their quantities in text
    order, so with names hidden "first leaf, first slot" is a second shortcut; shuffling the
    commutative operands takes it away where order carries no meaning. Tests read the gold as
    written."""
    control: Control = "none"
    """`other_problem`: a control arm that keeps the infilling loss and drops its meaning: each
    problem's slots are filled from the keys of another problem's expressions (the previous one in the
    batch; a batch, or DDP shard, of one problem reads its own), so any gain it gives comes from an
    auxiliary gradient at the number slots, not from reexamining. `no_expression`: a control arm whose
    infiller reads no expression at all, only the masked problem: every quantity's key is the same (zero),
    every slot of the problem a candidate, so the pointer cannot tell the candidates apart and the loss
    teaches, at each masked number, only whether the gold uses it; no expression is encoded or sampled,
    so neither ε nor τ nor the expression encoder (`variant`) changes anything, and the decoder gets no
    infilling gradient. A gain it also shows needs no expression. `none`: each problem reads its own
    expressions."""
    infill_average: InfillAverage = "problem"
    """`problem`: the infilling loss is each problem's mean over its masked numbers, then the mean
    over problems (the published code's); `slot`: one mean over every slot of the batch (a problem
    with many numbers weighs more)."""
    problem_encoder: ProblemEncoder = "shared"
    """`shared`: the masked problem is read through the solver's own encoder pass; `separate`: a
    second word encoder of the same shape, owned by the reexamining module."""
    token_embedding_size: int = 128
    """Embedding size of expression tokens."""
    max_length_factor: int = 2
    """A sampled expression may be at most this times the batch's longest gold expression, plus one."""

    def __post_init__(self) -> None:
        _choose("expression encoder", self.expression_encoder, tuple(EXPRESSION_ENCODERS))
        _choose("fusion", self.fusion, FUSIONS)
        _choose("epsilon schedule", self.epsilon_schedule, EPSILON_SCHEDULES)
        _choose("tau schedule", self.tau_schedule, TAU_SCHEDULES)
        _choose("tau reset", self.tau_reset, TAU_RESETS)
        _choose("qp_gradient", self.qp_gradient, QP_GRADIENTS)
        _choose("problem encoder", self.problem_encoder, PROBLEM_ENCODERS)
        _choose("quantity keys", self.quantity_keys, QUANTITY_KEYS)
        _choose("control", self.control, CONTROLS)
        _choose("infill average", self.infill_average, INFILL_AVERAGES)
        _choose("leaf order", self.leaf_order, LEAF_ORDERS)
        if not 0.0 <= self.epsilon_hold < 1.0:
            raise ValueError(f"epsilon_hold is a share of the run in [0, 1), got {self.epsilon_hold}")
        for name in ("epsilon0", "epsilon_decay", "epsilon_epoch_decay"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        # an exponential decay needs positive ends (0 would be reached only in the limit)
        if self.epsilon_schedule == "horizon" and not 0 < self.epsilon_final <= self.epsilon0:
            raise ValueError(f"need 0 < epsilon_final <= epsilon0, got epsilon_final={self.epsilon_final}, "
                             f"epsilon0={self.epsilon0}")
        if self.tau_schedule == "horizon" and not 0 < self.tau_final <= self.tau0:
            raise ValueError(f"need 0 < tau_final <= tau0, got tau_final={self.tau_final}, tau0={self.tau0}")
        if self.tau_schedule == "step" and not 0 < self.tau_min <= self.tau0:
            raise ValueError(f"need 0 < tau_min <= tau0, got tau_min={self.tau_min}, tau0={self.tau0}")
        if self.tau_rate < 0 or self.alpha < 0:
            raise ValueError(f"tau_rate and alpha must be non-negative, got {self.tau_rate}, {self.alpha}")
        if self.epsilon_hold_epochs >= PUBLISHED_EPOCHS:
            raise ValueError(f"epsilon_hold_epochs holds epochs of the published {PUBLISHED_EPOCHS}-epoch run: it must "
                             f"be below {PUBLISHED_EPOCHS}, got {self.epsilon_hold_epochs}")
        for name in ("epsilon_hold_epochs", "tau_interval", "token_embedding_size", "max_length_factor"):
            if getattr(self, name) < (0 if name == "epsilon_hold_epochs" else 1):
                raise ValueError(f"{name} is too small: {getattr(self, name)}")
