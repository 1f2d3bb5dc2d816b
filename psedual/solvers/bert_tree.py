"""BERT-Tree (Li et al. 2022): a pretrained encoder under the GTS tree decoder.

The encoder is `plm.PLMEncoder` (word states from first subwords, the [CLS] state as
the problem vector); decoding, beam search and the rollout the reexamining module
samples from are GTS's, unchanged, so PseDual applies as to GTS.
"""

from __future__ import annotations

from torch import nn

from psedual.solvers.config import SolverConfig
from psedual.solvers.gts import GTS
from psedual.solvers.plm import PLMEncoder
from psedual.solvers.vocab import Vocab


class BertTree(GTS):
    name = "bert_tree"
    reads_subwords = True

    def build_encoder(self, vocab: Vocab, config: SolverConfig) -> nn.Module:
        return PLMEncoder(config)

    def pretrained_parameters(self) -> list[nn.Parameter]:
        return list(self.encoder.plm.parameters())
