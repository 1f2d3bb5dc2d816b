"""Build what a GPU session carries to the device machine: one archive, .carry/session.tar.xz,
that must fit the 64 MiB a device call carries together with the working tree (docs/gpu.md).

The device's image has CUDA torch, torch-geometric, transformers, pyarrow, scipy, pytest and
more (bench/device_image.txt); it lacks Ray, Optuna, jsonargparse and what they need, and it
cannot reach a package index. Run here, with the venv `make install` made:

1. The packages psedual needs at run time that the image lacks: the closure of psedual's
   requirements, read from this venv's metadata (so their versions are the ones the tests
   passed with), markers evaluated for CPython 3.12 on Linux x86-64, less the image's packages
   and less `LEFT_OUT` (each with its reason, printed; each proven unneeded by the toy session's
   Ray stages, share, calibrate and gloo, run here with the package unimportable in every process,
   Ray's own included): 2 MiB of the wheels count in the 64.
2. Their wheels downloaded for CPython 3.12, manylinux x86-64 (`pip download`), installed into a
   staging folder, ELF files' symbol tables stripped (`strip --strip-unneeded`), and the parts of
   Ray no stage runs left out (`RAY_LEFT_OUT`).
3. With them: the benchmark files the stages read (Math23K, MAWPS), the MiniLM encoder's config
   and tokenizer (a stand-in encoder's: no weights), the published GTS code with its Math_23K.json
   and the side-by-side script (when `--reference` names a checkout), and this commit's id.
4. All of it in .carry/session.tar.xz (names sorted; xz with the x86 filter at -9e: `XZ`); every
   part's size printed, and the total, with the working tree as a device call counts it, against
   the limit.

On the device (bench/gpu_session.py does it with `--unpack .carry/session.tar.xz`) the archive
unpacks into a folder whose `site` goes on PYTHONPATH and whose `data` is PSEDUAL_DATA.

Usage: .venv/bin/python bench/gpu_carry.py [--reference /tmp/math_seq2tree] [--out .carry]
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import lzma
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
IMAGE = Path(__file__).with_name("device_image.txt")
LIMIT = 64 * 2**20
"""What one device call carries: the working tree and the carried paths together."""
DEVICE_ENV = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
              "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
              "implementation_name": "cpython", "platform_python_implementation": "CPython"}
"""The device's Python, for the requirements' markers."""
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64", "manylinux_2_5_x86_64")
LEFT_OUT = {"virtualenv": "Ray imports it only for a runtime env with pip or uv packages, which no stage uses",
            "distlib": "virtualenv's own", "python-discovery": "virtualenv's own",
            "py-spy": "a program Ray's dashboard runs to profile a worker on request; Train notes it missing and "
                      "goes on",
            "platformdirs": "virtualenv's own",
            "google-api-core": "opencensus's, Ray's metrics library, which requires it but imports none of it",
            "google-auth": "google-api-core's own", "proto-plus": "google-api-core's own",
            "pyasn1-modules": "google-auth's own", "pyasn1": "pyasn1-modules' own",
            "cryptography": "google-auth's own, imported only to sign or verify with a service account's key",
            "cffi": "cryptography's own", "pycparser": "cffi's own",
            "sqlalchemy": "Optuna's RDB storage, imported only when a study is stored in a database; psedual keeps "
                          "its studies in Optuna's journal files, psedual/tune/study.py",
            "alembic": "the RDB storage's schema migrations", "mako": "alembic's own",
            "smart-open": "Ray opens remote URIs with it, a runtime env's working_dir on S3 or GCS or objects spilled "
                          "to S3, which no stage uses",
            "typeshed-client": "jsonargparse reads a parameter's type from stub files with it only where the code has "
                               "no annotation; psedual's configs annotate every field: every command's --help and "
                               "--print_config read the same without it"}
"""Requirements that do not travel, with why."""
UNDECLARED = {"googleapis-common-protos": "opencensus imports google.rpc from it (opencensus/trace/status.py) without "
                                          "requiring it; google-api-core, which requires it, is left out"}
"""Packages that travel though only left-out ones require them: what imports them without saying so."""
RAY_LEFT_OUT = {"ray/jars": "Ray's Java workers", "ray/rllib": "RLlib",
                "ray/dashboard/client/build": "the dashboard's web page (its API, which Train's cleanup reads, stays)",
                "ray/serve": "Ray Serve: the dashboard's Serve module imports it only when asked about Serve "
                             "applications, and answers 501 without it",
                "ray/llm": "Ray's LLM serving and batch inference"}
"""Parts of the Ray wheel no stage runs (an emptied folder is kept where Ray checks that it exists)."""
DATASETS = ("math23k", "mawps")
XZ = ["--x86", "--lzma2=preset=9e"]
"""xz's filters: x86 (a binary's relative call targets made absolute, so repeated calls repeat: the Polars
runtime, 137 MiB, packs into 28.2 MB rather than 28.9 MB; text passes it unchanged), then LZMA2 at -9e, the
slowest search, single-threaded (threads split the stream into blocks that share no dictionary)."""
XZ_FILTERS = [{"id": lzma.FILTER_X86}, {"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]
"""The same, for Python's lzma where there is no xz."""


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def image_packages() -> set[str]:
    return {norm(line.strip()) for line in IMAGE.read_text().splitlines() if line.strip() and not line.startswith("#")}


