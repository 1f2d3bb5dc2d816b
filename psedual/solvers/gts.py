"""GTS, the goal-driven tree-structured solver (Xie & Sun, IJCAI 2019).

Encoder: word embeddings -> 2-layer bidirectional GRU, directions summed. The
problem vector is the final hidden state of both directions; `problem_vector:
published` reads it as the published code does (in training, the forward half
from the padded batch's last time step, which is padding for all but the longest
problem; at test, batches of one, the final state), see `encoder.published_read`.

Decoder, as published: a goal vector q is gated with the embedding of its left
sibling subtree (for right children), attends over the encoder, and scores the
operators and the candidates (learned constant embeddings, and the encoder
states at the number slots). An operator spawns a left and a right child goal;
a finished subtree is merged into one embedding with its operator.

Training is batched by tree level instead of the published per-example loop:
with the gold tree known, every subtree embedding depends only on gold tokens,
so they are computed bottom-up one height at a time; every goal depends only on
its parent, so predictions run top-down one depth at a time, for all nodes of
all problems at that depth together.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn

from psedual.solvers.batch import Batch, gold_tokens, preferred_slot_loss
from psedual.solvers.config import SolverConfig
from psedual.solvers.encoder import WordEncoder
from psedual.solvers.rollout import NEG, Pick, Rollout
from psedual.solvers.sides import Sides
from psedual.solvers.tensors import put_rows
from psedual.solvers.tree_rollout import tree_rollout
from psedual.solvers.tree_search import tree_decode
from psedual.solvers.vocab import Vocab


@dataclass
class Roots:
    """The teacher-forced pass's prediction at every problem's root (its expression's first token), in
    the problems' order: the sampled rollout's first step predicts the same goals from the same inputs,
    so it takes these instead of a second pass over the batch's roots (with dropout, the sample's first
    token is then drawn under the teacher-forced pass's masks rather than masks of its own: the same
    distribution)."""

    scores: torch.Tensor
    """[B, V] scores over the output ids."""
    node: torch.Tensor
    """[B, H] the gated goals."""
    context: torch.Tensor
    """[B, H] their attention contexts."""
    mode: tuple[bool, bool]
    """(the model training, gradient enabled) when they were made: a rollout in another mode makes its own."""


@dataclass
class Encoded:
    outputs: torch.Tensor  # [B, T, H]
    mask: torch.Tensor  # [B, T] True for real words
    problem: torch.Tensor  # [B, H]
    candidates: torch.Tensor  # [B, C + max_slots, H]: constants, then number slots
    candidate_mask: torch.Tensor  # [B, C + max_slots]
    attn_keys: torch.Tensor  # [B, T, H] precomputed encoder half of the attention energy
    score_keys: torch.Tensor  # [B, C + max_slots, H] precomputed candidate half of the score
    roots: Roots | None = None  # set by the teacher-forced pass over this encoding (`GTS.node_logits`)

    def rows(self, index: torch.Tensor) -> Encoded:
        """The encoding of the problems `index` [R] alone, in that order (every tensor's rows; not `roots`,
        which are the whole batch's)."""
        return Encoded(*(getattr(self, f.name)[index] for f in fields(self) if f.name != "roots"))


class GTS(nn.Module):
    name = "gts"
    reads_subwords = False  # BertTree, built on GTS, does
    may_leave_parameters_unused = False  # a batch of one-number expressions runs merge and child goals on no rows

    def __init__(self, vocab: Vocab, config: SolverConfig = SolverConfig()) -> None:
        super().__init__()
        self.vocab, self.config = vocab, config
        E, H, n_ops = config.embedding_size, config.hidden_size, len(vocab.operators)
        self.n_ops = n_ops
        self.drop = nn.Dropout(config.dropout)
        self.encoder = self.build_encoder(vocab, config)
        self.constants = nn.Parameter(torch.randn(len(vocab.constants), H) * 0.1)
        # goal gating: without / with a left sibling subtree
        self.gate_l, self.gate_lg = nn.Linear(H, H), nn.Linear(H, H)
        self.gate_r, self.gate_rg = nn.Linear(2 * H, H), nn.Linear(2 * H, H)
        # attention over the encoder and scores over candidates (Bahdanau-style, split so
        # the encoder/candidate halves are computed once per batch)
        self.attn_q, self.attn_k, self.attn_v = nn.Linear(H, H), nn.Linear(H, H, bias=False), nn.Linear(H, 1)
        self.score_q, self.score_k = nn.Linear(2 * H, H), nn.Linear(H, H, bias=False)
        self.score_v = nn.Linear(H, 1, bias=False)
        self.ops = nn.Linear(2 * H, n_ops)
        # child goals and subtree merge
        self.op_embed = nn.Embedding(n_ops, E)
        self.gen_l, self.gen_lg = nn.Linear(2 * H + E, H), nn.Linear(2 * H + E, H)
        self.gen_r, self.gen_rg = nn.Linear(2 * H + E, H), nn.Linear(2 * H + E, H)
        self.merge_h, self.merge_g = nn.Linear(2 * H + E, H), nn.Linear(2 * H + E, H)

    # --- encoder ------------------------------------------------------------------------

    def build_encoder(self, vocab: Vocab, config: SolverConfig) -> nn.Module:
        """The word encoder: `batch -> (states [B, T, H], problem [B, H])`."""
        return WordEncoder(len(vocab.words), config, config.problem_vector)

    def pretrained_parameters(self) -> list[nn.Parameter]:
        return []

    def encode(self, batch: Batch) -> Encoded:
        outputs, problem = self.encode_words(batch)
        return self.with_candidates(batch, outputs, problem)

    def encode_words(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Encoder states [B, T, H] and the problem vector [B, H]."""
        return self.encoder(batch)

    def with_candidates(self, batch: Batch, outputs: torch.Tensor, problem: torch.Tensor) -> Encoded:
        """Add the candidates (constants, number-slot states) and precomputed attention keys."""
        H = self.config.hidden_size
        B, S = batch.num_pos.shape
        slots = outputs.gather(1, batch.num_pos.unsqueeze(-1).expand(B, S, H))
        pad = self.vocab.max_slots - S
        slot_mask = F.pad(batch.num_mask, (0, pad))
        candidates = torch.cat([self.constants.unsqueeze(0).expand(B, -1, -1), F.pad(slots, (0, 0, 0, pad))], 1)
        candidate_mask = torch.cat([torch.ones(B, len(self.vocab.constants), dtype=torch.bool,
                                               device=slot_mask.device), slot_mask], 1)
        mask = batch.words != 0
        return Encoded(outputs, mask, problem, candidates, candidate_mask,
                       self.attn_k(outputs), self.score_k(self.drop(candidates)))

    def slot_states(self, enc: Encoded, batch: Batch) -> torch.Tensor:
        C = len(self.vocab.constants)
        return enc.candidates[:, C: C + batch.num_mask.shape[1]]

    # --- decoder cells, over a flat set of nodes -----------------------------------------

    def predict(self, enc: Encoded, ex: torch.Tensor | None, goal: torch.Tensor, left: torch.Tensor,
                has_left: torch.Tensor | Sides) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Scores over all output ids for goals of examples `ex` (None: one goal per example of `enc`,
        in order, read without a gather); also the gated goal and context. `has_left`: which goals
        have a left sibling subtree (`left`'s row), as `Sides` where the host knows (each gate runs on
        its own rows) or as a bool tensor [R] (both gates on every row, one kept: no host read)."""
        keys, mask, outputs, score_keys, candidate_mask = (
            (enc.attn_keys, enc.mask, enc.outputs, enc.score_keys, enc.candidate_mask) if ex is None else
            (enc.attn_keys[ex], enc.mask[ex], enc.outputs[ex], enc.score_keys[ex], enc.candidate_mask[ex]))
        q, lft = self.drop(goal), self.drop(left)  # dropped over every row either way: one draw of the masks
        node = self.gate(q, lft, has_left)
        energy = self.attn_v(torch.tanh(self.attn_q(node).unsqueeze(1) + keys)).squeeze(-1)
        energy = energy.masked_fill(~mask, NEG)
        context = torch.bmm(torch.softmax(energy, -1).unsqueeze(1), outputs).squeeze(1)
        leaf = self.drop(torch.cat([node, context], -1))
        num_score = self.score_v(torch.tanh(self.score_q(leaf).unsqueeze(1) + score_keys)).squeeze(-1)
        num_score = num_score.masked_fill(~candidate_mask, NEG)
        return torch.cat([self.ops(leaf), num_score], -1), node, context

    def gate(self, q: torch.Tensor, lft: torch.Tensor, has_left: torch.Tensor | Sides) -> torch.Tensor:
        """The goals `q` [R, H] gated alone, or with their left sibling subtrees `lft` (see `predict`)."""
        if not isinstance(has_left, Sides):
            plain = torch.tanh(self.gate_l(q)) * torch.sigmoid(self.gate_lg(q))
            ql = torch.cat([lft, q], -1)
            with_left = torch.tanh(self.gate_r(ql)) * torch.sigmoid(self.gate_rg(ql))
            return torch.where(has_left.unsqueeze(-1), with_left, plain)
        lone, right, order = has_left
        if not len(right):  # every row alone (a first step): no gather, no reorder
            return torch.tanh(self.gate_l(q)) * torch.sigmoid(self.gate_lg(q))
        ql = torch.cat([lft[right], q[right]], -1)
        with_left = torch.tanh(self.gate_r(ql)) * torch.sigmoid(self.gate_rg(ql))
        if not len(lone):
            return with_left
        q = q[lone]
        plain = torch.tanh(self.gate_l(q)) * torch.sigmoid(self.gate_lg(q))
        return torch.cat([plain, with_left]).index_select(0, order)

    def child_goals(self, node: torch.Tensor, context: torch.Tensor, op: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([self.drop(node), self.drop(context), self.drop(self.op_embed(op))], -1)
        left = torch.tanh(self.gen_l(x)) * torch.sigmoid(self.gen_lg(x))
        right = torch.tanh(self.gen_r(x)) * torch.sigmoid(self.gen_rg(x))
        return left, right

    def merge(self, op: torch.Tensor, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        x = torch.cat([self.drop(self.op_embed(op)), self.drop(left), self.drop(right)], -1)
        return torch.tanh(self.merge_h(x)) * torch.sigmoid(self.merge_g(x))

    # --- teacher forcing ----------------------------------------------------------------

    def node_logits(self, batch: Batch, enc: Encoded | None = None) -> torch.Tensor:
        """[N, V] scores of every gold node of the batch (flat order of `batch.tree`)."""
        tree = batch.tree
        enc = enc if enc is not None else self.encode(batch)
        n_nodes, H = tree.token.shape[0], self.config.hidden_size
        # the groups come from the host (`TreeIndex.group`): no nonzero or max makes the GPU wait
        leaves = tree.group("leaves")
        sub = enc.outputs.new_zeros(n_nodes, H)
        sub = put_rows(sub, leaves, enc.candidates[tree.example[leaves], tree.token[leaves] - self.n_ops])
        # subtree embeddings, bottom-up by height
        for h in range(1, tree.heights + 1):
            idx = tree.group(f"height{h}")
            sub = put_rows(sub, idx, self.merge(tree.token[idx], sub[tree.left[idx]], sub[tree.right[idx]]))
        # goals and predictions, top-down by depth
        goal = enc.outputs.new_zeros(n_nodes, H)
        roots = tree.group("roots")
        goal = put_rows(goal, roots, enc.problem[tree.example[roots]])
        logits = enc.outputs.new_zeros(n_nodes, len(self.vocab.output_tokens))
        for d in range(tree.depths):
            idx = tree.group(f"depth{d}")
            sib = tree.left_sibling[idx]
            left = torch.where((sib >= 0).unsqueeze(-1), sub[sib.clamp(min=0)], torch.zeros_like(goal[idx]))
            sides = Sides(tree.group(f"lone{d}"), tree.group(f"right{d}"), tree.group(f"order{d}"))
            if d:
                scores, node, context = self.predict(enc, tree.example[idx], goal[idx], left, sides)
            else:  # the roots: one per problem, in the problems' order (nodes are numbered problem by problem)
                scores, node, context = self.predict(enc, None, goal[idx], left, sides)
                enc.roots = Roots(scores, node, context, (self.training, torch.is_grad_enabled()))
            logits = put_rows(logits, idx, scores)
            ops = tree.group(f"ops{d}")  # positions of the operators among idx
            if len(ops):
                op_idx = idx[ops]
                lg, rg = self.child_goals(node[ops], context[ops], tree.token[op_idx])
                goal = put_rows(put_rows(goal, tree.left[op_idx], lg), tree.right[op_idx], rg)
        if not tree.heights:  # one-number expressions only: merge and the child goals run on no rows,
            # so that every parameter still takes part in the step (DDP runs without an unused-parameter search)
            node = goal[:0]
            lg, rg = self.child_goals(node, node, tree.token[:0])
            right = self.gate(node, node, tree.token[:0].bool())  # no right child: both gates on no rows
            logits = logits + 0.0 * (lg.sum() + rg.sum() + self.merge(tree.token[:0], node, node).sum() + right.sum())
        return logits

    def loss(self, batch: Batch, enc: Encoded | None = None) -> torch.Tensor:
        return preferred_slot_loss(self.node_logits(batch, enc), batch.tree)

    def loss_terms(self, problems) -> int:
        return gold_tokens(problems)

    # --- decoding -----------------------------------------------------------------------

    def decode(self, batch: Batch, beam_size: int = 1, max_length: int = 64,
               greedy: bool = False) -> list[tuple[str, ...]]:
        return tree_decode(self, batch, beam_size, max_length, greedy)

    def rollout(self, batch: Batch, enc: Encoded, pick: Pick, max_length: int) -> Rollout:
        return tree_rollout(self, batch, enc, pick, max_length)
