"""Data parallelism over the ranks of an initialised torch.distributed group (Ray Train sets
one up), arranged so that W ranks compute what one process computes.

- Training: every global batch (the single-process batch) is shared out, rank r taking
  problems r, r + W, ... Shares differ by at most one problem. A rank whose share would be
  empty (a last batch smaller than W) trains on the batch's first problem with weight 0:
  it must still run forward and backward, or the others wait for its gradients forever.
- Each rank's loss is weighted by its share of the global batch's loss terms, times W
  (DistributedDataParallel averages gradients over ranks), so the step's gradient equals
  the single-process gradient of the same global batch.
- Decoding (validation): the same chunks of `batch_size` problems as one process, dealt
  round-robin to the ranks and gathered in order, so every rank sees the predictions one
  process would make.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.distributed as dist


def shard(problems: Sequence, rank: int, world_size: int) -> tuple[list, float]:
    """(this rank's problems, their weight): weight 1, or 0 for the stand-in of an empty share."""
    mine = list(problems[rank::world_size])
    return (mine, 1.0) if mine else (list(problems[:1]), 0.0)


def share(terms_mine: int, terms_all: int, weight: float, world_size: int) -> float:
    """The factor on a rank's mean loss over `terms_mine` terms that makes the ranks' average
    gradient the gradient of the mean over all `terms_all` terms of the global batch."""
    return weight * world_size * terms_mine / terms_all if terms_all else 0.0


def all_sum(values: list[float], device: torch.device) -> list[float]:
    """Element-wise sum over the ranks (the ranks' numbers as one process would add them)."""
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def gather(value, world_size: int) -> list:
    """Every rank's `value` (any picklable object), in rank order, on every rank."""
    if world_size == 1:
        return [value]
    gathered: list = [None] * world_size
    dist.all_gather_object(gathered, value)
    return gathered


def decode_split(decode: Callable[[list], list], problems: Sequence, batch_size: int, rank: int,
                 world_size: int) -> list:
    """`decode` over chunks of `batch_size` problems, chunk k on rank k mod W, gathered in order on
    every rank: the chunks are those one process decodes, so the predictions are the same."""
    starts = range(0, len(problems), batch_size)
    mine = {k: decode(list(problems[s:s + batch_size])) for k, s in enumerate(starts) if k % world_size == rank}
    chunks = {k: v for part in gather(mine, world_size) for k, v in part.items()}
    return [p for k in sorted(chunks) for p in chunks[k]]
