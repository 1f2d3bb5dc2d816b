"""Greedy and beam decoding for goal-driven tree decoders (GTS, Graph2Tree).

Each hypothesis keeps the published decoder's two stacks: pending goals, and
finished pieces (an operator waiting for its children, or a finished subtree).
The neural work of a step (prediction and child goals) runs once for all live
hypotheses of all problems; only stack bookkeeping is per hypothesis, and
subtree merges are done only for hypotheses that survive the beam.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from psedual.solvers.batch import Batch
from psedual.solvers.config import inference
from psedual.solvers.rollout import NEG, Pick, Rollout, may_open_operator, stack_rollout


@dataclass(frozen=True)
class Hyp:
    score: float
    tokens: tuple[int, ...]
    goals: tuple[torch.Tensor, ...]
    """Pending goal vectors; the last is decoded next."""
    pieces: tuple[tuple[torch.Tensor | int, bool], ...]
    """(operator id, False) waiting for children, or (subtree embedding, True)."""


def tree_decode(model, batch: Batch, beam_size: int, max_length: int, greedy: bool = False) -> list[tuple[str, ...]]:
    """Best finished expression per problem: beam search, or with `greedy` the argmax at
    every step (a separate path, so that beam 1 = greedy is a real check)."""
    if beam_size < 1:
        raise ValueError(f"beam_size must be at least 1, got {beam_size}")
    with inference(model):
        enc = model.encode(batch)
        beams = [[Hyp(0.0, (), (enc.problem[b],), ())] for b in range(len(batch.problems))]
        for _ in range(max_length):
            live = [(b, h) for b, hs in enumerate(beams) for h in hs if h.goals]
            if not live:
                break
            beams = _step(model, enc, beams, live, 1 if greedy else beam_size, greedy)
    out = model.vocab.output_tokens
    return [tuple(out[t] for t in _best(hs).tokens) for hs in beams]


def _best(hyps: list[Hyp]) -> Hyp:
    finished = [h for h in hyps if not h.goals]
    return max(finished or hyps, key=lambda h: h.score)


def _step(model, enc, beams: list[list[Hyp]], live: list[tuple[int, Hyp]], beam_size: int,
          greedy: bool) -> list[list[Hyp]]:
    ex = torch.tensor([b for b, _ in live], device=enc.problem.device)
    goal = torch.stack([h.goals[-1] for _, h in live])
    has_left = torch.tensor([bool(h.pieces) and h.pieces[-1][1] for _, h in live], device=goal.device)
    left = torch.stack([h.pieces[-1][0] if hl else torch.zeros_like(h.goals[-1])
                        for (_, h), hl in zip(live, has_left.tolist())])
    logits, node, context = model.predict(enc, ex, goal, left, has_left)
    logp = torch.log_softmax(logits, -1)
    n_ops = model.n_ops
    ops = torch.arange(n_ops, device=goal.device).repeat(len(live))
    lg, rg = model.child_goals(node.repeat_interleave(n_ops, 0), context.repeat_interleave(n_ops, 0), ops)
    lg, rg = lg.view(len(live), n_ops, -1), rg.view(len(live), n_ops, -1)
    valid = logits > NEG / 10  # masked candidates (absent number slots) are never chosen

    # candidates: (score, position in live, token); finished hypotheses carry over as they are
    pool: list[list[tuple[float, int, int, Hyp | None]]] = [[(h.score, -1, -1, h) for h in hs if not h.goals]
                                                            for hs in beams]
    if greedy:
        choice = logp.masked_fill(~valid, float("-inf")).argmax(-1)
        for j, (b, h) in enumerate(live):
            pool[b].append((h.score + logp[j, choice[j]].item(), j, int(choice[j]), None))
    else:
        k = min(beam_size, logp.shape[1])
        top_lp, top_id = logp.masked_fill(~valid, float("-inf")).topk(k, -1)
        for j, (b, h) in enumerate(live):
            for lp, tok in zip(top_lp[j].tolist(), top_id[j].tolist()):
                if lp != float("-inf"):
                    pool[b].append((h.score + lp, j, tok, None))
    new_beams = []
    for b, cands in enumerate(pool):
        kept = sorted(cands, key=lambda c: -c[0])[:beam_size]
        new_beams.append([h if h is not None else _expand(model, enc, live[j], tok, s, lg[j], rg[j])
                          for s, j, tok, h in kept])
    return new_beams


def _expand(model, enc, live_item, tok: int, score: float, lg: torch.Tensor, rg: torch.Tensor) -> Hyp:
    b, h = live_item
    goals = h.goals[:-1]
    pieces = list(h.pieces)
    if tok < model.n_ops:
        goals = (*goals, rg[tok], lg[tok])
        pieces.append((tok, False))
    else:
        current = enc.candidates[b, tok - model.n_ops]
        while pieces and pieces[-1][1]:
            done = pieces.pop()[0]
            op = pieces.pop()[0]
            op_t = torch.tensor([op], device=current.device)
            current = model.merge(op_t, done.unsqueeze(0), current.unsqueeze(0))[0]
        pieces.append((current, True))
    return Hyp(score, (*h.tokens, tok), goals, tuple(pieces))


def tree_rollout(model, batch: Batch, enc, pick: Pick, max_length: int) -> Rollout:
    """One expression per problem, each token chosen by `pick`, with gradient and in the
    model's current mode. Like greedy decoding, but the neural work of a step, subtree
    merges included, runs once for all unfinished problems."""
    B, V, n_ops = len(batch.problems), len(model.vocab.output_tokens), model.n_ops
    is_op = torch.arange(V, device=enc.problem.device) < n_ops
    goals: list[list[torch.Tensor]] = [[enc.problem[b]] for b in range(B)]
    pieces: list[list[tuple[torch.Tensor | int, bool]]] = [[] for _ in range(B)]
    choices: list[list[torch.Tensor]] = [[] for _ in range(B)]
    tokens: list[list[int]] = [[] for _ in range(B)]
    for length in range(max_length):
        live = [b for b in range(B) if goals[b]]
        if not live:
            break
        ex = torch.tensor(live, device=enc.problem.device)
        goal = torch.stack([goals[b][-1] for b in live])
        has_left = torch.tensor([bool(pieces[b]) and pieces[b][-1][1] for b in live], device=goal.device)
        left = torch.stack([pieces[b][-1][0] if hl else torch.zeros_like(goal[0])
                            for b, hl in zip(live, has_left.tolist())])
        scores, node, context = model.predict(enc, ex, goal, left, has_left)
        need = torch.tensor([len(goals[b]) for b in live], device=goal.device)
        closed = ~may_open_operator(need, length, max_length)
        y = pick(scores.masked_fill(closed.unsqueeze(-1) & is_op, NEG), ex, length)
        tok = y.argmax(-1)
        op_rows = (tok < n_ops).nonzero().squeeze(1)
        if len(op_rows):
            lg, rg = model.child_goals(node[op_rows], context[op_rows], tok[op_rows])
        leaf = enc.candidates[ex, (tok - n_ops).clamp(min=0)]
        op_at = {int(j): k for k, j in enumerate(op_rows.tolist())}
        finished: dict[int, torch.Tensor] = {}  # problem -> subtree waiting to be merged upwards
        for j, b in enumerate(live):
            t = int(tok[j])
            choices[b].append(y[j])
            tokens[b].append(t)
            goals[b].pop()
            if t < n_ops:
                goals[b] += [rg[op_at[j]], lg[op_at[j]]]
                pieces[b].append((t, False))
            else:
                finished[b] = leaf[j]
        _merge_up(model, pieces, finished)
    return stack_rollout(choices, tokens, V, enc.problem)


def _merge_up(model, pieces: list[list], finished: dict[int, torch.Tensor]) -> None:
    """Merge each finished subtree with its completed left siblings, all problems at once
    per round, until it is a left child (or the whole expression)."""
    while finished:
        rows = [b for b in finished if pieces[b] and pieces[b][-1][1]]
        for b in finished.keys() - set(rows):
            pieces[b].append((finished.pop(b), True))
        if not rows:
            return
        lefts = torch.stack([pieces[b].pop()[0] for b in rows])
        ops = torch.tensor([pieces[b].pop()[0] for b in rows], device=lefts.device)
        merged = model.merge(ops, lefts, torch.stack([finished[b] for b in rows]))
        for k, b in enumerate(rows):
            finished[b] = merged[k]