def closure(root: str = "psedual", python: str = "3.12") -> dict[str, str]:
    """Every distribution `root` needs (its requirements, theirs, ... with their extras), name →
    the version installed here; markers evaluated for Linux x86-64 and CPython `python`."""
    return {name: version for name, (version, _) in graph(root, python).items()}


def graph(root: str = "psedual", python: str = "3.12") -> dict[str, tuple[str, set[str]]]:
    """`closure`'s distributions, name → (version, the names of those in it that require it)."""
    env = {**DEVICE_ENV, "python_version": python, "python_full_version": f"{python}.0"}
    found: dict[str, tuple[str, set[str]]] = {}
    todo = [(root, frozenset())]
    seen = set()
    while todo:
        name, extras = todo.pop()
        if (norm(name), extras) in seen:
            continue
        seen.add((norm(name), extras))
        dist = md.distribution(name)
        found.setdefault(norm(name), (dist.version, set()))
        for line in dist.requires or ():
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate({**env, "extra": e}) for e in {"", *extras}):
                todo.append((req.name, frozenset(req.extras)))
                if norm(req.name) != norm(name):
                    found.setdefault(norm(req.name), (md.version(req.name), set()))[1].add(norm(name))
    del found[norm(root)]
    return found


def needed(python: str = "3.12") -> tuple[dict[str, str], dict[str, str]]:
    """(what travels: name → version, what is left out: name → why)."""
    have, out, travel = image_packages(), {}, {}
    for name, version in sorted(closure(python=python).items()):
        if name in have or name.startswith("nvidia-"):
            continue
        if name in LEFT_OUT:
            out[name] = LEFT_OUT[name]
        else:
            travel[name] = version
    return travel, out


def pip(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "-q"], text=True,
                          stderr=subprocess.PIPE)
    # this machine's pip configuration names find-links folders that do not exist: one warning each
    noise = re.compile(r"WARNING: Location '.*' is ignored|WARNING: Running pip as the 'root' user")
    sys.stderr.write("".join(line + "\n" for line in done.stderr.splitlines() if not noise.match(line)))
    if done.returncode:
        sys.exit(f"pip {args[0]} failed (rc {done.returncode})")


def platform_args(python: str) -> list[str]:
    return ["--only-binary=:all:", "--python-version", python, "--implementation", "cp",
            *[a for p in PLATFORMS for a in ("--platform", p)]]


def stage(travel: dict[str, str], wheels: Path, site: Path, python: str) -> None:
    pip("download", "--no-deps", "-d", str(wheels), *platform_args(python), *[f"{n}=={v}" for n, v in travel.items()])
    pip("install", "--no-deps", "--no-compile", "--target", str(site), *platform_args(python),
        *sorted(str(w) for w in wheels.glob("*.whl")))
    for part in RAY_LEFT_OUT:
        shutil.rmtree(site / part, ignore_errors=True)
    (site / "ray/dashboard/client/build/static").mkdir(parents=True, exist_ok=True)  # the dashboard checks it
    strip = shutil.which("strip")
    for path in site.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.open("rb").read(4) == b"\x7fELF" and strip:
            subprocess.run([strip, "--strip-unneeded", str(path)], check=True)


def add_encoder(dest: Path) -> None:
    """The MiniLM package's config and tokenizer, no weights: a stand-in encoder is built from them."""
    from psedual.solvers.plm import plm_path

    source = plm_path("minilm")
    dest.mkdir(parents=True)
    for f in source.iterdir():
        if f.is_file() and f.suffix in (".json", ".txt"):
            shutil.copy2(f, dest / f.name)


