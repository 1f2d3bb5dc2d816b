"""Where every benchmark file comes from: one entry per file, pinned to a full commit id.

`psedual data fetch` downloads https://raw.githubusercontent.com/<repo>/<commit>/<upstream>
(or the same layout under `--mirror`) and keeps a file only if its SHA256 is the one listed here.
The hashes are those of ../shared/data/SHA256SUMS; each was checked against the upstream blob:
the SHA256 of the blob's bytes, except Math_23K.json, whose blob the stored mirror lacks (too
large): there the git blob id (a SHA-1 of the bytes) was checked instead, 07aee406, the same
blob as 2003pro/Graph2Tree's math23k/data/Math_23K.json.

`math23k/split_ids.json` has no upstream file (it is derived: Graph2Tree's valid/test ids, train
= the rest), so it ships inside the package (psedual/data/bundled/) and fetch copies it into
place through the same SHA check. MathQA's training file (23,703 problems) is not listed:
it is bring-your-own (`<data root>/mathqa/train.json`, or a path given to the loader).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RAW_GITHUB = "https://raw.githubusercontent.com"
BUNDLED_DIR = Path(__file__).resolve().parent / "bundled"
_HEX = re.compile(r"[0-9a-f]+")


@dataclass(frozen=True)
class SourceFile:
    """One benchmark file: where it lives under the data root and where it comes from."""

    path: str
    """Path under the data root, as the loaders (registry.DatasetSpec.files) name it."""
    repo: str
    """GitHub owner/name it is downloaded from; '' for a file shipped in psedual/data/bundled/."""
    commit: str
    """Full 40-hex commit id the download is pinned to ('' when bundled)."""
    upstream: str
    """Path inside the repository at that commit (for a bundled file: its name in bundled/)."""
    sha256: str
    """SHA256 of the file's bytes; anything else is refused."""
    size: int
    """Size in bytes (for progress and to stop a download that runs past it)."""

    def __post_init__(self) -> None:
        if len(self.sha256) != 64 or not _HEX.fullmatch(self.sha256):
            raise ValueError(f"{self.path}: sha256 must be 64 lowercase hex digits, not {self.sha256!r}")
        if self.size <= 0:
            raise ValueError(f"{self.path}: size must be positive, not {self.size}")
        if self.repo and (len(self.commit) != 40 or not _HEX.fullmatch(self.commit) or self.repo.count("/") != 1):
            raise ValueError(f"{self.path}: needs owner/name and a full 40-hex commit, got {self.repo!r} @ {self.commit!r}")

    @property
    def bundled(self) -> bool:
        return not self.repo

    def url(self, base: str = RAW_GITHUB) -> str:
        """Where to download it: `base` replaces the raw.githubusercontent.com host (--mirror)."""
        if self.bundled:
            return (BUNDLED_DIR / self.upstream).as_uri()
        return f"{base.rstrip('/')}/{self.repo}/{self.commit}/{self.upstream}"


_MWPGEN = ("qinzhuowu/MWPGen", "fe46d3c145480e5eb7b35b78baa7ae19c6e5e16b")
_GRAPH2TREE = ("2003pro/Graph2Tree", "05b48a1608b1ad8cd7a7246910d0ebfad63ff051")
_DEDUCTIVE = ("allanj/Deductive-MWP", "b482b27b722fa81c2741956ca3c046a9fe047398")
_TOOLKIT = ("LYH-YF/MWPToolkit", "0993beb336c286a0f974d58834e932cf65e32249")
_SVAMP = ("arkilpatel/SVAMP", "689d7ccac74b9983a2ac7cc3b264f441b99e7c53")
_MWPBERT = ("LZhenwen/MWP-BERT", "1757d7d8c88b7e27dfff93b786335803398d3d6f")

