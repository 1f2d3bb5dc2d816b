"""The reexamining module: fill the masked numbers of a problem back in from an expression.

Forward pass, for a batch the solver has just encoded:
1. Masked problem: the state of every number slot. The recurrent solvers already read
   numbers as the [NUM] mask, so with the `shared` encoder these are the solver's own
   encoder states at the slots (one encoder pass serves both; the published code runs a
   second pass per example). `separate` reads the words with an encoder of its own.
2. Q_gold: the gold expression; Q_pred: an expression the solver writes in training mode,
   each token drawn by Gumbel-softmax at temperature τ, straight-through (hard one-hot
   forward, soft gradient backward), `soft` (the relaxed rows forward too) or without
   gradient (`none`). Each problem's Gumbel noise is its own (seeded by one draw of
   torch's RNG per step and the problem's id), so a problem samples the same expression
   whatever batch, order or DDP shard it is in.
3. Each expression is encoded (GRU or GCN over token embeddings); a quantity's key is
   the mean of its node states (a number used twice is pooled). Keys are fused per slot:
   K = ε·K_gold + (1−ε)·K_pred, as the published code fuses them. A quantity token `N_k`
   enters the encoder through what cannot name its slot (`quantity_keys`: one shared
   embedding, or that plus its value's features): `N_k` is the infilling answer, so an
   embedding per name lets the infiller answer by reading names (the `named` option keeps
   that leak, to measure it). The `other_problem` control reads the previous problem's keys;
   the `no_expression` control reads none (every key zero, nothing encoded or sampled).
4. An additive pointer scores, for every masked slot, each quantity present in either
   expression and a learned "unused" key; targets come from the gold expression
   (`targets.allowed_targets`). Loss: cross-entropy, each problem's mean over its slots then
   the mean over problems (`infill_average: problem`, the published code's), or one mean over
   the batch's slots (`slot`).

Nothing here knows a concrete solver: it uses `Solver.encode/slot_states/rollout` only.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from psedual.reexamine import schedules
from psedual.reexamine.config import PseDualConfig
from psedual.reexamine.schedules import Clock
from psedual.reexamine.expression import expression_encoder_class, swap_operands
from psedual.reexamine.targets import allowed_targets, canonical_answers
from psedual.solvers.batch import Batch
from psedual.solvers.config import SolverConfig
from psedual.solvers.encoder import WordEncoder
from psedual.solvers.rollout import NEG, Rollout
from psedual.solvers.tensors import padded_ids, to_device
from psedual.solvers.vocab import Vocab

VALUE_FEATURES = 4
"""sign, log10 magnitude, integer or not, below one (`value_features`)."""


@dataclass
class Infill:
    loss: torch.Tensor
    logits: torch.Tensor
    """[B, S, S + 1] pointer scores of each slot over quantities and "unused" (last)."""
    allowed: torch.Tensor
    """[B, S, S + 1] right answers."""
    epsilon: float
    tau: float | None
    """None when no expression was sampled (ε = 1)."""


def gold_rollout(batch: Batch, V: int) -> Rollout:
    """The gold expressions as one-hot rows."""
    return hard_rollout(batch.targets, V, batch.ids)


def hard_rollout(tokens: torch.Tensor, V: int, ids: list[list[int]] | None = None) -> Rollout:
    """Expressions given as [B, L] -1-padded output ids, as one-hot rows."""
    real = tokens >= 0
    choices = F.one_hot(tokens.clamp(min=0), V).float() * real.unsqueeze(-1)
    return Rollout(choices, tokens, ids)


class Reexaminer(nn.Module):
    def __init__(self, vocab: Vocab, solver_config: SolverConfig, config: PseDualConfig) -> None:
        super().__init__()
        self.vocab, self.config = vocab, config
        H, E = solver_config.hidden_size, config.token_embedding_size
        self.slot0 = len(vocab.operators) + len(vocab.constants)
        self.reads_expressions = config.control != "no_expression"
        if self.reads_expressions:  # the no_expression control builds no reader (DDP: no unused parameters)
            # one row per output token; with anonymous or value keys the slot rows are never read
            self.embed = nn.Parameter(torch.randn(len(vocab.output_tokens), E) * 0.1)
            self.quantity = nn.Parameter(torch.randn(E) * 0.1) if config.quantity_keys != "named" else None
            self.value = nn.Linear(VALUE_FEATURES, E, bias=False) if config.quantity_keys == "value" else None
            self.expression = expression_encoder_class(config.expression_encoder)(E, H, len(vocab.operators),
                                                                                 solver_config.dropout)
        self.problem = WordEncoder(len(vocab.words), solver_config) if config.problem_encoder == "separate" else None
        self.query, self.key = nn.Linear(H, H), nn.Linear(H, H, bias=False)
        self.score = nn.Linear(H, 1, bias=False)
        self.unused = nn.Parameter(torch.randn(H) * 0.1)

    def slot_states(self, solver, batch: Batch, enc) -> torch.Tensor:
        if self.problem is None:
            return solver.slot_states(enc, batch)
        outputs, _ = self.problem(batch)
        B, S = batch.num_pos.shape
        return outputs.gather(1, batch.num_pos.unsqueeze(-1).expand(B, S, outputs.shape[-1]))

    def embedded(self, rollout: Rollout, problems) -> torch.Tensor:
        """[B, L, E] the expression's token embeddings. Operators and constants by their own rows;
        a quantity by `quantity_keys`: its name's row (`named`), or the one shared quantity row
        (plus its value's features with `value`), which is the same whichever slot it names."""
        if self.quantity is None:
            return rollout.choices @ self.embed
        ops = rollout.choices[..., :self.slot0] @ self.embed[:self.slot0]
        quantities = rollout.choices[..., self.slot0:]  # [B, L, slots]: carries the straight-through gradient
        if self.value is None:
            return ops + quantities.sum(-1, keepdim=True) * self.quantity
        features = to_device(value_features(problems, quantities.shape[-1]), quantities.device)
        per_slot = self.quantity + self.value(features.to(self.value.weight.dtype))  # [B, slots, E]
        return ops + torch.bmm(quantities, per_slot.to(quantities.dtype))

    def keys(self, rollout: Rollout, S: int, problems) -> tuple[torch.Tensor, torch.Tensor]:
        """Quantity keys [B, S, H] (mean node state of each slot's occurrences) and [B, S] used."""
        states = self.expression(self.embedded(rollout, problems), rollout.tokens, rollout.ids)
        occurs = rollout.choices[..., self.slot0: self.slot0 + S]  # carries the straight-through gradient
        count = occurs.detach().sum(1)
        keys = torch.einsum("bls,blh->bsh", occurs, states) / count.clamp(min=1).unsqueeze(-1)
        return keys, self._used(rollout.tokens, S)  # from the tokens: soft rows weigh every slot a little

    def pointer(self, slots: torch.Tensor, keys: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """[B, S, S + 1] additive-attention scores of each slot over the present keys and "unused"."""
        B, S, H = keys.shape
        k = self.key(torch.cat([keys, self.unused.expand(B, 1, H)], 1))
        e = self.score(torch.tanh(self.query(slots).unsqueeze(2) + k.unsqueeze(1))).squeeze(-1)
        present = torch.cat([present, present.new_ones(B, 1)], 1)
        return e.masked_fill(~present.unsqueeze(1), NEG)

    def forward(self, solver, batch: Batch, enc, clock: Clock) -> Infill:
        """The infilling loss of a training batch at the optimiser step `clock`."""
        S, V = batch.num_mask.shape[1], len(self.vocab.output_tokens)
        eps, tau = schedules.epsilon(self.config, clock), schedules.tau(self.config, clock)
        slots = self.slot_states(solver, batch, enc)
        if not self.reads_expressions:
            return self._infill(batch, *self._no_keys(slots, batch), slots, eps, None)
        parts = []
        if eps > 0:
            gold = gold_rollout(batch, V) if self.config.leaf_order == "written" else self._shuffled_gold(batch, V)
            parts.append((eps, *self.keys(gold, S, batch.problems)))
        if eps < 1:
            max_length = self.config.max_length_factor * batch.targets.shape[1] + 1
            noise = GumbelNoise([p.id for p in batch.problems], max_length, V, slots.device)
            rollout = solver.rollout(batch, enc, self._pick(tau, noise), max_length)
            parts.append((1 - eps, *self.keys(rollout, S, batch.problems)))
        if self.config.control == "other_problem":
            # each problem reads the previous one's expressions (the first reads the last; its own sample
            # still takes the gradient)
            parts = [(w, k.roll(1, 0), u.roll(1, 0)) for w, k, u in parts]
        keys = sum(w * k for w, k, _ in parts)
        # a gold quantity the sample lacks keeps a (zero) key: it is still the right answer
        present = torch.stack([u for _, _, u in parts] + [self._used(batch.targets, S)]).any(0)
        if self.config.control == "other_problem":
            # every slot is a candidate: marking this problem's gold quantities would give back
            # part of what the control takes away
            present = batch.num_mask.bool()
        return self._infill(batch, keys, present, slots, eps, tau if eps < 1 else None)

    def _infill(self, batch: Batch, keys: torch.Tensor, present: torch.Tensor, slots: torch.Tensor, eps: float,
                tau: float | None) -> Infill:
        """The pointer over `keys` and the loss against the gold's right fillings."""
        S = batch.num_mask.shape[1]
        logits = self.pointer(slots, keys, present)
        allowed = allowed_targets(batch.problems, batch.ids if batch.ids is not None else batch.targets, self.slot0, S,
                                  logits.device)
        loss = _loss(logits, allowed, batch.slots, self._slot_weights(batch.problems, S, logits.device))
        return Infill(loss, logits, allowed, eps, tau)

    @staticmethod
    def _no_keys(slots: torch.Tensor, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """The `no_expression` control's keys: all zero, every slot of the problem a candidate."""
        return slots.new_zeros(slots.shape), batch.num_mask.bool()

    def loss_terms(self, problems) -> int:
        """The terms the infilling loss averages over: problems with a number (`problem`), or every
        number of every problem (`slot`)."""
        if self.config.infill_average == "problem":
            return sum(1 for p in problems if p.num_pos)
        return sum(len(p.num_pos) for p in problems)

    def _slot_weights(self, problems, S: int, device: torch.device) -> torch.Tensor | None:
        """[slots] each real slot's weight in the loss (`Batch.slots` order: known on the host), or
        None for one flat mean."""
        if self.config.infill_average == "slot":
            return None
        n = sum(1 for p in problems if p.num_pos)
        return to_device(torch.tensor([1 / (len(p.num_pos) * n) for p in problems for _ in p.num_pos]), device)

    def _shuffled_gold(self, batch: Batch, V: int) -> Rollout:
        """The gold expressions with `+` and `*` operands swapped at random: each problem's draws
        its own (seeded by one draw of torch's RNG and its id, as `GumbelNoise`), so a problem
        reads the same expression in any batch, order or DDP shard."""
        base = int(torch.randint(0, 2 ** 62, (1,)).item())
        ops = self.vocab.operators
        commutative = {ops.index(o) for o in ("+", "*") if o in ops}
        rows = batch.ids if batch.ids is not None else [[t for t in r if t >= 0] for r in batch.targets.tolist()]
        swapped = []
        for p, row in zip(batch.problems, rows):
            g = torch.Generator().manual_seed(_seed(f"{base}/{p.id}/leaves"))
            swapped.append(swap_operands(row, len(ops), commutative,
                                         lambda: bool(torch.randint(0, 2, (1,), generator=g).item())))
        return hard_rollout(to_device(padded_ids(swapped, batch.targets.shape[1]), batch.targets.device), V, swapped)

    def _used(self, tokens: torch.Tensor, S: int) -> torch.Tensor:
        """[B, S] whether each slot occurs among the output ids `tokens` [B, L]."""
        slots = torch.arange(S, device=tokens.device) + self.slot0
        return (tokens.unsqueeze(-1) == slots).any(1)

    def _pick(self, tau: float, noise: GumbelNoise):
        """Gumbel-softmax at temperature τ over each problem's own noise (F.gumbel_softmax draws its
        own noise for the rows it is handed, which would tie a problem's sample to its batch)."""
        mode = self.config.qp_gradient

        def pick(scores: torch.Tensor, rows: torch.Tensor, position: int) -> torch.Tensor:
            soft = F.softmax((scores + noise(rows, position, scores.shape[-1])) / tau, -1)
            if mode == "soft":
                return soft
            hard = F.one_hot(soft.argmax(-1), scores.shape[-1]).to(soft.dtype)
            return hard if mode == "none" else hard - soft.detach() + soft

        return pick

    @torch.no_grad()
    def infill_gold(self, solver, batch: Batch, shown: torch.Tensor | None = None) -> tuple[list[list[int]], list[list[int]]]:
        """Predicted and right fillings (canonical slots, see `targets`) from the gold
        expressions, as the paper's infilling accuracy and perfect-match ratio use them.
        `shown` ([B, L] -1-padded output ids): what the infiller reads in their place (a probe's
        scrambled or renamed gold); the right fillings still come from the gold.
        Call with both modules in eval mode."""
        S, V = batch.num_mask.shape[1], len(self.vocab.output_tokens)
        slots = self.slot_states(solver, batch, solver.encode(batch))
        if self.reads_expressions:
            read = gold_rollout(batch, V) if shown is None else hard_rollout(shown.to(batch.targets.device), V)
            keys, present = self.keys(read, S, batch.problems)
        else:  # what it was trained on: no expression (its ties go to the first candidate)
            keys, present = self._no_keys(slots, batch)
        logits = self.pointer(slots, keys, present)
        return canonical_answers(batch.problems, batch.targets, logits.argmax(-1), self.slot0)


class GumbelNoise:
    """Standard Gumbel noise for each problem, choice position and option, from generators of its
    own, seeded by one draw of torch's global RNG (so runs stay seeded and resumable) and the
    problem's id. Choices over the V output tokens read one [length, V] table per problem; a
    solver that chooses among more options (RE-Deduction's pair × operator steps) gets a draw
    seeded by the position too."""

    def __init__(self, ids: list[str], length: int, V: int, device: torch.device) -> None:
        self.base = int(torch.randint(0, 2 ** 62, (1,)).item())
        self.ids, self.V, self.device = ids, V, device
        self.table = to_device(torch.stack([_gumbel(self._seed(i), (length, V)) for i in ids]), device)

    def _seed(self, problem_id: str, position: int | None = None) -> int:
        return _seed(f"{self.base}/{problem_id}" + ("" if position is None else f"/{position}"))

    def __call__(self, rows: torch.Tensor, position: int, options: int) -> torch.Tensor:
        """[len(rows), options] noise for problems `rows` at choice `position`."""
        if options <= self.V:
            return self.table[rows, position, :options]
        # drawn on the host (each problem's generator): `rows` on the host costs no read, and the
        # copy to the device does not wait
        return to_device(torch.stack([_gumbel(self._seed(self.ids[r], position), (options,))
                                      for r in rows.tolist()]), self.device)


def _seed(key: str) -> int:
    """A generator seed from a string (stable across processes, unlike `hash`)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little") >> 1


def _gumbel(seed: int, shape: tuple[int, ...]) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return -torch.empty(shape).exponential_(generator=g).log()


def value_features(problems, slots: int) -> torch.Tensor:
    """[B, slots, VALUE_FEATURES] what a quantity's value says without naming its slot: sign,
    log10 of its magnitude (0 for 0), whether it is an integer, whether its magnitude is below 1.
    Zeros past a problem's numbers."""
    out = torch.zeros(len(problems), slots, VALUE_FEATURES)
    for b, p in enumerate(problems):
        for k, v in enumerate(p.values()[:slots]):
            size = abs(v)
            out[b, k] = torch.tensor([(v > 0) - (v < 0), math.log10(size) if size else 0.0,
                                      float(v.denominator == 1), float(size < 1)])
    return out


def _loss(logits: torch.Tensor, allowed: torch.Tensor, slots: torch.Tensor,
          weights: torch.Tensor | None = None) -> torch.Tensor:
    """Cross-entropy over the real slots, `slots` their flat indices (`Batch.slots`: known on the
    host, so neither the count nor the selection makes the GPU wait); a weighted sum with
    `weights` (one per slot, summing to 1), else the mean."""
    # A number stated twice has several right answers: train towards the one preferred.
    if not len(slots):  # no numbers to infill in this batch
        return logits.sum() * 0.0
    target = logits.detach().masked_fill(~allowed, float("-inf")).argmax(-1)
    rows = logits.flatten(0, 1).index_select(0, slots)
    target = target.flatten().index_select(0, slots)
    if weights is None:
        return F.cross_entropy(rows, target)
    return (F.cross_entropy(rows, target, reduction="none") * weights.to(rows.dtype)).sum()
