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
   K = ε·K_gold + (1−ε)·K_pred, as the published code fuses them.
4. An additive pointer scores, for every masked slot, each quantity present in either
   expression and a learned "unused" key; targets come from the gold expression
   (`targets.allowed_targets`). Loss: cross-entropy averaged over the batch's slots.

Nothing here knows a concrete solver: it uses `Solver.encode/slot_states/rollout` only.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from psedual.reexamine import schedules
from psedual.reexamine.config import PseDualConfig
from psedual.reexamine.schedules import Clock
from psedual.reexamine.expression import expression_encoder_class
from psedual.reexamine.targets import allowed_targets, canonical_answers
from psedual.solvers.batch import Batch
from psedual.solvers.config import SolverConfig
from psedual.solvers.encoder import WordEncoder
from psedual.solvers.rollout import NEG, Rollout
from psedual.solvers.tensors import to_device
from psedual.solvers.vocab import Vocab


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
    real = batch.targets >= 0
    choices = F.one_hot(batch.targets.clamp(min=0), V).float() * real.unsqueeze(-1)
    return Rollout(choices, batch.targets, batch.ids)


class Reexaminer(nn.Module):
    def __init__(self, vocab: Vocab, solver_config: SolverConfig, config: PseDualConfig) -> None:
        super().__init__()
        self.vocab, self.config = vocab, config
        H, E = solver_config.hidden_size, config.token_embedding_size
        self.slot0 = len(vocab.operators) + len(vocab.constants)
        self.embed = nn.Parameter(torch.randn(len(vocab.output_tokens), E) * 0.1)
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

    def keys(self, rollout: Rollout, S: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Quantity keys [B, S, H] (mean node state of each slot's occurrences) and [B, S] used."""
        states = self.expression(rollout.choices @ self.embed, rollout.tokens, rollout.ids)
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
        parts = []
        if eps > 0:
            parts.append((eps, *self.keys(gold_rollout(batch, V), S)))
        if eps < 1:
            max_length = self.config.max_length_factor * batch.targets.shape[1] + 1
            noise = GumbelNoise([p.id for p in batch.problems], max_length, V, slots.device)
            parts.append((1 - eps, *self.keys(solver.rollout(batch, enc, self._pick(tau, noise), max_length), S)))
        keys = sum(w * k for w, k, _ in parts)
        # a gold quantity the sample lacks keeps a (zero) key: it is still the right answer
        present = torch.stack([u for _, _, u in parts] + [self._used(batch.targets, S)]).any(0)
        logits = self.pointer(slots, keys, present)
        allowed = allowed_targets(batch.problems, batch.ids if batch.ids is not None else batch.targets, self.slot0, S,
                                  logits.device)
        return Infill(_loss(logits, allowed, batch.slots), logits, allowed, eps, tau if eps < 1 else None)

    @staticmethod
    def loss_terms(problems) -> int:
        """Slots the infilling loss averages over (every number of every problem)."""
        return sum(len(p.num_pos) for p in problems)

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
    def infill_gold(self, solver, batch: Batch) -> tuple[list[list[int]], list[list[int]]]:
        """Predicted and right fillings (canonical slots, see `targets`) from the gold
        expressions, as the paper's infilling accuracy and perfect-match ratio use them.
        Call with both modules in eval mode."""
        S, V = batch.num_mask.shape[1], len(self.vocab.output_tokens)
        keys, present = self.keys(gold_rollout(batch, V), S)
        logits = self.pointer(self.slot_states(solver, batch, solver.encode(batch)), keys, present)
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
        key = f"{self.base}/{problem_id}" + ("" if position is None else f"/{position}")
        return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little") >> 1

    def __call__(self, rows: torch.Tensor, position: int, options: int) -> torch.Tensor:
        """[len(rows), options] noise for problems `rows` at choice `position`."""
        if options <= self.V:
            return self.table[rows, position, :options]
        return torch.stack([_gumbel(self._seed(self.ids[r], position), (options,))
                            for r in rows.tolist()]).to(self.device)


def _gumbel(seed: int, shape: tuple[int, ...]) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return -torch.empty(shape).exponential_(generator=g).log()


def _loss(logits: torch.Tensor, allowed: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over the real slots, `slots` their flat indices (`Batch.slots`: known on the
    host, so neither the count nor the selection makes the GPU wait)."""
    # A number stated twice has several right answers: train towards the one preferred.
    if not len(slots):  # no numbers to infill in this batch
        return logits.sum() * 0.0
    target = logits.detach().masked_fill(~allowed, float("-inf")).argmax(-1)
    rows = logits.flatten(0, 1).index_select(0, slots)
    return F.cross_entropy(rows, target.flatten().index_select(0, slots))