_FOLD_SHA = ("cc139cc3a3e368e71a6549b39a95f4ed573c43c01283e86b41e6fa1b32d821f0",
             "8ac2fc0d3481f74558a6942be149dc5c23c24e7efe0aa7a69fc736426e0bbade",
             "1d984fb75e2367b0f432bd9ee07bc934f4cac17167c7add9b6114c9e2cb13d0c",
             "040ad7fe4151b33d289fa5f6d6c4d2cd53258523d081c409bfad1e944591f4b7",
             "2dd55ff0691cbd2152d3e018476714f4f3ccbd292ea5479a81de280ec0a131a1")
_FOLD_SIZE = (564653, 559388, 568493, 557369, 556063)

MANIFEST: dict[str, tuple[SourceFile, ...]] = {
    "math23k": (
        SourceFile("math23k/Math_23K.json", *_MWPGEN, "data/Math_23K.json",
                   "efe5e761b92c3329e3504e1e97e2f84abd9a409330448ad89f404d4b1f39e986", 8742551),
        SourceFile("math23k/split_ids.json", "", "", "split_ids.json",
                   "4bb8d1c7b0916d2f727e8700d73f4a35c0a7810913922ed29cccfb49ebd8274d", 197384),
        # Graph2Tree names it Math_23K_processed.json: the per-id group_num lists.
        SourceFile("math23k/group_num.json", *_GRAPH2TREE, "math23k/data/Math_23K_processed.json",
                   "3b4e987f90a01320cf816e660c35bdc433797aea2ad40a0d7e8aac18041bbd70", 1691562),
    ),
    "mawps": tuple(
        SourceFile(f"mawps/five_fold/fold_{k}.json", *_DEDUCTIVE, f"data/mawps-single-five-fold/test_{k}.json",
                   _FOLD_SHA[k], _FOLD_SIZE[k])
        for k in range(5)
    ),
    "mawps-single": (
        SourceFile("mawps/single_split/train.json", *_TOOLKIT, "dataset/mawps-single/trainset.json",
                   "fa235109621bae57bfd0062a8b4805f0dad8db23e177899ada975e6a9c9962bb", 518742),
        SourceFile("mawps/single_split/valid.json", *_TOOLKIT, "dataset/mawps-single/validset.json",
                   "68762bc4028e82e9ebc99e0fe05aab2e1d92d2d92829982022fe53e23ef57424", 65636),
        SourceFile("mawps/single_split/test.json", *_TOOLKIT, "dataset/mawps-single/testset.json",
                   "f708eb6cad56f2ad6bd09e266e83f8011c59edf486e487cfc9c06c22e021cf5e", 64551),
    ),
    "svamp": (
        SourceFile("svamp/train_mawps_asdiv-a.csv", *_SVAMP, "data/mawps-asdiv-a_svamp/train.csv",
                   "c761cdc6390a67a285c6c346a2931f61bc8f47430eceaeb123cc3d0263efa821", 1242909),
        SourceFile("svamp/test_svamp.csv", *_SVAMP, "data/mawps-asdiv-a_svamp/dev.csv",
                   "978425fa0820a147a20d3cb305a571d77b8ba0d1ccec4a96dd1470bf0079c338", 467974),
        SourceFile("svamp/SVAMP.json", *_SVAMP, "SVAMP.json",
                   "5be77703a6d891ae476d7c082787ad361392aa02453b132516cdd5f4e7934e3e", 339970),
    ),
    # valid/test only: the training file is bring-your-own (see the module docstring).
    "mathqa": (
        SourceFile("mathqa/valid.json", *_MWPBERT, "Fine-tuning/MathQA/data/MathQA_val.json",
                   "9d86d30e1aeb79ce75ae9e65a1aeea08151cb67feb44ce2d5ae567b55f1321c1", 1035336),
        SourceFile("mathqa/test.json", *_MWPBERT, "Fine-tuning/MathQA/data/MathQA_test.json",
                   "e18862a5f4f1cd785e71d79474e4c7e83d360521c8af6dc99a5e9efc80ccd870", 704878),
    ),
}

MATHQA_TRAIN = "mathqa/train.json"
"""Where a user's own MathQA training file goes (not downloaded)."""
