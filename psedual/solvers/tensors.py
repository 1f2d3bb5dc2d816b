"""Tensor moves and writes that behave the same on every device and under autocast."""

from __future__ import annotations

import torch


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`t` on `device`; a host tensor bound for CUDA is pinned first, so the copy does not make
    the host wait (the caching host allocator keeps the pinned buffer until the copy is done)."""
    if device.type == "cuda" and t.device.type == "cpu":
        t = t.pin_memory()
    return t.to(device, non_blocking=True)


def put_rows(target: torch.Tensor, index: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """`target` with `rows` copied in at `index` (dim 0), both first in their common dtype. Under
    autocast a buffer and the rows written into it may differ (fp32 and bf16): CPU autocast
    promotes `index_copy`'s inputs, CUDA autocast raises, so the promotion is made here."""
    common = torch.promote_types(target.dtype, rows.dtype)
    return target.to(common).index_copy(0, index, rows.to(common))


def padded_ids(rows: list[list[int]], length: int | None = None) -> torch.Tensor:
    """[len(rows), length] output ids, -1 after each row's end (length: the longest row's, or more)."""
    out = torch.full((len(rows), length if length is not None else max(map(len, rows))), -1, dtype=torch.long)
    for b, row in enumerate(rows):
        out[b, :len(row)] = torch.tensor(row, dtype=torch.long)
    return out
