"""`psedual data fetch`: download the benchmarks from their public sources, pinned by commit.

    psedual data fetch                        # every fetchable dataset
    psedual data fetch mawps svamp --dest DIR
    psedual data fetch --if_missing mawps     # `make demo`: nothing when a data root has them
    psedual data fetch --sums mathqa          # the SHA256 list, for placing files by hand
    psedual data fetch --urls mathqa          # where each file comes from

Files go to --dest, else $PSEDUAL_DATA, else the per-user folder
${XDG_DATA_HOME:-~/.local/share}/psedual/data, which find_data_root() also searches.
Each file is streamed to `<file>.part`, its SHA256 checked against psedual/data/manifest.tsv,
then renamed into place: a reader never sees half a file, and bytes that fail the check are
deleted. A `.part` left by a broken connection is continued with an HTTP Range request.
Every download has a deadline as a whole (`--timeout` plus its size at `--min_rate`): the
per-read timeout alone never trips on a server that sends a byte a second. The deadline is kept
by a watchdog that shuts the attempt's connection when it passes, so a server that trickles its
status line or headers, or stalls before (or between) body bytes, is stopped there too: every
blocking read returns at once.
Nothing else in the package downloads anything.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from psedual.data.files import DataFileError
from psedual.data.manifest import BUNDLED_DIR, MANIFEST, MATHQA_TRAIN, RAW_GITHUB, SourceFile
from psedual.data.root import find_data_root, user_data_dir
from psedual.data.watchdog import Watchdog

_CHUNK = 1 << 16
_USER_AGENT = "psedual-data-fetch"
_TICK_FROM = 1 << 20  # files at least this big report every tenth of their size


class FetchError(DataFileError):
    """A download that failed or was refused; the message names the URL and what to do."""


@dataclass(frozen=True)
class FetchConfig:
    """What `psedual data fetch` downloads, from where, and into which folder."""

    datasets: tuple[str, ...] = ()
    """Datasets to fetch: math23k, mawps, mawps-single, svamp, mathqa; empty: all of them."""
    dest: str | None = None
    """Folder to write into; default $PSEDUAL_DATA, else ${XDG_DATA_HOME:-~/.local/share}/psedual/data."""
    mirror: str | None = None
    """Base URL of a host laid out like raw.githubusercontent.com (<base>/<owner>/<repo>/<commit>/<path>)."""
    timeout: float = 60.0
    """Seconds to wait for a connection, or for the next bytes of a download."""
    min_rate: float = 10_000.0
    """Bytes per second a download must average: each file's whole download (retries included) is
    stopped after --timeout seconds plus its size at this rate (Math23K's 8.3 MiB: 60 + 870 s),
    however slow the server is (trickled headers or a stall before the body too)."""
    retries: int = 2
    """Further attempts after a connection that broke mid-file, each resuming where it stopped."""
    if_missing: bool = False
    """Do nothing when the data root (--dest if given, else find_data_root()) already holds every file."""

    def __post_init__(self) -> None:
        names = tuple(dict.fromkeys(self.datasets))  # a list is accepted too; repeats dropped, order kept
        object.__setattr__(self, "datasets", names)
        for name in names:
            if name not in MANIFEST:
                hint = " (jsonl is your own data: there is nothing to fetch)" if name == "jsonl" else ""
                raise ValueError(f"unknown dataset {name!r}{hint}; fetchable: {', '.join(MANIFEST)}")
        if self.mirror is not None and not _is_url(self.mirror):
            raise ValueError(f"mirror must be an http:// or https:// URL with a host, not {self.mirror!r}")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be positive seconds, got {self.timeout}")
        if not self.min_rate > 0:
            raise ValueError(f"min_rate must be positive bytes per second, got {self.min_rate}")
        if self.retries < 0:
            raise ValueError(f"retries must be 0 or more, got {self.retries}")

    @property
    def names(self) -> tuple[str, ...]:
        return self.datasets or tuple(MANIFEST)

    def files(self) -> list[SourceFile]:
        return [f for name in self.names for f in MANIFEST[name]]

    def destination(self) -> Path:
        if self.dest is not None:
            return Path(self.dest).expanduser()
        if os.environ.get("PSEDUAL_DATA"):
            return Path(os.environ["PSEDUAL_DATA"]).expanduser()
        return user_data_dir()


def _is_url(text: str) -> bool:
    """An http(s) URL urllib can open: a host, a port in range, no spaces or control characters
    (`http://[x` or `http://h:99999` would otherwise fail later, in a message naming no option)."""
    if not re.match(r"https?://[^/]+", text) or any(ch.isspace() or ord(ch) < 32 for ch in text):
        return False
    try:
        parts = urllib.parse.urlsplit(text)
        return bool(parts.hostname) and (parts.port is None or parts.port > 0)  # .port raises for 99999 or "x"
    except ValueError:
        return False


@dataclass
class FetchReport:
    """What one fetch did."""

    dest: Path
    """The folder holding the files (with if_missing and the data found: the data root found)."""
    fetched: list[str] = field(default_factory=list)
    """Files downloaded (or copied from the package) and verified, relative to dest."""
    present: list[str] = field(default_factory=list)
    """Files already in place (verified by SHA256 unless if_missing found them), not downloaded."""
    downloaded_bytes: int = 0
    """Bytes received over the network (a resumed file counts only its new bytes)."""
    notes: list[str] = field(default_factory=list)
    """Things the user must know, such as MathQA's training file being bring-your-own."""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def fetch(config: FetchConfig, progress: Callable[[str], None] = _stderr) -> FetchReport:
    """Download every file of config's datasets that is not already in place with the right SHA256."""
    files = config.files()
    if config.if_missing and (root := _root_with(files, config)) is not None:
        progress(f"data present in {root}: nothing to fetch")
        return FetchReport(root, present=[f.path for f in files])
    dest = config.destination()
    report = FetchReport(dest)
    for f in files:
        _fetch_one(f, dest, config, progress, report)
    if "mathqa" in config.names:
        report.notes.append(f"MathQA's training file is bring-your-own: put it at {dest / MATHQA_TRAIN} (MathQA's "
                            "MWP form, as valid.json) or give its path to the loader; only valid/test are fetched")
    if config.if_missing:
        try:
            found = find_data_root()
        except DataFileError:
            found = None
        if found is not None and found.resolve() != dest.resolve():
            report.notes.append(f"the loaders look in {found} before {dest}: set PSEDUAL_DATA={dest}")
    for note in report.notes:
        progress(f"note: {note}")
    progress(f"done: {len(report.fetched)} fetched ({report.downloaded_bytes:,} bytes), "
             f"{len(report.present)} already present, in {dest}")
    return report


def _root_with(files: list[SourceFile], config: FetchConfig) -> Path | None:
    """The folder the loaders would read if it already holds every file (presence only: a folder
    such as shared/data is trusted as it is, and the loaders' cache keys hash the bytes anyway)."""
    try:
        root = Path(config.dest).expanduser() if config.dest is not None else find_data_root()
    except DataFileError:
        return None
    return root if all((root / f.path).is_file() for f in files) else None


def _fetch_one(f: SourceFile, dest: Path, config: FetchConfig, progress: Callable[[str], None],
               report: FetchReport) -> None:
    target = dest / f.path
    part = target.with_name(target.name + ".part")
    for path in (target, part):
        if path.exists() and not path.is_file():  # a folder there would fail the final rename with a traceback
            raise FetchError(f"{path}: is a folder (or another non-file) where the download of {f.path} must go; "
                             "move it away and run the command again")
    if part.is_symlink():  # bytes would be appended to (or a file created at) wherever it points
        raise FetchError(f"{part}: is a symbolic link where the partial download of {f.path} goes (to "
                         f"{os.readlink(part)}); a download is written there, never through a link: remove it and run "
                         "the command again")
    if target.is_file():
        got = _sha256(target)
        if got == f.sha256:
            progress(f"{f.path}: ok, already present ({f.size:,} bytes)")
            report.present.append(f.path)
            return
        progress(f"{f.path}: present but its SHA256 is {got}, not {f.sha256}: fetching it again")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise FetchError(f"{target.parent}: cannot create the folder ({err.strerror}); choose another --dest") from None
    url = f.url(config.mirror or RAW_GITHUB)
    try:
        if f.bundled:  # shipped in the package (see manifest.py): copied through the same check
            shutil.copyfile(BUNDLED_DIR / f.upstream, part)
            resumed = False
        else:
            resumed = _download(url, part, f, dest, config, progress, report)
        got = _sha256(part)
        if got != f.sha256 and resumed:
            # The kept prefix may be what is wrong (an older or foreign .part): one whole download decides.
            progress(f"{f.path}: the resumed file fails its SHA256 check: downloading it whole")
            part.unlink()
            _download(url, part, f, dest, config, progress, report)
            got = _sha256(part)
        if got != f.sha256:
            part.unlink()
            raise FetchError(f"{f.path}: refused the download from {url}: its SHA256 is {got}, expected {f.sha256}; "
                             f"nothing was kept (the host served other bytes than the pinned file: try again, or "
                             f"another --mirror, or place the file by hand at {target})")
        os.replace(part, target)
    except OSError as err:  # a full disk, a permission, a folder made meanwhile: one line naming the path
        where = err.filename or part
        raise FetchError(f"{where}: cannot write {f.path} there ({err.strerror or err}); free space, fix the "
                         "permission or choose another --dest") from None
    report.fetched.append(f.path)
    progress(f"{f.path}: done ({f.size:,} bytes, SHA256 ok)")


class _Failed(Exception):
    """One attempt that stopped: why, and how many bytes of the file are now in the .part."""

    def __init__(self, reason: str, have: int, progressed: bool, late: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.have, self.progressed, self.late = reason, have, progressed, late


def _download(url: str, part: Path, f: SourceFile, dest: Path, config: FetchConfig,
              progress: Callable[[str], None], report: FetchReport) -> bool:
    """Bring `part` to f.size bytes; True if it continued a .part already there."""
    start = part.stat().st_size if part.exists() else 0
    if start > f.size:  # longer than the file: cannot be a prefix of it
        part.unlink()
        start = 0
    resumed = start > 0
    if start == f.size:
        return resumed
    progress(f"{f.path}: {'resuming at ' + format(start, ',') + ' of' if start else 'downloading'} "
             f"{f.size:,} bytes from {url}")
    # One deadline for the whole file, retries included: a trickle never trips the per-read timeout.
    allowed = config.timeout + (f.size - start) / config.min_rate
    deadline = time.monotonic() + allowed
    attempts = 0
    while True:
        try:
            _attempt(url, part, f, config, progress, report, deadline)
            return resumed
        except _Failed as err:
            attempts += 1
            # Retry only a connection that broke mid-file; one that never answered is offline: fail fast.
            if err.late:
                raise FetchError(f"{f.path}: download from {url} stopped after {allowed:.0f} s with {err.have:,} of "
                                 f"{f.size:,} bytes: slower than --min_rate {config.min_rate:g} bytes/s (the "
                                 f"deadline is --timeout {config.timeout:g} s plus the file's size at that rate); "
                                 f"the bytes received are kept in {part}: run the command again to resume, lower "
                                 "--min_rate on a slow line, or use another --mirror") from None
            if not err.progressed or attempts > config.retries:
                raise FetchError(_offline_message(url, err, f, part, dest, config)) from None
            progress(f"{f.path}: connection broke at {err.have:,} of {f.size:,} bytes ({err.reason}); "
                     f"resuming (retry {attempts} of {config.retries})")


def _attempt(url: str, part: Path, f: SourceFile, config: FetchConfig, progress: Callable[[str], None],
             report: FetchReport, deadline: float) -> None:
    have = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": _USER_AGENT}
    if have:
        headers["Range"] = f"bytes={have}-"
    with Watchdog(deadline) as watchdog:
        try:
            _read_response(url, headers, part, have, f, config, progress, report, watchdog)
        except _Failed as err:
            if watchdog.fired and not err.late:  # the shut connection is what stopped it, not the server
                raise _Failed("past the download's deadline", err.have, err.progressed, late=True) from None
            raise


def _read_response(url: str, headers: dict[str, str], part: Path, have: int, f: SourceFile, config: FetchConfig,
                   progress: Callable[[str], None], report: FetchReport, watchdog: Watchdog) -> None:
    # The connection's own timeout never runs past the deadline (the watchdog cannot cut a connect
    # in progress); after it, each read still waits at most --timeout, and the watchdog the rest.
    timeout = min(config.timeout, max(watchdog.deadline - time.monotonic(), 0.001))
    try:
        response = watchdog.opener.open(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # the server will not serve from there: start over
            part.unlink()
            raise _Failed("HTTP 416 for the resume range", 0, True) from None
        raise _Failed(f"HTTP {err.code} {err.reason}", have, False) from None
    except urllib.error.URLError as err:  # refused, no route, DNS: the reason is the useful part
        raise _Failed(str(err.reason), have, False) from None
    except (OSError, http.client.HTTPException) as err:  # a timeout or reset while connecting
        raise _Failed(str(err) or type(err).__name__, have, False) from None
    with response:
        if have and response.status == 206 and _range_start(response) == have:
            done, mode = have, "ab"
        else:  # 200 (no Range support) or a range we did not ask for: the whole file again
            if have:
                progress(f"{f.path}: the server sent the whole file, not the rest: starting over")
            done, mode = 0, "wb"
        got_any = False
        tick = f.size // 10 if f.size >= _TICK_FROM else 0
        next_tick = (done // tick + 1) * tick if tick else 0
        with open(part, mode) as out:
            while done <= f.size:  # more than f.size bytes is not the file: the SHA check refuses it
                if watchdog.fired or time.monotonic() > watchdog.deadline:
                    out.flush()
                    raise _Failed("past the download's deadline", done, got_any, late=True)
                try:
                    # read1: whatever has arrived (read(n) would wait for all n bytes, past any deadline)
                    chunk = response.read1(_CHUNK)
                except (OSError, http.client.HTTPException) as err:
                    out.flush()
                    raise _Failed(str(err) or type(err).__name__, done, got_any) from None
                if not chunk:
                    break
                out.write(chunk)
                done += len(chunk)
                report.downloaded_bytes += len(chunk)
                got_any = True
                if tick and done >= next_tick and done < f.size:
                    progress(f"{f.path}: {done / 2**20:.1f} of {f.size / 2**20:.1f} MiB ({100 * done // f.size}%)")
                    next_tick = (done // tick + 1) * tick
            out.flush()
            os.fsync(out.fileno())
    if watchdog.fired:  # the watchdog's shutdown reads as the end of the body
        raise _Failed("past the download's deadline", done, got_any, late=True)
    if done < f.size:  # the server closed the connection early (http.client does not raise for it)
        raise _Failed(f"connection closed after {done:,} bytes", done, got_any)


def _range_start(response: http.client.HTTPResponse) -> int | None:
    match = re.match(r"bytes (\d+)-", response.headers.get("Content-Range", ""))
    return int(match.group(1)) if match else None


def _offline_message(url: str, err: _Failed, f: SourceFile, part: Path, dest: Path, config: FetchConfig) -> str:
    names = " ".join(config.names)
    kept = f"; the {err.have:,} bytes received are kept in {part}: run the command again to resume" if err.have else ""
    return (f"cannot download {url} ({err.reason}){kept}. Offline? Put the files there by hand: {f.path} goes to "
            f"{dest / f.path} with SHA256 {f.sha256}; `psedual data fetch --sums {names}` lists every file "
            f"and its SHA256 (check them with `sha256sum -c` inside {dest}) and `--urls {names}` where each comes from; "
            f"or use --mirror URL for a host with the same layout")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as src:
        while block := src.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def listing(config: FetchConfig, what: str) -> list[str]:
    """`SHA256  path` lines (`sums`, for `sha256sum -c` after placing files by hand) or
    `URL  path` lines (`urls`) of the files `config` names."""
    if what == "sums":
        return [f"{f.sha256}  {f.path}" for f in config.files()]
    return [f"{f.url(config.mirror or RAW_GITHUB)}  {f.path}" for f in config.files()]