def add_reference(reference: Path, data_root: Path, dest: Path) -> None:
    """The published GTS code (its src/) and data/Math_23K.json, taken from the data root when the
    checkout lacks it (the same bytes: ../shared/data/README.md)."""
    shutil.copytree(reference / "src", dest / "src", ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "data").mkdir(parents=True)
    json = reference / "data" / "Math_23K.json"
    shutil.copy2(json if json.is_file() else data_root / "math23k" / "Math_23K.json", dest / "data" / "Math_23K.json")


def working_tree() -> int:
    """Bytes of what a device call sends besides the carried paths, as it counts them: tracked and
    untracked, not ignored, files, and a shared/ folder inside the checkout; a link travels as a link."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.split(b"\0")
    paths = {ROOT / n.decode() for n in names if n}
    if (ROOT / "shared").is_dir() and not (ROOT / "shared").is_symlink():
        paths |= set((ROOT / "shared").rglob("*"))
    return sum(p.lstat().st_size for p in paths if p.is_symlink() or p.is_file())


def pack(carry: Path, archive: Path) -> None:
    """`carry` into one tar, its names sorted, compressed as `XZ` says (the device's tarfile reads it)."""
    with archive.open("wb") as f:
        if shutil.which("xz"):  # the same liblzma as Python's, and it compresses while tarfile writes
            xz = subprocess.Popen(["xz", *XZ, "-T1"], stdin=subprocess.PIPE, stdout=f)
            with tarfile.open(fileobj=xz.stdin, mode="w|") as t:
                t.add(carry, ".")  # a folder's entries in sorted order
            xz.stdin.close()
            if xz.wait():
                sys.exit(f"xz failed (rc {xz.returncode})")
        else:
            with lzma.open(f, "wb", format=lzma.FORMAT_XZ, filters=XZ_FILTERS) as z, \
                    tarfile.open(fileobj=z, mode="w|") as t:
                t.add(carry, ".")


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / ".carry"), help="folder for session.tar.xz (default .carry)")
    parser.add_argument("--reference", help="a checkout of the published GTS code (github ShichaoSun/math_seq2tree)")
    parser.add_argument("--side-by-side", default=str(ROOT.parent / "shared" / "bench" / "gts_side_by_side.py"),
                        help="the side-by-side script (default ../shared/bench/gts_side_by_side.py)")
    parser.add_argument("--python", default="3.12", help="the device's Python (3.12; another for a rehearsal "
                        "on this machine, docs/gpu.md)")
    args = parser.parse_args()
    from psedual.data.root import find_data_root

    data_root = find_data_root(None)
    travel, left_out = needed(args.python)
    print(f"{len(travel) + len(left_out)} packages psedual needs that the device's image lacks; {len(travel)} travel "
          f"(versions as installed here), {len(left_out)} are left out (below):")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        carry = tmp / "carry"
        stage(travel, tmp / "wheels", carry / "site", args.python)
        for wheel in sorted((tmp / "wheels").glob("*.whl")):
            print(f"  {wheel.name:<75} {wheel.stat().st_size / 2**20:6.2f} MiB")
        for name, why in left_out.items():
            print(f"  left out: {name} ({why})")
        for part, what in RAY_LEFT_OUT.items():
            print(f"  left out of Ray: {part} ({what})")
        print(f"  installed and stripped: {du(carry / 'site') / 2**20:.0f} MiB")
        for name in DATASETS:
            shutil.copytree(data_root / name, carry / "data" / name)
        add_encoder(carry / "minilm")
        if args.reference:
            add_reference(Path(args.reference), data_root, carry / "math_seq2tree")
            shutil.copy2(args.side_by_side, carry / "gts_side_by_side.py")
        else:
            print("  no --reference: the side-by-side stage will say it has no published GTS to run")
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        (carry / "COMMIT").write_text(commit + "\n")
        archive = out / "session.tar.xz"
        began = time.perf_counter()
        print(f"  packing {du(carry) / 2**20:.0f} MiB (xz {' '.join(XZ)}: some minutes) ...", flush=True)
        pack(carry, archive)
    tree = working_tree()
    size = archive.stat().st_size
    total = size + tree
    print(f"{archive}: {size / 2**20:.1f} MiB in {time.perf_counter() - began:.0f} s; with the working tree "
          f"({tree / 2**20:.1f} MiB): {total / 2**20:.1f} MiB of the {LIMIT / 2**20:.0f} MiB a device call carries"
          + (f", {(LIMIT - total) / 2**20:.1f} MiB to spare" if total <= LIMIT else
             f": {(total - LIMIT) / 2**20:.1f} MiB TOO MUCH"))
    if total > LIMIT:
        sys.exit(1)


if __name__ == "__main__":
    main()
