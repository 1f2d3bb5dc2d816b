"""`psedual data fetch` against a loopback server that serves ../shared/data in the upstream
(raw.githubusercontent.com) layout: byte-identical files, refused corruption, resumed downloads,
the offline message; and the manifest and data-root lookup it relies on."""

from __future__ import annotations

import hashlib
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from psedual.data import root as root_module
from psedual.cli import main as cli_main
from psedual.data.fetch import FetchConfig, fetch
from psedual.data.files import DataFileError
from psedual.data.manifest import BUNDLED_DIR, MANIFEST, MANIFEST_TSV, read_manifest
from psedual.data.registry import DATASETS
from psedual.data.root import find_data_root

TRICKLE_S = 0.2
STALL_S = 2.8  # under the stall test's --timeout of 3 s: no single read times out
SLOW_FOR_S = 15.0  # the longest the loopback server keeps trickling or stalling one response
ROUTES = {f"/{f.repo}/{f.commit}/{f.upstream}": f for files in MANIFEST.values() for f in files if not f.bundled}


class Upstream:
    """What the loopback server serves, and what it was asked."""

    def __init__(self, data_root: Path) -> None:
        self.data_root = data_root
        self.corrupt: set[str] = set()
        """Files served with one byte flipped (data-root relative paths)."""
        self.cut: set[str] = set()
        """Files whose next response stops halfway through (once each)."""
        self.trickle: set[str] = set()
        """Files served one byte every TRICKLE_S seconds: never slow enough for the per-read timeout."""
        self.trickle_headers: set[str] = set()
        """Files whose status line and headers come one byte every TRICKLE_S seconds (for at most
        SLOW_FOR_S): no body byte ever comes, and no read waits long enough to time out."""
        self.stall: set[str] = set()
        """Files whose headers come at once, then each body byte after STALL_S seconds of silence."""
        self.ignore_range = False
        """Answer every request with the whole file (200), as a server without Range support does."""
        self.requests: list[tuple[str, str | None]] = []
        """(data-root relative path, Range header) of every request."""
        self.url = ""


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        up: Upstream = self.server.upstream
        f = ROUTES.get(self.path)
        up.requests.append((f.path if f else self.path, self.headers.get("Range")))
        if f is None:
            self.send_error(404)
            return
        if f.path in up.trickle_headers:
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {f.size}\r\nX-Padding: {'x' * 1000}\r\n\r\n".encode()
            _slowly(self.wfile, head, TRICKLE_S)
            return
        body = bytearray((up.data_root / f.path).read_bytes())
        if f.path in up.corrupt:
            body[len(body) // 2] ^= 0x20
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if match and not up.ignore_range:
            start = int(match.group(1))
            if start >= len(body):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        payload = bytes(body[start:])
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if f.path in up.trickle or f.path in up.stall:
            self.wfile.flush()
            _slowly(self.wfile, payload, STALL_S if f.path in up.stall else TRICKLE_S, first=f.path in up.stall)
            return
        if f.path in up.cut:  # the connection drops halfway: the client sees fewer bytes than announced
            up.cut.discard(f.path)
            self.wfile.write(payload[: len(payload) // 2])
            return
        self.wfile.write(payload)

    def log_message(self, *args) -> None:
        pass


def _slowly(out, payload: bytes, pause: float, first: bool = False) -> None:
    """Write `payload` a byte at a time, `pause` seconds apart (before the first byte too when
    `first`), for at most SLOW_FOR_S: a test on code without a deadline still ends."""
    began = time.monotonic()
    try:
        for i in range(len(payload)):
            if first or i:
                time.sleep(pause)
            if time.monotonic() - began > SLOW_FOR_S:
                return
            out.write(payload[i:i + 1])
            out.flush()
    except OSError:  # the client gave up: what the test wants
        pass


@pytest.fixture
def upstream(data_root, monkeypatch):
    monkeypatch.setenv("no_proxy", "127.0.0.1")  # a user's proxy must not see loopback requests
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.upstream = up = Upstream(Path(data_root))
    up.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield up
    server.shutdown()
    server.server_close()
    thread.join()


def main(argv: list[str]) -> int:
    return cli_main(["data", "fetch", *argv])


def _run(up: Upstream, dest: Path, *args: str) -> int:
    return main([*args, "--mirror", up.url, "--dest", str(dest)])


def _assert_identical(dest: Path, data_root, names: tuple[str, ...]) -> None:
    for name in names:
        for f in MANIFEST[name]:
            assert (dest / f.path).read_bytes() == (Path(data_root) / f.path).read_bytes(), f.path
    assert not list(dest.rglob("*.part"))


def test_fresh_folder_gets_byte_identical_files(upstream, data_root, tmp_path, capsys):
    dest = tmp_path / "data"
    assert _run(upstream, dest, "svamp", "mawps-single") == 0
    _assert_identical(dest, data_root, ("svamp", "mawps-single"))
    err = capsys.readouterr().err
    assert "svamp/SVAMP.json: done (339,970 bytes, SHA256 ok)" in err
    # A second run verifies what is there and downloads nothing.
    served = len(upstream.requests)
    assert _run(upstream, dest, "svamp", "mawps-single") == 0
    assert len(upstream.requests) == served
    assert "svamp/SVAMP.json: ok, already present" in capsys.readouterr().err


def test_math23k_with_the_packaged_split_ids_and_progress(upstream, data_root, tmp_path):
    lines: list[str] = []
    report = fetch(FetchConfig(("math23k",), str(tmp_path), upstream.url), lines.append)
    _assert_identical(tmp_path, data_root, ("math23k",))
    assert sorted(report.fetched) == sorted(f.path for f in MANIFEST["math23k"])
    assert "math23k/split_ids.json" not in {p for p, _ in upstream.requests}  # from the package, not the host
    assert any(re.search(r"math23k/Math_23K.json: [\d.]+ of 8.3 MiB \(\d+%\)", line) for line in lines)


def test_a_corrupted_download_is_refused_and_not_kept(upstream, data_root, tmp_path, capsys):
    upstream.corrupt.add("svamp/SVAMP.json")
    assert _run(upstream, tmp_path, "svamp") == 2
    err = capsys.readouterr().err.splitlines()[-1]  # after the progress lines: one error line
    f = MANIFEST["svamp"][2]
    served = bytearray((Path(data_root) / f.path).read_bytes())
    served[len(served) // 2] ^= 0x20
    assert err.startswith("psedual: error: svamp/SVAMP.json: refused the download from " + f.url(upstream.url))
    assert f"its SHA256 is {hashlib.sha256(served).hexdigest()}, expected {f.sha256}" in err
    assert not (tmp_path / f.path).exists()
    assert not (tmp_path / (f.path + ".part")).exists()


def test_a_corrupted_partial_file_is_downloaded_whole(upstream, data_root, tmp_path):
    f = MANIFEST["svamp"][2]
    part = tmp_path / (f.path + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 1000)  # a prefix that is not the file's
    fetch(FetchConfig(("svamp",), str(tmp_path), upstream.url), lambda line: None)
    _assert_identical(tmp_path, data_root, ("svamp",))
    assert (f.path, "bytes=1000-") in upstream.requests and (f.path, None) in upstream.requests


def test_an_interrupted_download_resumes(upstream, data_root, tmp_path, capsys):
    f = MANIFEST["svamp"][2]
    upstream.cut.add(f.path)
    assert _run(upstream, tmp_path, "svamp", "--retries", "0") == 2
    assert "run the command again to resume" in capsys.readouterr().err
    part = tmp_path / (f.path + ".part")
    half = f.size // 2
    assert part.read_bytes() == (Path(data_root) / f.path).read_bytes()[:half]
    assert not (tmp_path / f.path).exists()
    assert _run(upstream, tmp_path, "svamp") == 0
    assert upstream.requests[-1] == (f.path, f"bytes={half}-")
    _assert_identical(tmp_path, data_root, ("svamp",))


def test_a_broken_connection_is_resumed_in_the_same_run(upstream, data_root, tmp_path):
    f = MANIFEST["mawps-single"][1]
    upstream.cut.add(f.path)
    fetch(FetchConfig(("mawps-single",), str(tmp_path), upstream.url, retries=1), lambda line: None)
    assert (f.path, f"bytes={f.size // 2}-") in upstream.requests
    _assert_identical(tmp_path, data_root, ("mawps-single",))


def test_a_server_without_range_support_starts_over(upstream, data_root, tmp_path):
    f = MANIFEST["svamp"][2]
    part = tmp_path / (f.path + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes((Path(data_root) / f.path).read_bytes()[:5000])
    upstream.ignore_range = True
    lines: list[str] = []
    fetch(FetchConfig(("svamp",), str(tmp_path), upstream.url), lines.append)
    _assert_identical(tmp_path, data_root, ("svamp",))
    # One request: the 200 answer is written from the start, not appended to the 5,000 bytes kept.
    assert [r for r in upstream.requests if r[0] == f.path] == [(f.path, "bytes=5000-")]
    assert f"{f.path}: the server sent the whole file, not the rest: starting over" in lines


def test_a_trickling_server_is_stopped_at_the_whole_download_deadline(upstream, tmp_path, capsys):
    f = MANIFEST["svamp"][0]
    upstream.trickle.add(f.path)
    began = time.monotonic()
    # 1 s of --timeout (more than TRICKLE_S: the per-read timeout never trips) plus the file at 1 MB/s
    allowed = 1 + f.size / 1e6
    assert _run(upstream, tmp_path, "svamp", "--timeout", "1", "--min_rate", "1e6") == 2
    took = time.monotonic() - began
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith(f"psedual: error: {f.path}: download from {f.url(upstream.url)} stopped after "
                          f"{allowed:.0f} s with ")
    assert "slower than --min_rate 1e+06 bytes/s" in err and "run the command again to resume" in err
    assert allowed <= took < allowed + 3
    have = int(re.search(r"with ([\d,]+) of", err).group(1).replace(",", ""))
    assert 0 < have < f.size and (tmp_path / (f.path + ".part")).stat().st_size == have
    with pytest.raises(ValueError, match="min_rate must be positive"):
        FetchConfig(min_rate=0)


@pytest.mark.parametrize("how", ["trickle_headers", "stall"])
def test_a_server_slow_before_the_body_is_stopped_at_the_same_deadline(upstream, tmp_path, capsys, how):
    """The deadline holds where the per-read timeout restarts with every byte: headers trickled
    (no body byte ever comes) or a silence just under --timeout before each body byte."""
    f = MANIFEST["svamp"][0]
    getattr(upstream, how).add(f.path)
    timeout = 1 if how == "trickle_headers" else 3
    allowed = timeout + f.size / 1e9
    began = time.monotonic()
    assert _run(upstream, tmp_path, "svamp", "--timeout", str(timeout), "--min_rate", "1e9") == 2
    took = time.monotonic() - began
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith(f"psedual: error: {f.path}: download from {f.url(upstream.url)} stopped after "
                                f"{allowed:.0f} s with "), lines
    have = int(re.search(r"with ([\d,]+) of", lines[-1]).group(1).replace(",", ""))
    assert have == (0 if how == "trickle_headers" else 1)  # the stall: one byte came at STALL_S, the next never
    assert "slower than --min_rate 1e+09 bytes/s" in lines[-1]
    assert allowed <= took < allowed + 1.5, took  # without the watchdog: SLOW_FOR_S (headers), 2 * STALL_S (stall)
    assert len(lines) == 2  # the progress line and the error: no retry after the deadline


@pytest.mark.parametrize("where", ["", ".part"])
def test_a_folder_where_a_file_goes_is_one_line(upstream, tmp_path, capsys, where):
    f = MANIFEST["svamp"][0]
    (tmp_path / (f.path + where)).mkdir(parents=True)
    assert _run(upstream, tmp_path, "svamp") == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (f"psedual: error: {tmp_path / (f.path + where)}: is a folder (or another non-file) where the "
                       f"download of {f.path} must go; move it away and run the command again")


@pytest.mark.parametrize("points_to", ["a file", "nowhere"])
def test_a_symlink_where_the_part_goes_is_one_line_and_nothing_is_written_through_it(upstream, tmp_path, capsys,
                                                                                     points_to):
    """A `.part` that is a symlink: a resumed download appended the file's bytes to whatever it
    pointed at (a file of the user's), or created the file at a dangling link's target."""
    f = MANIFEST["svamp"][0]
    outside = tmp_path / "outside.txt"
    if points_to == "a file":
        outside.write_text("precious\n")
    part = tmp_path / "dest" / (f.path + ".part")
    part.parent.mkdir(parents=True)
    part.symlink_to(outside)
    assert _run(upstream, tmp_path / "dest", "svamp") == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (f"psedual: error: {part}: is a symbolic link where the partial download of {f.path} goes (to "
                       f"{outside}); a download is written there, never through a link: remove it and run the "
                       "command again")
    assert (outside.read_text() == "precious\n") if points_to == "a file" else not outside.exists()
    assert not upstream.requests


@pytest.mark.parametrize("mirror", ["http://[x", "http://127.0.0.1:99999", "http://h:port", "http://", "http://a b"])
def test_a_mirror_urllib_cannot_open_is_refused_naming_it(tmp_path, capsys, mirror):
    assert main(["svamp", "--mirror", mirror, "--dest", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"psedual: error: mirror must be an http:// or https:// URL with a host, not {mirror!r}"]


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed on return: nothing listens there


def test_server_down_gives_the_offline_message(tmp_path, capsys):
    mirror = f"http://127.0.0.1:{_dead_port()}"
    assert main(["svamp", "--mirror", mirror, "--dest", str(tmp_path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    f = MANIFEST["svamp"][0]
    assert lines[0] == f"{f.path}: downloading {f.size:,} bytes from {f.url(mirror)}"
    assert len(lines) == 2  # the progress line, then one error line
    err = lines[1]
    assert err.startswith(f"psedual: error: cannot download {f.url(mirror)} (")
    assert f"Offline? Put the files there by hand: {f.path} goes to {tmp_path / f.path} with SHA256 {f.sha256}" in err
    assert "--sums svamp" in err and "--mirror URL" in err
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # no empty or partial file left (folders are)


def test_the_module_runs_as_a_command(tmp_path, capsys):
    mirror = f"http://127.0.0.1:{_dead_port()}"
    done = subprocess.run([sys.executable, "-m", "psedual.cli", "data", "fetch", "mathqa", "--mirror", mirror, "--dest",
                           str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Offline?" in done.stderr
    assert main(["--sums", "mathqa"]) == 0  # in-process: one subprocess shows the command runs
    assert capsys.readouterr().out.splitlines() == [f"{f.sha256}  {f.path}" for f in MANIFEST["mathqa"]]


def test_unknown_dataset_names_the_valid_ones(capsys):
    assert main(["mawps", "nope"]) == 2
    assert "unknown dataset 'nope'; fetchable: math23k, mawps, mawps-single, svamp, mathqa" in capsys.readouterr().err
    with pytest.raises(ValueError, match="jsonl is your own data"):
        FetchConfig(("jsonl",))


def test_mathqa_train_is_bring_your_own(upstream, tmp_path):
    report = fetch(FetchConfig(("mathqa",), str(tmp_path), upstream.url), lambda line: None)
    assert sorted(report.fetched) == ["mathqa/test.json", "mathqa/valid.json"]
    assert any("bring-your-own" in note and str(tmp_path / "mathqa/train.json") in note for note in report.notes)


def test_if_missing_fetches_only_when_the_files_are_missing(upstream, tmp_path):
    # The data root the loaders find (shared/data here) already has MAWPS: nothing is asked for.
    report = fetch(FetchConfig(("mawps",), None, upstream.url, if_missing=True), lambda line: None)
    assert report.fetched == [] and upstream.requests == []
    report = fetch(FetchConfig(("mawps",), str(tmp_path), upstream.url, if_missing=True), lambda line: None)
    assert len(report.fetched) == 5
    report = fetch(FetchConfig(("mawps",), str(tmp_path), upstream.url, if_missing=True), lambda line: None)
    assert report.fetched == [] and len(upstream.requests) == 5


def test_the_manifest_covers_every_registry_file_with_the_shared_hashes(data_root):
    listed = {name: {f.path for f in files} for name, files in MANIFEST.items()}
    for name, spec in DATASETS.items():
        missing = set(spec.files) - listed.get(name, set())
        assert not missing, f"{name}: {sorted(missing)} not in psedual/data/manifest.tsv"
    # shared/data carries its SHA256SUMS; a fetched data root does not (its files were checked as
    # they arrived): there the files' own hashes are compared.
    sums_file = Path(data_root) / "SHA256SUMS"
    sums = dict(line.split()[::-1] for line in sums_file.read_text().splitlines()) if sums_file.exists() else {}
    for files in MANIFEST.values():
        for f in files:
            path = Path(data_root) / f.path
            assert sums.get(f"./{f.path}", hashlib.sha256(path.read_bytes()).hexdigest()) == f.sha256, f.path
            assert path.stat().st_size == f.size, f.path
    bundled = MANIFEST["math23k"][1]
    assert hashlib.sha256((BUNDLED_DIR / bundled.upstream).read_bytes()).hexdigest() == bundled.sha256


@pytest.mark.parametrize("edit, message", [
    (lambda lines: ["dataset\tpath"] + lines[1:], "must be the header"),
    (lambda lines: lines + ["svamp\tsvamp/x.csv\tarkilpatel/SVAMP"], ":18: 3 tab-separated cells, expected 7"),
    (lambda lines: lines + [lines[-1].replace("\t704878", "\tbig")], ":18: size must be a whole number"),
    (lambda lines: lines + [lines[-1].replace("e18862a5", "E18862A5")], ":18: mathqa/test.json: sha256 must be 64 lowercase"),
])
def test_a_malformed_manifest_line_names_the_file_and_line(tmp_path, edit, message):
    lines = [line for line in MANIFEST_TSV.read_text().splitlines() if not line.startswith("#")]
    bad = tmp_path / "manifest.tsv"
    bad.write_text("\n".join(edit(lines)) + "\n")
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        read_manifest(bad)
    assert str(bad) in str(err.value)
    assert read_manifest(MANIFEST_TSV) == MANIFEST


def test_find_data_root_finds_the_per_user_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("PSEDUAL_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(root_module, "_PACKAGE_DIR", tmp_path / "site" / "psedual" / "data")  # no shared/data near
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with pytest.raises(DataFileError, match=r"`psedual data fetch` downloads the benchmarks into .*xdg/psedual/data"):
        find_data_root()
    (tmp_path / "xdg/psedual/data").mkdir(parents=True)
    assert find_data_root() == tmp_path / "xdg/psedual/data"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home/.local/share/psedual/data").mkdir(parents=True)
    assert find_data_root() == tmp_path / "home/.local/share/psedual/data"
    # $PSEDUAL_DATA, and fetch's default destination, come first.
    monkeypatch.setenv("PSEDUAL_DATA", str(tmp_path))
    assert find_data_root() == tmp_path
    assert FetchConfig().destination() == tmp_path
