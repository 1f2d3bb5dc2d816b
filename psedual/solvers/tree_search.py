"""Greedy and beam decoding for goal-driven tree decoders (GTS, Graph2Tree).

Each hypothesis keeps the published decoder's two stacks: pending goals, and
finished pieces (an operator waiting for its children, or a finished subtree).
The neural work of a step (prediction and child goals) runs once for all live
hypotheses of all problems; only stack bookkeeping is per hypothesis, and
subtree merges are done only for hypotheses that survive the beam.

The stacks' shapes live on the host and their vectors on the device. A step reads
the device once (the chosen tokens and their scores, in one copy): everything the
host needs next follows from them, and the index tensors it sends back are
non-blocking copies, so the host waits for the GPU once per step, not once per
problem or hypothesis.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from psedual.solvers.batch import Batch
from psedual.solvers.config import inference
from psedual.solvers.rollout import NEG
from psedual.solvers.sides import sides_of
from psedual.solvers.tensors import to_device


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
    device = enc.problem.device
    ex = to_device(torch.tensor([b for b, _ in live]), device)
    goal = torch.stack([h.goals[-1] for _, h in live])
    has_left = [bool(h.pieces) and h.pieces[-1][1] for _, h in live]
    left = torch.stack([h.pieces[-1][0] if hl else torch.zeros_like(h.goals[-1]) for (_, h), hl in zip(live, has_left)])
    logits, node, context = model.predict(enc, ex, goal, left, sides_of(has_left, device))
    logp = torch.log_softmax(logits, -1)
    n_ops = model.n_ops
    op_ids = torch.arange(n_ops, device=device)
    lg, rg = model.child_goals(node.repeat_interleave(n_ops, 0), context.repeat_interleave(n_ops, 0),
                               op_ids.repeat(len(live)))
    lg, rg = lg.view(len(live), n_ops, -1), rg.view(len(live), n_ops, -1)
    valid = logits > NEG / 10  # masked candidates (absent number slots) are never chosen

    # candidates: (score, position in live, token); finished hypotheses carry over as they are
    pool: list[list[tuple[float, int, int, Hyp | None]]] = [[(h.score, -1, -1, h) for h in hs if not h.goals]
                                                            for hs in beams]
    # the step's one read of the device: scores and tokens together (float64 holds both exactly)
    if greedy:
        choice = logp.masked_fill(~valid, float("-inf")).argmax(-1, keepdim=True)
        picked = torch.cat([logp.gather(1, choice).double(), choice.double()], 1).tolist()
        for j, ((b, h), (lp, tok)) in enumerate(zip(live, picked)):
            pool[b].append((h.score + lp, j, int(tok), None))
    else:
        k = min(beam_size, logp.shape[1])
        top_lp, top_id = logp.masked_fill(~valid, float("-inf")).topk(k, -1)
        picked = torch.cat([top_lp.double(), top_id.double()], 1).tolist()
        for j, ((b, h), row) in enumerate(zip(live, picked)):
            for lp, tok in zip(row[:k], row[k:]):
                if lp != float("-inf"):
                    pool[b].append((h.score + lp, j, int(tok), None))
    new_beams = []
    for b, cands in enumerate(pool):
        kept = sorted(cands, key=lambda c: -c[0])[:beam_size]
        new_beams.append([h if h is not None else _expand(model, enc, live[j], tok, s, lg[j], rg[j], op_ids)
                          for s, j, tok, h in kept])
    return new_beams


def _expand(model, enc, live_item, tok: int, score: float, lg: torch.Tensor, rg: torch.Tensor,
            op_ids: torch.Tensor) -> Hyp:
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
            current = model.merge(op_ids[op:op + 1], done.unsqueeze(0), current.unsqueeze(0))[0]
        pieces.append((current, True))
    return Hyp(score, (*h.tokens, tok), goals, tuple(pieces))
