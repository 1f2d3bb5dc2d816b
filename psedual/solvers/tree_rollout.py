"""The sampled expression of a goal-driven tree decoder (GTS, Graph2Tree, BertTree), with gradient.

Each problem keeps the published decoder's two stacks: pending goals, and open operators, each
with its finished left subtree once there is one. A step predicts a token for every problem still
writing; an operator pushes its two child goals; a number is a finished subtree, merged with its
finished left siblings upwards until it is a left child (or the whole expression).

Two ways to run it, the same computation (`masked_rollout` says where they differ):
- by rows (`rows_rollout`, on a CPU): each step works on just the rows that need it (the problems
  still writing, those that wrote an operator, those with a subtree to merge); the host learns
  which from the step's tokens, read once a step. A CPU has no device to wait for, so this is free,
  and it does the fewest FLOPs.
- masked (`masked_rollout`, on a GPU): the stacks are tensors of a fixed depth, every step works on
  every row under masks, and the host reads the device only every few steps (whether every problem
  has finished, and their tokens) instead of once a step: on a GPU a read waits for the queue, and
  work on a few finished rows costs nothing beside the kernels' launches.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import NamedTuple

import torch

from psedual.solvers.batch import Batch
from psedual.solvers.rollout import COMPILED_DEVICES, MASKED_DEVICES, NEG, Pick, Rollout, may_open_operator
from psedual.solvers.sides import sides_of
from psedual.solvers.tensors import put_rows, to_device
from psedual.solvers.weight_grads import deferred_weight_grads

MERGE_ROUNDS = 2
"""Merge rounds per step of the masked rollout. A number that closes k subtrees at once needs k
merges in a row; the problem waits (writes nothing) for the rounds past these, so 2 lets nearly
every expression run without a wait, at the cost of a second merge over the rows per step."""


def tree_rollout(model, batch: Batch, enc, pick: Pick, max_length: int) -> Rollout:
    """One expression per problem, each token chosen by `pick`, with gradient and in the model's
    current mode: masked on the device types `rollout.MASKED_DEVICES` names, else by rows."""
    if enc.problem.device.type in MASKED_DEVICES:
        return masked_rollout(model, batch, enc, pick, max_length)
    return rows_rollout(model, batch, enc, pick, max_length)


def rows_rollout(model, batch: Batch, enc, pick: Pick, max_length: int) -> Rollout:
    """`_rows_rollout`, each decoder layer's weight gradient computed once over its steps' rows
    (`weight_grads`): a step works on few rows, and its own weight gradient would cost as much
    as its product."""
    with deferred_weight_grads(model):
        return _rows_rollout(model, batch, enc, pick, max_length)


def _rows_rollout(model, batch: Batch, enc, pick: Pick, max_length: int) -> Rollout:
    """Like greedy decoding, but the neural work of a step, subtree merges included, runs once
    for all unfinished problems; the stacks are per problem on the host.

    What the backward pays for is kept to one piece per tensor, not one per step or row: the
    encoder's rows are gathered when the set of unfinished problems shrinks, not at every step
    (each gather's backward writes a zero tensor of its input's size), and a goal, leaf or merged
    subtree is a row of an `unbind`, whose gradients are stacked once (a row taken by indexing
    writes a zero tensor of the whole for each row)."""
    B, V, n_ops = len(batch.problems), len(model.vocab.output_tokens), model.n_ops
    device = enc.problem.device
    is_op = torch.arange(V, device=device) < n_ops
    goals: list[list[torch.Tensor]] = [[g] for g in enc.problem.unbind(0)]
    C = enc.candidates.shape[1]
    candidates = enc.candidates.flatten(0, 1).unbind(0)  # problem b's candidate c: b * C + c
    pieces: list[list[tuple[torch.Tensor | int, bool]]] = [[] for _ in range(B)]
    steps: list[torch.Tensor] = []  # [B, V] per step: the rows `pick` returned, zero for finished problems
    tokens: list[list[int]] = [[] for _ in range(B)]
    here, held = enc, list(range(B))  # `here`: the encoding of the problems `held`, in order
    first = enc.roots  # the first step's prediction, where a teacher-forced pass made it
    if first is not None and first.mode != (model.training, torch.is_grad_enabled()):
        first = None
    for length in range(max_length):
        live = [b for b in range(B) if goals[b]]
        if not live:
            break
        ex = to_device(torch.tensor(live), device)
        if len(live) < len(held):  # problems only finish: keep the rows of those still writing
            here = here.rows(to_device(torch.tensor([i for i, b in enumerate(held) if goals[b]]), device))
            held = live
        if length == 0 and first is not None:
            scores, node, context = first.scores, first.node, first.context
        else:
            scores, node, context = _predict(model, here, goals, pieces, live, device)
        need = to_device(torch.tensor([len(goals[b]) for b in live]), device)
        closed = ~may_open_operator(need, length, max_length)
        y = pick(scores.masked_fill(closed.unsqueeze(-1) & is_op, NEG), ex, length)
        tok = y.argmax(-1)
        toks = tok.tolist()  # the step's one read of the device: the stacks' shapes follow from it
        steps.append(y if len(live) == B else put_rows(y.new_zeros(B, V), ex, y))
        op_rows = [j for j, t in enumerate(toks) if t < n_ops]
        if op_rows:
            at = to_device(torch.tensor(op_rows), device)
            lg, rg = (g.unbind(0) for g in model.child_goals(node[at], context[at], tok[at]))
        finished: dict[int, torch.Tensor] = {}  # problem -> subtree waiting to be merged upwards
        k = 0  # the next operator row's child goals
        for b, t in zip(live, toks):
            tokens[b].append(t)
            goals[b].pop()
            if t < n_ops:
                goals[b] += [rg[k], lg[k]]
                k += 1
                pieces[b].append((t, False))
            elif goals[b]:  # a whole expression's last number: nothing reads its merges up to the root
                finished[b] = candidates[b * C + t - n_ops]
        _merge_up(model, pieces, finished, device)
    L = max(map(len, tokens))
    ids = torch.tensor([t + [-1] * (L - len(t)) for t in tokens], dtype=torch.long).view(B, L)
    choices = torch.stack(steps, 1) if steps else enc.problem.new_zeros(B, 0, V)
    return Rollout(choices, to_device(ids, device), tokens)


def _predict(model, here, goals: list[list[torch.Tensor]], pieces: list[list], live: list[int], device: torch.device):
    """`model.predict` for the problems `live` (the encoding `here`'s rows, in order): each one's
    next goal, and its left sibling's subtree where it has one."""
    goal = torch.stack([goals[b][-1] for b in live])
    has_left = [bool(pieces[b]) and pieces[b][-1][1] for b in live]
    zero = goal.new_zeros(goal.shape[-1])
    left = torch.stack([pieces[b][-1][0] if hl else zero for b, hl in zip(live, has_left)])
    return model.predict(here, None, goal, left, sides_of(has_left, device))


def _merge_up(model, pieces: list[list], finished: dict[int, torch.Tensor], device: torch.device) -> None:
    """Merge each finished subtree with its completed left siblings, all problems at once
    per round, until it is a left child (or the whole expression)."""
    while finished:
        rows = [b for b in finished if pieces[b] and pieces[b][-1][1]]
        for b in finished.keys() - set(rows):
            pieces[b].append((finished.pop(b), True))
        if not rows:
            return
        lefts = torch.stack([pieces[b].pop()[0] for b in rows])
        ops = to_device(torch.tensor([pieces[b].pop()[0] for b in rows]), device)
        merged = model.merge(ops, lefts, torch.stack([finished[b] for b in rows])).unbind(0)
        for k, b in enumerate(rows):
            finished[b] = merged[k]


def _put(stack: torch.Tensor, at: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """`stack` [B, D + 1, ...] with each row's `rows[b]` written at depth `at[b]` (depth D: nowhere
    that is read), out of place (the stacks carry gradient), in the two's common dtype (autocast)."""
    common = torch.promote_types(stack.dtype, rows.dtype)
    index = at.view(-1, 1, *([1] * (stack.dim() - 2))).expand(-1, 1, *stack.shape[2:])
    return stack.to(common).scatter(1, index, rows.unsqueeze(1).to(common))


def check_every(max_length: int) -> int:
    """Steps of the masked rollout between two reads of whether every problem has finished: a
    quarter of the longest expression allowed (so at most about 4 reads, the last of which
    brings the tokens back), and 4 steps at least."""
    return max(4, math.ceil(max_length / 4))


class Stacks(NamedTuple):
    """The masked rollout's state between two steps, one row per problem (a tuple of tensors, so
    that a compiled step takes and returns it as plain inputs and outputs)."""

    goals: torch.Tensor
    """[B, D + 1, H] pending goal vectors, the next to decode at depth `n_goals - 1`."""
    n_goals: torch.Tensor
    """[B] pending goals."""
    ops: torch.Tensor
    """[B, D + 1] open operators' ids, innermost last."""
    lefts: torch.Tensor
    """[B, D + 1, H] each open operator's finished left subtree."""
    has_left: torch.Tensor
    """[B, D + 1] whether each open operator has its left subtree."""
    n_open: torch.Tensor
    """[B] open operators."""
    subtree: torch.Tensor
    """[B, H] a finished subtree still being merged upwards."""
    merging: torch.Tensor
    """[B] whether the row's `subtree` is still being merged (the row writes nothing meanwhile)."""
    done: torch.Tensor
    """[B] whether the row's expression is whole."""
    position: torch.Tensor
    """[B] the next output position of each row."""
    tokens: torch.Tensor
    """[B, max_length + 1] the ids written, -1 beyond; column max_length is nowhere (a row not writing)."""


class Frame(NamedTuple):
    """What every step of one masked rollout reads and none changes (made once, not once a step)."""

    rows: torch.Tensor
    """[B] 0 .. B - 1."""
    is_op: torch.Tensor
    """[V] whether each output id is an operator."""
    nowhere: torch.Tensor
    """[B] the stacks' depth D: a write there is never read."""


def masked_step(model, enc, pick: Pick, stacks: Stacks, frame: Frame,
                max_length: int) -> tuple[Stacks, torch.Tensor, torch.Tensor]:
    """One step of `masked_rollout` for every row: the next state, `pick`'s rows [B, V] and the
    output column each goes to ([B], max_length for a row that wrote nothing). Tensors in, tensors
    out, no host read and no branch on a tensor's value, so that `torch.compile` can take the
    whole step as one graph (`COMPILED_DEVICES`)."""
    goals, n_goals, ops, lefts, has_left, n_open, subtree, merging, done, position, tokens = stacks
    rows, is_op, nowhere = frame
    n_ops = model.n_ops
    writing = ~done & ~merging
    top = (n_open - 1).clamp(min=0)
    with_left = has_left[rows, top] & (n_open > 0)
    left = torch.where(with_left.unsqueeze(-1), lefts[rows, top], 0.0)
    scores, node, context = model.predict(enc, None, goals[rows, (n_goals - 1).clamp(min=0)], left, with_left)
    closed = ~may_open_operator(n_goals, position, max_length)
    y = pick(scores.masked_fill(closed.unsqueeze(-1) & is_op, NEG), rows, position.clamp(max=max_length - 1))
    tok = y.argmax(-1)
    column = torch.where(writing, position, max_length)
    tokens = tokens.scatter(1, column.unsqueeze(1), tok.unsqueeze(1))
    position = position + writing.long()
    op = writing & (tok < n_ops)
    number = writing & ~op
    # the goal is taken; an operator pushes its right child's goal, then its left's (decoded next)
    n_goals = n_goals - writing.long()
    lg, rg = model.child_goals(node, context, tok.clamp(max=n_ops - 1))
    goals = _put(_put(goals, torch.where(op, n_goals, nowhere), rg), torch.where(op, n_goals + 1, nowhere), lg)
    n_goals = n_goals + 2 * op.long()
    opened = torch.where(op, n_open, nowhere).unsqueeze(1)
    ops = ops.scatter(1, opened, tok.unsqueeze(1))
    has_left = has_left.scatter(1, opened, False)
    n_open = n_open + op.long()
    subtree = torch.where(number.unsqueeze(-1), enc.candidates[rows, (tok - n_ops).clamp(min=0)], subtree)
    done = done | (number & (n_goals == 0))  # the whole expression: nothing reads its root's merges
    merging = (merging | number) & ~done
    for _ in range(MERGE_ROUNDS):
        top = (n_open - 1).clamp(min=0)
        merge = merging & has_left[rows, top]
        merged = model.merge(ops[rows, top], lefts[rows, top], subtree)
        subtree = torch.where(merge.unsqueeze(-1), merged, subtree)
        n_open = n_open - merge.long()
        top = (n_open - 1).clamp(min=0)
        settle = merging & ~has_left[rows, top]  # a left child now: its right sibling is decoded next
        lefts = _put(lefts, torch.where(settle, top, nowhere), subtree)
        has_left = has_left.scatter(1, torch.where(settle, top, nowhere).unsqueeze(1), True)
        merging = merging & ~settle
    return Stacks(goals, n_goals, ops, lefts, has_left, n_open, subtree, merging, done, position, tokens), y, column


@functools.cache
def compiled_step():
    """`masked_step` through `torch.compile`, built on first use (compiling takes seconds to a minute:
    a process that never asks pays nothing). Shapes are dynamic: the batch (of 2 problems or more: torch
    fixes sizes 0 and 1), the problem's length, the stacks' depth and `max_length` change from batch to
    batch, and a graph per shape would recompile every few batches. Set for its calls (torch.compile's
    own settings, private to torch, read when a graph is built): sizes that happen to be equal (a batch
    of 8 and 7 output positions) are not taken for one size ("duck" shapes, which recompile when they
    part: a run meets many such coincidences, and past 8 recompiles the compiler leaves the step to run
    eager); τ, a float that changes every step, is not specialised on (torch's default since 2.6, said
    here for older ones); and under DDP the step is not split at gradient buckets (DDP's graph
    optimiser: a step's few decoder layers are not worth overlapping with its communication)."""
    from torch.fx.experimental import _config as shapes_config

    step = torch.compile(masked_step, dynamic=True)

    @functools.wraps(masked_step)
    def compiled(*args, **kwargs):
        with shapes_config.patch(use_duck_shape=False), \
                torch._dynamo.config.patch(specialize_float=False, optimize_ddp=False):
            return step(*args, **kwargs)

    return compiled


def first_stacks(enc, max_length: int, compiled: bool) -> Stacks:
    """The masked rollout's state before its first step: each problem's vector its one goal, nothing
    open, nothing written. For a compiled step (`compiled`) the left subtrees and the subtree being
    merged start as the later steps' do: zeros that carry gradient where the encoding does, in the dtype
    a leaf's merges give them (under autocast the candidates' float32 beside a bf16 problem vector), and
    no two state tensors one object; the compiler specialises a graph on its inputs' dtypes, strides,
    aliasing and whether they require gradient, and would build another for every rollout's first step.
    The eager step starts from plain zeros (the same values)."""
    B, H = enc.problem.shape
    device = enc.problem.device
    D = max_length // 2 + 2  # stack capacity: at most (max_length + 1) / 2 goals or open operators
    if compiled:
        nothing = (enc.problem * 0).to(torch.promote_types(enc.problem.dtype, enc.candidates.dtype))
    else:
        nothing = enc.problem.new_zeros(B, H)

    def zeros(dtype=torch.long) -> torch.Tensor:
        return torch.zeros(B, dtype=dtype, device=device)

    return Stacks(goals=torch.cat([enc.problem.unsqueeze(1), enc.problem.new_zeros(B, D, H)], 1),
                  n_goals=torch.ones(B, dtype=torch.long, device=device),
                  ops=torch.zeros(B, D + 1, dtype=torch.long, device=device),
                  lefts=nothing.unsqueeze(1).repeat(1, D + 1, 1),
                  has_left=torch.zeros(B, D + 1, dtype=torch.bool, device=device), n_open=zeros(),
                  subtree=nothing, merging=zeros(torch.bool), done=zeros(torch.bool), position=zeros(),
                  tokens=torch.full((B, max_length + 1), -1, dtype=torch.long, device=device))


def masked_rollout(model, batch: Batch, enc, pick: Pick, max_length: int) -> Rollout:
    """`rows_rollout`'s expressions from tensors alone: the host reads the device every
    `check_every(max_length)` steps (each read also brings the tokens back, so the last one is the
    result's), never once per token. Where it differs from `rows_rollout`:
    - every row runs every step (a finished row's outputs are masked out), so dropout draws other
      masks: with dropout, another sample for the same seed (the same distribution); without, the
      same expressions, losses and gradients (tests/test_rollout_device.py);
    - a number that closes more than `MERGE_ROUNDS` subtrees makes its problem wait a step (its
      tokens and their positions are the same);
    - the first step predicts the roots itself (the rows rollout takes the teacher-forced pass's).
    On the device types `COMPILED_DEVICES` names each step is `compiled_step()`: the same
    computation in 82 kernels (27 forward, 55 backward, in the code the compiler writes for a CPU)
    instead of 368 ops (232 forward, 136 backward: eager, its Linears' weight gradients are deferred,
    `weight_grads`; 424 under autocast, which leaves the layers to themselves), for a GPU whose step
    is bound by launching them (docs/gpu.md); its dropout masks come from the compiler's own generator."""
    B, V = len(batch.problems), len(model.vocab.output_tokens)
    device = enc.problem.device
    compiled = device.type in COMPILED_DEVICES
    step_fn = compiled_step() if compiled else masked_step
    stacks = first_stacks(enc, max_length, compiled)
    frame = Frame(rows=torch.arange(B, device=device), is_op=torch.arange(V, device=device) < model.n_ops,
                  nowhere=torch.full((B,), stacks.ops.shape[1] - 1, dtype=torch.long, device=device))
    picked, at = [], []  # per step: `pick`'s rows [B, V], and the column each goes to
    every, step = check_every(max_length), 0
    with contextlib.nullcontext() if compiled else deferred_weight_grads(model):
        while True:
            stacks, y, column = step_fn(model, enc, pick, stacks, frame, max_length)
            picked.append(y)
            at.append(column)
            step += 1
            if step % every == 0 or step > 2 * max_length:
                # the host's read: whether every problem is done, and the tokens in the same copy
                state = torch.cat([stacks.done.long().unsqueeze(1), stacks.tokens[:, :max_length]], 1).tolist()
                if all(row[0] for row in state):
                    break
                if step > 2 * max_length:  # max_length tokens and at most one wait per operator
                    raise RuntimeError(f"masked tree rollout: {sum(1 - r[0] for r in state)} expressions "
                                       f"unfinished after {step} steps (max_length {max_length})")
    ids = [[t for t in row[1:] if t >= 0] for row in state]
    L = max(map(len, ids))
    steps = len(picked)
    choices = torch.stack(picked, 1) * torch.stack(at, 1).lt(max_length).unsqueeze(-1)
    choices = choices.new_zeros(B, max_length + 1, V).scatter(
        1, torch.stack(at, 1).unsqueeze(-1).expand(B, steps, V), choices)
    return Rollout(choices[:, :L], stacks.tokens[:, :L], ids)
