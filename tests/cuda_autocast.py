"""CUDA's bf16 autocast rules, emulated on CPU: a TorchFunctionMode for tests.

CPU autocast forgives what CUDA autocast refuses: it promotes `index_copy`'s inputs to a common
dtype, where CUDA's has no rule for it and the op raises. It also casts fewer ops (no RNN cells,
no fp32 softmax or sums). Under `CudaAutocastRules`, inside `torch.autocast("cpu", bfloat16)`,
every call is cast by CUDA's lists instead of CPU's (CPU autocast is off for the call itself),
and an in-place write whose source dtype differs from its target's raises as on CUDA. Outside
an enabled CPU autocast (a block that turns autocast off) calls run untouched.

The lists are CUDA's from ATen's autocast_mode.cpp, by op name; cuDNN's RNNs run in fp16 under
any CUDA autocast (AutocastRNN.cpp). `casts` counts the calls cast to bf16, so a test can show
that the emulation ran; `fp16` the calls cast to fp16 (cuDNN RNNs under autocast).
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves, tree_map

LOWER = {"_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
         "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "__matmul__",
         "__rmatmul__", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm",
         "chain_matmul", "multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
         "scaled_dot_product_attention"}
"""Ops CUDA autocast runs in the lower precision."""
FP32 = {"acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
        "sinh", "tan", "pow", "__pow__", "__rpow__", "softplus", "layer_norm", "group_norm", "cosine_similarity",
        "nll_loss", "cross_entropy", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
        "binary_cross_entropy_with_logits", "dist", "cdist", "renorm", "logsumexp", "prod", "softmax",
        "log_softmax", "cumprod", "cumsum", "sum", "norm"}
"""Ops CUDA autocast runs in fp32."""
PROMOTE = {"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "index_put", "scatter_add", "tensordot",
           "cat", "stack"}
"""Ops CUDA autocast runs in the widest input dtype."""
CUDNN_RNN = {"gru", "lstm", "rnn_tanh", "rnn_relu"}
"""nn.GRU/LSTM/RNN: cuDNN's autocast rule runs them in fp16."""
WRITES = {"index_copy", "index_copy_", "index_put", "index_put_", "__setitem__", "scatter", "scatter_",
          "masked_scatter", "masked_scatter_", "index_add", "index_add_", "index_reduce", "index_reduce_"}
"""Writes into a target: CUDA raises when the source's dtype is not the target's."""

FLOATS = (torch.float32, torch.bfloat16, torch.float16)


def _tensors(value) -> list[torch.Tensor]:
    return [v for v in tree_leaves(value) if isinstance(v, torch.Tensor)]


def _cast(value, dtype: torch.dtype):
    return tree_map(lambda v: v.to(dtype) if isinstance(v, torch.Tensor) and v.dtype in FLOATS and v.dtype != dtype
                    else v, value)


class CudaAutocastRules(TorchFunctionMode):
    """Within `torch.autocast("cpu", dtype=torch.bfloat16)`: CUDA's casts, and CUDA's refusal of
    mixed-dtype writes (a RuntimeError naming the op)."""

    def __init__(self) -> None:
        super().__init__()
        self.casts = 0
        self.fp16 = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not torch.is_autocast_enabled("cpu"):
            return func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name in WRITES:
            self._check_write(name, args, kwargs)
        if name in LOWER:
            self.casts += 1
            args, kwargs = _cast(args, torch.bfloat16), _cast(kwargs, torch.bfloat16)
        elif name in FP32 and not name.endswith("_"):
            args, kwargs = _cast(args, torch.float32), _cast(kwargs, torch.float32)
        elif name in PROMOTE:
            dtypes = [t.dtype for t in _tensors((args, kwargs)) if t.dtype in FLOATS]
            if dtypes:
                widest = dtypes[0]
                for d in dtypes[1:]:
                    widest = torch.promote_types(widest, d)
                args, kwargs = _cast(args, widest), _cast(kwargs, widest)
        elif name in CUDNN_RNN:
            self.fp16 += 1
            args, kwargs = _cast(args, torch.float16), _cast(kwargs, torch.float16)
        with torch.autocast("cpu", enabled=False):
            return func(*args, **kwargs)

    @staticmethod
    def _check_write(name: str, args, kwargs) -> None:
        target = args[0]
        sources = [t for t in _tensors((args[1:], list(kwargs.values()))) if t.dtype in FLOATS]
        if isinstance(target, torch.Tensor) and target.dtype in FLOATS:
            for source in sources:
                if source.dtype != target.dtype:
                    raise RuntimeError(f"{name}(): self and source expected to have the same dtype, but got "
                                       f"(self) {target.dtype} and (source) {source.dtype} (CUDA autocast rule)")
