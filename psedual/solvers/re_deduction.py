"""RE-Deduction (Jie, Li & Lu, ACL 2022): an expression deduced step by step, each step a
relation extracted between two quantities.

Quantities are the constants (learned vectors) and the problem's number slots (the
pretrained encoder's states at the slots), then every quantity a step creates. A step
scores each pair i ≤ j of current quantities under each operator, the non-commutative
ones also reversed (`-r`: q_j − q_i), makes the chosen pair's new quantity, lets every
quantity read it (a GRU cell: the "rationalizer"), and decides whether that quantity is
the answer (stop). Gold steps come from the gold expression, children before parents
(post-order). Beam search at inference. The steps are turned back into our prefix form,
so metrics, tables and `psedual solve` need nothing of their own.

A quantity index: constant c → c; slot k → C + k (so a leaf's output id is n_ops + its
index, as in the vocabulary); step t's result → C + S + t, with S the batch's slot width.

For the reexamining module, `rollout` turns each sampled step (a one-hot over pair ×
operator options, straight-through) into token rows by linear maps: an operator token's
row sums the options by operator, an operand's row sums them by which leaf sits on that
side; so the infilling gradient reaches the pair and operator scores.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from psedual.solvers.batch import Batch
from psedual.solvers.config import SolverConfig, inference
from psedual.solvers.plm import PLMEncoder
from psedual.solvers.rollout import NEG, Pick, Rollout
from psedual.solvers.tensors import padded_ids, to_device
from psedual.solvers.vocab import Vocab

NON_COMMUTATIVE = ("-", "/", "^")


def deduction_ops(operators: tuple[str, ...]) -> list[tuple[int, bool]]:
    """The step operators: (operator index, reversed), the vocabulary's operators first, then the
    non-commutative ones reversed."""
    return [(o, False) for o in range(len(operators))] + \
           [(o, True) for o, name in enumerate(operators) if name in NON_COMMUTATIVE]


def gold_steps(ids: list[int], n_ops: int, n_leaves: int, ops: list[tuple[int, bool]]) -> list[tuple[int, int, int]]:
    """The steps (i, j, step operator) with i ≤ j that build a prefix expression of output ids,
    children first; `n_leaves` = C + S (the index of step 0's result)."""
    steps: list[tuple[int, int, int]] = []
    op_index = {key: k for k, key in enumerate(ops)}

    def build(pos: int) -> tuple[int, int]:  # (quantity index, next position)
        token = ids[pos]
        if token >= n_ops:
            return token - n_ops, pos + 1
        a, pos = build(pos + 1)
        b, pos = build(pos)
        swap = a > b
        if swap and (token, True) not in op_index:  # commutative: order the pair
            a, b, swap = b, a, False
        i, j = (b, a) if swap else (a, b)
        steps.append((i, j, op_index[(token, swap)]))
        return n_leaves + len(steps) - 1, pos

    build(0)
    return steps


def steps_to_prefix(steps: list[tuple[int, int, int]], n_ops: int, n_leaves: int,
                    ops: list[tuple[int, bool]]) -> list[int]:
    """Output ids of the expression the last step's quantity stands for."""
    def emit(q: int) -> list[int]:
        if q < n_leaves:
            return [n_ops + q]
        i, j, k = steps[q - n_leaves]
        o, reverse = ops[k]
        left, right = (j, i) if reverse else (i, j)
        return [o] + emit(left) + emit(right)

    return emit(n_leaves + len(steps) - 1) if steps else []


def pairs(n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices (i, j), i ≤ j, of n quantities, in a fixed order (that of torch.triu_indices)."""
    ij = torch.triu_indices(n, n, device=device)
    return ij[0], ij[1]


def pair_index(i: int, j: int, n: int) -> int:
    """Position of the pair (i, j), i ≤ j, in `pairs(n)`: row i starts after rows 0..i-1."""
    return i * n - i * (i - 1) // 2 + (j - i)


@dataclass
class DeductionEncoded:
    outputs: torch.Tensor  # [B, T, H] word states
    leaves: torch.Tensor  # [B, C + S, H] constants, then number slots
    leaf_mask: torch.Tensor  # [B, C + S] True for a quantity the problem has


class REDeduction(nn.Module):
    name = "re_deduction"
    reads_subwords = True
    may_leave_parameters_unused = True  # the rationalizer, when every expression of a batch is one step

    def __init__(self, vocab: Vocab, config: SolverConfig = SolverConfig()) -> None:
        super().__init__()
        self.vocab, self.config = vocab, config
        H = config.hidden_size
        self.n_ops, self.C = len(vocab.operators), len(vocab.constants)
        self.ops = deduction_ops(vocab.operators)
        K = len(self.ops)
        self.encoder = PLMEncoder(config)
        self.constants = nn.Parameter(torch.randn(self.C, H) * 0.1)
        self.drop = nn.Dropout(config.dropout)
        # a pair's hidden state from [q_i, q_j, q_i ∘ q_j], split so the halves are computed once per quantity
        self.pair_i, self.pair_j, self.pair_ij = nn.Linear(H, H), nn.Linear(H, H, bias=False), nn.Linear(H, H, bias=False)
        self.score = nn.Linear(H, K)  # each step operator's score of a pair
        self.make = nn.Parameter(torch.randn(K, H, H) * H ** -0.5)  # the new quantity, per step operator
        self.make_bias = nn.Parameter(torch.zeros(K, H))
        self.stop = nn.Linear(H, 1)
        self.rationalizer = nn.GRUCell(H, H)

    # --- encoder ------------------------------------------------------------------------

    def pretrained_parameters(self) -> list[nn.Parameter]:
        return list(self.encoder.plm.parameters())

    def encode(self, batch: Batch) -> DeductionEncoded:
        outputs, _ = self.encoder(batch)
        B, S = batch.num_pos.shape
        slots = outputs.gather(1, batch.num_pos.unsqueeze(-1).expand(B, S, outputs.shape[-1]))
        leaves = torch.cat([self.constants.unsqueeze(0).expand(B, -1, -1), slots], 1)
        mask = torch.cat([torch.ones(B, self.C, dtype=torch.bool, device=slots.device), batch.num_mask], 1)
        return DeductionEncoded(outputs, leaves, mask)

    def slot_states(self, enc: DeductionEncoded, batch: Batch) -> torch.Tensor:
        return enc.leaves[:, self.C:]

    # --- one step ---------------------------------------------------------------------------

    def _pair_hidden(self, q: torch.Tensor, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
        """[R, P, H] hidden state of pairs (i, j) of quantities q [R, Q, H]."""
        qi, qj = q[:, i], q[:, j]
        return torch.tanh(self.pair_i(self.drop(qi)) + self.pair_j(self.drop(qj)) + self.pair_ij(self.drop(qi * qj)))

    def _options(self, q: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Scores [R, P·K] of every (pair, step operator) of quantities q [R, Q, H] (mask [R, Q]),
        the pairs' hidden states [R, P, H], and the pair indices i, j [P]."""
        i, j = pairs(q.shape[1], q.device)
        hidden = self._pair_hidden(q, i, j)
        scores = self.score(hidden)  # [R, P, K]
        ok = (mask[:, i] & mask[:, j]).unsqueeze(-1)
        return scores.masked_fill(~ok, NEG).flatten(1), hidden, i, j

    def _make(self, hidden: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """New quantities [R, H] from chosen pairs' hidden states [R, H] under step operators k [R]."""
        return torch.tanh(torch.einsum("rh,rhg->rg", hidden, self.make[k]) + self.make_bias[k])

    def _absorb(self, q: torch.Tensor, mask: torch.Tensor, new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Every quantity reads the new one, which is appended."""
        R, Q, H = q.shape
        updated = self.rationalizer(new.unsqueeze(1).expand(R, Q, H).reshape(R * Q, H), q.reshape(R * Q, H))
        q = torch.cat([updated.view(R, Q, H), new.unsqueeze(1)], 1)
        return q, torch.cat([mask, mask.new_ones(R, 1)], 1)

    # --- teacher forcing ----------------------------------------------------------------

    def loss(self, batch: Batch, enc: DeductionEncoded | None = None) -> torch.Tensor:
        """Mean over gold steps of the step's cross-entropy plus its stop decision's."""
        enc = enc if enc is not None else self.encode(batch)
        B, n_leaves = enc.leaves.shape[:2]
        gold = [gold_steps([t for t in row if t >= 0], self.n_ops, n_leaves, self.ops)
                for row in batch.targets.tolist()]
        q, mask = enc.leaves, enc.leaf_mask
        total, K = enc.leaves.new_zeros(()), len(self.ops)
        for t in range(max(map(len, gold), default=0)):
            live = torch.tensor([len(g) > t for g in gold], device=q.device)
            scores, hidden, _, _ = self._options(q, mask)
            target = torch.tensor([pair_index(g[t][0], g[t][1], q.shape[1]) * K + g[t][2] if len(g) > t else 0
                                   for g in gold], device=q.device)
            total = total + F.cross_entropy(scores, target, reduction="none")[live].sum()
            chosen = hidden[torch.arange(B, device=q.device), target // K]
            new = self._make(chosen, target % K)
            last = torch.tensor([len(g) == t + 1 for g in gold], dtype=new.dtype, device=q.device)
            stop = F.binary_cross_entropy_with_logits(self.stop(self.drop(new)).squeeze(-1), last, reduction="none")
            total = total + stop[live].sum()
            q, mask = self._absorb(q, mask, new)
        return total / max(1, sum(map(len, gold)))

    def loss_terms(self, problems) -> int:
        return sum(sum(1 for t in p.prefix if t in self.vocab.operators) for p in problems)

    # --- decoding -----------------------------------------------------------------------

    def decode(self, batch: Batch, beam_size: int = 1, max_length: int = 64,
               greedy: bool = False) -> list[tuple[str, ...]]:
        if beam_size < 1:
            raise ValueError(f"beam_size must be at least 1, got {beam_size}")
        out = self.vocab.output_tokens
        with inference(self):
            enc = self.encode(batch)
            n_leaves = enc.leaves.shape[1]
            results = []
            for b in range(len(batch.problems)):
                steps = self._beam(enc.leaves[b:b + 1], enc.leaf_mask[b:b + 1], 1 if greedy else beam_size,
                                   max(1, (max_length - 1) // 2))
                results.append(tuple(out[t] for t in steps_to_prefix(steps, self.n_ops, n_leaves, self.ops)))
        return results

    def _beam(self, q: torch.Tensor, mask: torch.Tensor, K: int, max_steps: int) -> list[tuple[int, int, int]]:
        """Beam search over steps for one problem: hypotheses (log-probability, steps, q, mask)."""
        n_ops = len(self.ops)
        live = [(0.0, [], q, mask)]
        done: list[tuple[float, list]] = []
        for t in range(max_steps):
            q_all, mask_all = torch.cat([h[2] for h in live]), torch.cat([h[3] for h in live])
            scores, hidden, i, j = self._options(q_all, mask_all)
            logp = torch.log_softmax(scores, -1)
            top, flat = logp.topk(min(K, logp.shape[1]), -1)
            rows = torch.arange(len(live)).unsqueeze(1).expand_as(flat).flatten()
            flat, top = flat.flatten(), top.flatten()
            new = self._make(hidden[rows, flat // n_ops], flat % n_ops)
            stop_logit = self.stop(new).squeeze(-1)
            stop, go = F.logsigmoid(stop_logit), F.logsigmoid(-stop_logit)
            grown = []
            for c in range(len(rows)):
                r, option = int(rows[c]), int(flat[c])
                score, steps = live[r][0] + float(top[c]), live[r][1] + [(int(i[option // n_ops]), int(j[option // n_ops]),
                                                                          option % n_ops)]
                done.append((score + float(stop[c]), steps))
                if t + 1 < max_steps:
                    grown.append((score + float(go[c]), steps, r, c))
            grown.sort(key=lambda g: -g[0])
            grown = grown[:K]
            best_done = max(d[0] for d in done)
            if not grown or best_done >= grown[0][0]:  # scores only fall: no live hypothesis can win
                break
            live = []
            for score, steps, r, c in grown:
                live.append((score, steps, *self._absorb(q_all[r:r + 1], mask_all[r:r + 1], new[c:c + 1])))
        return max(done, key=lambda d: d[0])[1]

    # --- sampling for the reexamining module --------------------------------------------

    def rollout(self, batch: Batch, enc: DeductionEncoded, pick: Pick, max_length: int) -> Rollout:
        """Sample steps (each a one-hot over pair × step-operator options, from `pick`, with its
        gradient); stop when the stop score says so (no gradient), or at the step limit.

        The host reads the device once a step (whether any problem still deduces: the loop ends
        where it always did, so dropout draws what it always drew) and once at the end (every
        step's option and which problems took it); the problems `pick` is told of are a host
        tensor, so its noise needs no read either. Before, each step read every problem's option,
        pair and state one by one."""
        B, n_leaves = enc.leaves.shape[:2]
        V, n_ops = len(self.vocab.output_tokens), len(self.ops)
        device = enc.leaves.device
        op_of, reverse = to_device(torch.tensor([[o for o, _ in self.ops], [r for _, r in self.ops]]), device)
        reverse = reverse.bool()
        max_steps = max(1, (max_length - 1) // 2)
        q, mask = enc.leaves, enc.leaf_mask
        live = torch.ones(B, dtype=torch.bool, device=device)
        problems = torch.arange(B)  # on the host: `pick` hands them to the noise, which is drawn there
        every = torch.arange(B, device=device)
        options, taken, rows = [], [], []  # per step: [B] option, [B] whether it was taken, [B, 3, V] token rows
        for t in range(max_steps):
            scores, hidden, i, j = self._options(q, mask)
            y = pick(scores, problems, t)  # [B, P·K]
            option = y.argmax(-1)
            new = self._make(hidden[every, option // n_ops], option % n_ops)
            # token rows: the operator's, and each side's leaf (the mass on intermediates is not a token)
            y3 = y.view(B, -1, n_ops)
            op_row = y.new_zeros(B, V).index_add(1, op_of, y3.sum(1))
            first = torch.where(reverse, j.unsqueeze(1), i.unsqueeze(1))  # [P, K] left operand's quantity
            second = torch.where(reverse, i.unsqueeze(1), j.unsqueeze(1))
            side_rows = []
            for side in (first, second):
                dist = y.new_zeros(B, q.shape[1]).index_add(1, side.flatten(), y)[:, :n_leaves]
                side_rows.append(F.pad(dist, (self.n_ops, V - self.n_ops - n_leaves)))
            stop = (self.stop(new).squeeze(-1) > 0) | (t + 1 == max_steps)
            options.append(option)
            taken.append(live)
            rows.append(torch.stack([op_row, *side_rows], 1))
            live = live & ~stop
            if not live.any():  # the step's one read
                break
            q, mask = self._absorb(q, mask, new)
        # the rollout's other read: every step's option and whether its problem took it
        read = torch.cat([torch.stack(options, 1), torch.stack(taken, 1).long()], 1).tolist()
        T = len(options)
        at_step = [torch.triu_indices(n_leaves + t, n_leaves + t).tolist() for t in range(T)]  # `pairs`, on the host
        steps = [[(at_step[t][0][o // n_ops], at_step[t][1][o // n_ops], o % n_ops)
                  for t, o in enumerate(row[:T]) if row[T + t]] for row in read]
        return self._as_prefix(steps, torch.stack(rows, 1), n_leaves, V)

    def _as_prefix(self, steps: list[list[tuple[int, int, int]]], rows: torch.Tensor, n_leaves: int,
                   V: int) -> Rollout:
        """Each problem's steps as a prefix expression: its ids (on the host and the device) and,
        per token, its row of `rows` [B, T, 3, V] (a step's operator row, then its two sides'),
        gathered in one index (a padding position reads a zero row)."""
        B, T = rows.shape[:2]
        seqs, at = [], []  # per problem: the tokens, and the flat row of `rows` each was picked by
        for b, st in enumerate(steps):
            tokens, where = [], []

            def emit(q: int, row: int | None) -> None:
                if q < n_leaves:
                    tokens.append(self.n_ops + q)
                    where.append(row)
                    return
                s = q - n_leaves
                i, j, k = st[s]
                o, reverse = self.ops[k]
                left, right = (j, i) if reverse else (i, j)
                tokens.append(o)
                where.append((b * T + s) * 3)
                emit(left, (b * T + s) * 3 + 1)
                emit(right, (b * T + s) * 3 + 2)

            emit(n_leaves + len(st) - 1, None)
            seqs.append(tokens)
            at.append(where)
        L = max(map(len, seqs))
        zero = B * T * 3  # the padding's row
        index = [w if w is not None else zero for where in at for w in where + [zero] * (L - len(where))]
        flat = torch.cat([rows.reshape(zero, V), rows.new_zeros(1, V)])
        device = rows.device
        padded = flat.index_select(0, to_device(torch.tensor(index), device)).view(B, L, V)
        return Rollout(padded, to_device(padded_ids(seqs, L), device), seqs)
