"""The README is a guide that cannot drift from the CLI: every command in its code blocks is
checked (a `psedual` command's sub-command answers `--help` and lists each option the README
gives it; make targets, files and scripts exist), and it stays short (the topics are in docs/)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from psedual.cli import main

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
MAX_LINES = 350
DOCS = ("data", "solvers", "psedual", "sweeps", "cluster", "gpu", "llm", "analysis", "results")


def commands(text: str) -> list[str]:
    """The shell commands in the text's ```sh blocks, comments dropped, `\\` lines joined."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                out.append(shlex.join(words))
    return out


def _psedual_help(args: list[str], capsys) -> str:
    """The help of the sub-command `args` names: its leading plain words (not options, paths or
    quoted text)."""
    words = []
    for arg in args:
        if not re.fullmatch(r"[a-z0-9]+", arg):
            break
        words.append(arg)
    with pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    assert done.value.code == 0, f"psedual {' '.join(words)} --help failed"
    return capsys.readouterr().out


def check(command: str, capsys) -> None:
    """Fail unless the README's `command` names what exists, with options its parser knows."""
    words = shlex.split(command)
    if words[0] == ".venv/bin/ray":
        words[0] = "ray"
    if words[:2] == ["ray", "submit"]:  # ray's own options (--tmux) come before the cluster file
        words = ["ray", "submit", *(w for w in words[2:words.index("tune.py") - 1] if not w.startswith("--")),
                 *words[words.index("tune.py") - 1:]]
    if words[0] in (".venv/bin/psedual", "psedual"):
        args = words[1:]
    elif words[:2] == ["python", "tune.py"]:
        args = ["tune", *words[2:]]
    elif words[:2] == ["ray", "submit"]:
        assert (ROOT / words[2]).is_file() and words[3] == "tune.py", command
        args = ["tune", *words[4:]]
        space = args[args.index("--space") + 1]  # gpu.yaml mounts the repository as ~/psedual
        assert (ROOT / space.removeprefix("psedual/")).is_file(), space
    elif words[0] == "ray" and words[1] in ("up", "down"):
        assert (ROOT / words[2]).is_file(), command
        return
    elif words[0] == "make":
        assert re.search(rf"^{re.escape(words[1])}:", (ROOT / "Makefile").read_text(), re.M), command
        return
    elif words[:3] == [".venv/bin/pip", "install", "-e"]:  # an extra of this package
        extra = re.fullmatch(r"\.\[(\w+)\]", words[3]).group(1)
        assert re.search(rf"^{extra} = \[", (ROOT / "pyproject.toml").read_text(), re.M), command
        return
    elif words[0] in (".venv/bin/optuna-dashboard", ".venv/bin/tensorboard"):  # the track extra's viewers
        tool = words[0].rsplit("/", 1)[1]
        track = re.search(r"^track = \[(.*)\]", (ROOT / "pyproject.toml").read_text(), re.M).group(1)
        assert f'"{tool}' in track, command
        if tool == "optuna-dashboard":  # the study file a sweep writes (psedual.storage)
            from psedual.storage import STUDY_FILE

            assert re.fullmatch(rf"results/[\w.-]+/{re.escape(STUDY_FILE)}", words[1]), command
        else:
            assert words[1] == "--logdir" and words[2].startswith("results"), command
        return
    elif words[0] in ("python", ".venv/bin/python") and words[1] == "-c":
        compile(words[2], "README", "exec")
        return
    else:
        raise AssertionError(f"README command with no check here: {command} (add one to tests/test_readme.py)")
    help_text = _psedual_help(args, capsys)
    for arg in args:
        if arg.startswith("--"):  # a list option's `--key+ VALUE` (add VALUE) is the option `--key`
            option = arg.split("=")[0].removesuffix("+")
            assert re.search(rf"{re.escape(option)}\b", help_text), f"{arg} is not an option of: {command}"
    if "--space" in args and words[0] != "ray":
        assert (ROOT / args[args.index("--space") + 1]).is_file(), command


def test_every_readme_command_parses(capsys):
    found = commands(README.read_text())
    assert len(found) >= 15 and any(c.startswith("make demo") for c in found)
    for command in found:
        check(command, capsys)


def test_the_main_jobs_next_commands_parse(capsys):
    from psedual.job import NEXT

    for _, command in NEXT:  # as printed from a checkout's .venv
        check(command.format(storage="results", psedual=".venv/bin/psedual", ray=".venv/bin/ray",
                             python=".venv/bin/python"), capsys)


def test_the_next_commands_name_this_environments_programs(monkeypatch, tmp_path):
    import sys

    from psedual.job import programs

    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "psedual").touch()
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.chdir(tmp_path)
    # never a bare `python`: another interpreter unless the venv is active
    assert programs() == {"python": ".venv/bin/python", "psedual": ".venv/bin/psedual", "ray": "ray"}
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert programs()["psedual"] == str(bin_dir / "psedual")


def test_the_check_catches_an_option_the_cli_lacks(capsys):
    check(".venv/bin/psedual train --solver gts --out runs/x", capsys)
    with pytest.raises(AssertionError, match="--solvr is not an option"):
        check(".venv/bin/psedual train --solvr gts --out runs/x", capsys)
    with pytest.raises(AssertionError, match="no check here"):
        check("curl https://example.com", capsys)
    check(".venv/bin/pip install -e '.[cluster]'", capsys)
    with pytest.raises(AssertionError, match="clustr"):
        check(".venv/bin/pip install -e '.[clustr]'", capsys)


def test_the_readme_is_a_short_guide_with_its_topics_in_docs():
    text = README.read_text()
    assert len(text.splitlines()) <= MAX_LINES
    for name in DOCS:
        assert f"(docs/{name}.md)" in text and (ROOT / "docs" / f"{name}.md").is_file(), name


def test_every_measured_figure_row_says_when_where_and_how():
    rows = [line for line in (ROOT / "docs" / "results.md").read_text().splitlines() if line.startswith("| ")]
    assert rows[0] == "| date | commit | machine | command | figure |" and len(rows) > 10
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 5 and all(cells), row


def test_ci_runs_the_test_command_the_readme_gives():
    """CI checks what a new user runs: .ci/run's one command is the README's test command, the
    one whose comment names .ci/run."""
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith(("#", "set ", "cd ", "start=", "trap "))]
    readme = [c for c in commands(README.read_text()) if c.startswith("make ")]
    said = [line.split("#")[0].strip() for line in README.read_text().splitlines() if "what CI runs: .ci/run" in line]
    assert ci == ["make test"] and said == ["make test"] and "make test" in readme, (ci, said)


def test_an_editable_install_has_nothing_of_setuptools_to_say():
    """`make install` printed a 10-line setuptools BuildBackendWarning ("Editable installation ... folders
    in your working directory with the same name as your package"): its import finder's note for a layout
    pyproject.toml did not name. Built as pip builds it (PEP 660), every warning recorded."""
    import subprocess
    import sys

    code = ("import json, tempfile, warnings\nfrom setuptools import build_meta\n"
            "with warnings.catch_warnings(record=True) as caught, tempfile.TemporaryDirectory() as out:\n"
            "    warnings.simplefilter('always')\n    build_meta.build_editable(out)\n"
            "print(json.dumps([f'{w.category.__name__}: {w.message}' for w in caught]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]", done.stdout.splitlines()[-1]
