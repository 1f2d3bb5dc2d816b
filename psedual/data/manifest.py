"""Where every benchmark file comes from: one entry per file in manifest.tsv, pinned to a full commit id.

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


MANIFEST_TSV = Path(__file__).resolve().parent / "manifest.tsv"
_COLUMNS = ["dataset", "path", "repo", "commit", "upstream", "sha256", "size"]


def read_manifest(path: Path = MANIFEST_TSV) -> dict[str, tuple[SourceFile, ...]]:
    """The table of benchmark files, dataset by dataset in the file's order.

    It is kept as data (a tab-separated file) rather than literals; a malformed line is an
    error naming the file, the line and what is wrong.
    """
    lines = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if line.strip() and not line.startswith("#")]
    if not lines or lines[0][1].split("\t") != _COLUMNS:
        raise ValueError(f"{path}: the first line that is not a comment must be the header {'/'.join(_COLUMNS)}")
    table: dict[str, list[SourceFile]] = {}
    for n, line in lines[1:]:
        cells = line.split("\t")
        if len(cells) != len(_COLUMNS):
            raise ValueError(f"{path}:{n}: {len(cells)} tab-separated cells, expected {len(_COLUMNS)}")
        dataset, rel, repo, commit, upstream, sha256, size = cells
        if not size.isdigit():
            raise ValueError(f"{path}:{n}: size must be a whole number of bytes, not {size!r}")
        try:
            source = SourceFile(rel, "" if repo == "-" else repo, "" if commit == "-" else commit,
                                upstream, sha256, int(size))
        except ValueError as err:
            raise ValueError(f"{path}:{n}: {err}") from None
        table.setdefault(dataset, []).append(source)
    return {name: tuple(files) for name, files in table.items()}


MANIFEST: dict[str, tuple[SourceFile, ...]] = read_manifest()
"""dataset name -> its files, from manifest.tsv."""

MATHQA_TRAIN = "mathqa/train.json"
"""Where a user's own MathQA training file goes (not downloaded)."""
