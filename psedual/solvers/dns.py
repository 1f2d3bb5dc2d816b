"""DNS, the deep neural solver (Wang, Liu & Shi, EMNLP 2017), as a sequence decoder.

Encoder: word embeddings -> bidirectional GRU, directions summed. Decoder: an
LSTM over output tokens (operators, constants and number slots as ordinary
vocabulary entries), with Luong attention and input feeding, initialised from
the encoder's final state. It writes prefix expressions; at decoding time a
grammar mask keeps every output well formed: an operator needs two operands,
no token follows a finished expression, and an expression that could not
finish within `max_length` is never started. Slots the problem lacks are masked.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from psedual.solvers.batch import Batch, gold_tokens, preferred_slot_loss
from psedual.solvers.config import SolverConfig, inference
from psedual.solvers.encoder import WordEncoder
from psedual.solvers.rollout import NEG, Pick, Rollout, may_open_operator
from psedual.solvers.vocab import Vocab


@dataclass
class DNSEncoded:
    outputs: torch.Tensor  # [B, T, H]
    mask: torch.Tensor  # [B, T] True for real words
    state: tuple[torch.Tensor, torch.Tensor]  # the decoder's initial (h, c)
    absent: torch.Tensor  # [B, V] output ids the problem lacks (number slots past its count)


class DNS(nn.Module):
    name = "dns"
    may_leave_parameters_unused = False
    reads_subwords = False

    def __init__(self, vocab: Vocab, config: SolverConfig = SolverConfig()) -> None:
        super().__init__()
        self.vocab, self.config = vocab, config
        E, H = config.embedding_size, config.hidden_size
        V = len(vocab.output_tokens)
        self.n_ops, self.start = len(vocab.operators), V  # the start symbol is one extra input id
        self.drop = nn.Dropout(config.dropout)
        self.encoder = WordEncoder(len(vocab.words), config)
        self.out_embed = nn.Embedding(V + 1, E)
        self.cell = nn.LSTMCell(E + H, H)
        self.attn = nn.Linear(H, H, bias=False)
        self.combine = nn.Linear(2 * H, H)
        self.out = nn.Linear(H, V)
        slot0 = self.n_ops + len(vocab.constants)
        self.register_buffer("is_op", torch.arange(V) < self.n_ops, persistent=False)
        self.slot0 = slot0

    def pretrained_parameters(self) -> list[nn.Parameter]:
        return []

    def encode(self, batch: Batch) -> DNSEncoded:
        outputs, h = self.encoder(batch)
        absent = torch.ones(len(batch.problems), len(self.vocab.output_tokens), dtype=torch.bool, device=h.device)
        absent[:, : self.slot0] = False
        absent[:, self.slot0: self.slot0 + batch.num_mask.shape[1]] = ~batch.num_mask
        return DNSEncoded(outputs, batch.words != 0, (h, torch.zeros_like(h)), absent)

    def slot_states(self, enc: DNSEncoded, batch: Batch) -> torch.Tensor:
        B, S = batch.num_pos.shape
        return enc.outputs.gather(1, batch.num_pos.unsqueeze(-1).expand(B, S, enc.outputs.shape[-1]))

    def _step(self, token, state, feed, outputs, mask, absent):
        """One decoder step for rows of (outputs, mask, absent): logits, new state, attentional vector."""
        h, c = self.cell(torch.cat([self.drop(self.out_embed(token)), feed], -1), state)
        # Luong's general score o·(W h), with W applied to h: one [rows, H] product per step,
        # not a projection of all [rows, T, H] encoder states at every step
        energy = torch.bmm(outputs, (h @ self.attn.weight).unsqueeze(-1)).squeeze(-1).masked_fill(~mask, NEG)
        context = torch.bmm(torch.softmax(energy, -1).unsqueeze(1), outputs).squeeze(1)
        vec = torch.tanh(self.combine(torch.cat([h, context], -1)))
        return self.out(self.drop(vec)).masked_fill(absent, NEG), (h, c), vec

    def loss(self, batch: Batch, enc: DNSEncoded | None = None) -> torch.Tensor:
        enc = enc if enc is not None else self.encode(batch)
        outputs, mask, state, absent = enc.outputs, enc.mask, enc.state, enc.absent
        B, L = batch.targets.shape
        d = batch.targets.device
        token = torch.full((B,), self.start, dtype=torch.long, device=d)
        feed = outputs.new_zeros(B, self.config.hidden_size)
        logits = []
        for t in range(L):
            step_logits, state, feed = self._step(token, state, feed, outputs, mask, absent)
            logits.append(step_logits)
            token = batch.targets[:, t].clamp(min=0)
        # the gold positions, in order, by the host-built index (a boolean mask would sync)
        return preferred_slot_loss(torch.stack(logits, 1)[batch.tree.example, batch.tree.position], batch.tree)

    def loss_terms(self, problems) -> int:
        return gold_tokens(problems)

    def decode(self, batch: Batch, beam_size: int = 1, max_length: int = 64,
               greedy: bool = False) -> list[tuple[str, ...]]:
        if beam_size < 1:
            raise ValueError(f"beam_size must be at least 1, got {beam_size}")
        with inference(self):
            tokens = self._search(batch, 1 if greedy else beam_size, max_length, greedy)
        out = self.vocab.output_tokens
        return [tuple(out[t] for t in seq) for seq in tokens]

    def _grammar(self, need: torch.Tensor, length: int, max_length: int) -> torch.Tensor:
        """[rows, V] True where a token may come next: operators only if the expression
        can still close in time; nothing once it is complete."""
        ok_op = (need >= 1) & may_open_operator(need, length, max_length)
        return torch.where(self.is_op, ok_op.unsqueeze(-1), (need >= 1).unsqueeze(-1))

    def rollout(self, batch: Batch, enc: DNSEncoded, pick: Pick, max_length: int) -> Rollout:
        B, H = len(batch.problems), self.config.hidden_size
        state, feed = enc.state, enc.outputs.new_zeros(B, H)
        token = torch.full((B,), self.start, dtype=torch.long, device=feed.device)
        need = torch.ones(B, dtype=torch.long, device=feed.device)
        rows, ids, problems = [], [], torch.arange(B, device=feed.device)
        for length in range(max_length):
            if not (need > 0).any():
                break
            logits, state, feed = self._step(token, state, feed, enc.outputs, enc.mask, enc.absent)
            allowed = self._grammar(need, length, max_length)
            y = pick(logits.masked_fill(~allowed, NEG), problems, length)
            pick_id = y.argmax(-1)
            live = need > 0
            rows.append(y * live.unsqueeze(-1))
            ids.append(torch.where(live, pick_id, -1))
            need = need - live.long() + 2 * (self.is_op[pick_id] & live).long()
            token = pick_id
        if not rows:
            return Rollout(enc.outputs.new_zeros(B, 0, len(self.vocab.output_tokens)),
                           torch.zeros(B, 0, dtype=torch.long, device=feed.device))
        return Rollout(torch.stack(rows, 1), torch.stack(ids, 1))

    def _search(self, batch: Batch, K: int, max_length: int, greedy: bool) -> list[list[int]]:
        enc = self.encode(batch)
        outputs, mask, (h, c), absent = enc.outputs, enc.mask, enc.state, enc.absent
        B, V = len(batch.problems), len(self.vocab.output_tokens)
        # rows are (example, beam)
        outputs, mask, absent, h, c = (x.repeat_interleave(K, 0) for x in (outputs, mask, absent, h, c))
        feed = outputs.new_zeros(B * K, self.config.hidden_size)
        d = feed.device
        token = torch.full((B * K,), self.start, dtype=torch.long, device=d)
        score = torch.full((B, K), float("-inf"), device=d)
        score[:, 0] = 0.0  # all beams start identical: keep one
        need = torch.ones(B * K, dtype=torch.long, device=d)
        history = torch.zeros(B * K, 0, dtype=torch.long, device=d)
        for length in range(max_length):
            if not (need > 0).any():
                break
            logits, (h, c), feed = self._step(token, (h, c), feed, outputs, mask, absent)
            logp = torch.log_softmax(logits, -1).masked_fill(~self._grammar(need, length, max_length), float("-inf"))
            done = need == 0
            logp[done] = float("-inf")
            logp[done, 0] = 0.0  # a finished hypothesis carries on unchanged (its token is dropped below)
            if greedy:
                pick = logp.argmax(-1)
                score = score + logp.gather(1, pick.unsqueeze(1)).view(B, K)
                rows = torch.arange(B * K, device=d)
            else:
                total = (score.view(B * K, 1) + logp).view(B, K * V)
                score, flat = total.topk(K, -1)
                rows = (torch.arange(B, device=d).unsqueeze(1) * K + flat // V).view(-1)
                pick = (flat % V).view(-1)
            was_done = done[rows]
            need = need[rows] - (~was_done).long() + 2 * (self.is_op[pick] & ~was_done).long()
            history = torch.cat([history[rows], torch.where(was_done, -1, pick).unsqueeze(1)], 1)
            h, c, feed = h[rows], c[rows], feed[rows]
            token = pick
        best = torch.where(need.view(B, K) == 0, score, score - 1e9).argmax(-1)  # finished first
        seqs = history.view(B, K, -1)[torch.arange(B, device=d), best]
        return [[t for t in seq.tolist() if t >= 0] for seq in seqs]
