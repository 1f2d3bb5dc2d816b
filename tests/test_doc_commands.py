"""Every command in README.md's and docs/*.md's ```sh blocks, run as printed: a newcomer copies them
from the checkout's root into a shell without the venv active, and each must do what it says.

Each command meets the first rule below that matches it: run as printed, run with a stated override
(a long one parses its options and prints its config, or prices its plan, and stops there), or
skipped with its reason (needs a cluster, the network, a GPU, a server that runs until stopped, or a
sweep's results that a long run makes). A command no rule matches fails the test, and so does a rule
that matches no command: a new line in the docs gets its rule here.

The commands run in a folder that holds the checkout (its files linked, `results/` a copy of the
converged study's committed tables), with a fresh HOME and a PATH without the venv (a bare `python`
or `psedual` is then not this project's), each document's commands in order (a line may read the
file the line before it wrote). The data root is the one the suite uses (`PSEDUAL_DATA`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from psedual.data.root import find_data_root

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))
COMMITTED_TABLES = ROOT / "docs" / "converged" / "results"
"""The committed result tables the commands that read `results/` run on (the converged study)."""


@dataclass(frozen=True)
class Rule:
    """What is done with a documented command that `pattern` matches (re.search)."""

    pattern: str
    how: str
    """`run` as printed; `append`: with `extra` added before its redirection and comment; `skip`."""
    why: str
    extra: str = ""
    slow: bool = False
    """Over ~20 s on 2 cores: run with `-m slow`."""


SWEEP = "a sweep: minutes to hours (tests/test_tune.py runs the smoke sweep; the --plan lines here run)"
TRAINS = ("trains for minutes (the published size: hours): run with --print_config, which parses every option "
          "and prints the config without training (the tour trains at its first-look size: the slow test below)")
TOUR_RUNS = "reads the tour's trained runs (runs/gts, runs/gts-gcn): the slow test below runs it"

RULES = (
    Rule(r"^make (demo|test)\b", "skip", "installs, then the main job (minutes) or the whole suite; CI runs make test"),
    Rule(r"^\.venv/bin/pip install", "skip", "installs packages from an index"),
    Rule(r"^git clone ", "skip", "downloads from GitHub"),
    Rule(r"bench/gts_side_by_side\.py", "skip", "needs the published GTS checkout the line before clones"),
    Rule(r"ray (up|down|submit|attach|exec|dashboard) clusters/", "skip", "needs an AWS account and its cluster"),
    Rule(r"^(ACCOUNT=|aws |\s*\"\{)", "skip", "needs AWS credentials (the cluster's IAM set-up)"),
    Rule(r"--address auto|s3://", "skip", "needs a running Ray cluster and its bucket"),
    Rule(r"psedual data fetch --sums ", "run", "prints the pinned checksums, offline"),
    Rule(r"psedual data fetch\b", "skip", "downloads from GitHub (tests/test_fetch.py fetches from a loopback mirror)"),
    Rule(r"OPENAI_API_KEY|psedual llm ", "skip", "needs a chat endpoint and its key (tests/test_llm.py: a scripted one)"),
    Rule(r"psedual (results add runs/llm|analyze compare --experiment\+ svamp_llm)", "skip",
         "reads the runs of psedual llm, which needs an endpoint"),
    Rule(r"^HF_HUB_OFFLINE=1 ", "skip", "shows the offline error, which depends on this machine's Hugging Face cache"),
    Rule(r"psedual train .*--print_config", "run", "prints every option as YAML"),
    Rule(r"psedual train ", "append", TRAINS, "--print_config"),
    Rule(r"psedual solve --checkpoint runs/gts \"", "skip", TOUR_RUNS),
    Rule(r"psedual solve ", "skip", "reads the run the line before trains"),
    Rule(r"psedual tune .*--plan\b", "run", "prices or plans a sweep, launching nothing (loading its data: slow)",
         slow=True),
    Rule(r"psedual tune\s*(#|$)", "skip", f"the main job, {SWEEP}"),
    Rule(r"psedual tune ", "skip", SWEEP),
    Rule(r"\.venv/bin/python tune\.py \.\.\.", "skip", "the main job as a script: a sweep (psedual tune's line above)"),
    Rule(r"psedual (results add runs/gts |analyze (compare|curve) --experiment\+ mine)", "skip", TOUR_RUNS),
    Rule(r"psedual analyze optuna --experiment optuna", "skip", "reads the Optuna sweep's study (the sweep: minutes)"),
    Rule(r"psedual analyze table1 --experiment\+ table1_mawps_seeds", "skip",
         "reads the table1_mawps_seeds sweep's runs (54 trials)"),
    Rule(r"psedual analyze report --experiment paper-small", "skip", "reads the paper-small sweep's runs (30 min)"),
    Rule(r"^\.venv/bin/(optuna-dashboard|tensorboard) ", "skip", "a server: it runs until stopped"),
    Rule(r"^\.venv/bin/python -c \"import polars", "run", "a Polars query of results/ (here: the committed tables)"),
)


def documented() -> list[tuple[str, int, str]]:
    """(document, line, command) for every command line of every ```sh block, `\\` lines joined."""
    out = []
    for doc in DOCUMENTS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        for found in re.finditer(r"```sh\n(.*?)```", text, re.S):
            first = text.count("\n", 0, found.start(1)) + 1
            lines = found.group(1).split("\n")
            i = 0
            while i < len(lines):
                start, command = i, lines[i]
                while command.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    command = command[:-1] + " " + lines[i].strip()
                if command.strip() and not command.lstrip().startswith("#"):
                    out.append((doc, first + start, command))
                i += 1
    return out


def _match(command: str) -> Rule | None:
    return next((rule for rule in RULES if re.search(rule.pattern, command.strip())), None)


def rule_for(command: str) -> Rule:
    rule = _match(command)
    if rule is not None:
        return rule
    raise AssertionError(f"no rule for the documented command: {command} (add one to tests/test_doc_commands.py)")


def with_extra(command: str, extra: str) -> str:
    """`command` with `extra` before its redirection and comment (`... > run.yaml  # ...`)."""
    body = re.split(r"\s+(?=[>#])", command, maxsplit=1)
    return f"{body[0]} {extra}" + (f" {body[1]}" if len(body) > 1 else "")


def test_every_documented_command_has_a_rule_and_every_rule_a_command():
    found = documented()
    assert len(found) > 40 and {doc for doc, _, _ in found} >= {"README.md", "docs/solvers.md", "docs/sweeps.md"}
    used = {rule_for(command) for _, _, command in found}
    assert not [r.pattern for r in RULES if r not in used], "rules that match no documented command"
    ran = [c for _, _, c in found if rule_for(c).how != "skip"]
    assert len(ran) >= 8, ran
    with pytest.raises(AssertionError, match="no rule for the documented command: curl"):
        rule_for("curl https://example.com")
    assert with_extra(".venv/bin/psedual train --lr 1 > run.yaml   # x", "--print_config") == \
        ".venv/bin/psedual train --lr 1 --print_config > run.yaml   # x"


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory):
    """Per document, a folder laid out as the checkout (its entries linked; `results/` a copy of the
    committed tables), and the environment a newcomer's shell has."""
    env = {"HOME": str(tmp_path_factory.mktemp("home")), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "PSEDUAL_DATA": str(find_data_root()), "PSEDUAL_CACHE": os.environ.get("PSEDUAL_CACHE", ""),
           "RAY_AUTH_MODE": "disabled", "CUDA_VISIBLE_DEVICES": ""}
    made = {}

    def get(doc: str) -> Path:
        if doc not in made:
            folder = tmp_path_factory.mktemp(doc.replace("/", "_"))
            for entry in ROOT.iterdir():
                if entry.name not in ("results", "runs", "run.yaml", "report", ".git"):
                    (folder / entry.name).symlink_to(entry)
            shutil.copytree(COMMITTED_TABLES, folder / "results")
            made[doc] = folder
        return made[doc]

    return get, {k: v for k, v in env.items() if v}


def _runnable() -> list:
    return [pytest.param(doc, command, id=f"{doc}:{line}", marks=[pytest.mark.slow] if rule.slow else [])
            for doc, line, command in documented()
            if (rule := _match(command)) is not None and rule.how != "skip"]  # no rule: the test above fails


@pytest.mark.parametrize("doc, command", _runnable())
def test_a_documented_command_runs_as_printed(checkouts, doc, command):
    get, env = checkouts
    rule = rule_for(command)
    line = command if rule.how == "run" else with_extra(command, rule.extra)
    done = subprocess.run(["bash", "-c", line], cwd=get(doc), env=env, capture_output=True, text=True, timeout=300)
    said = f"{line}\nstdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
    assert done.returncode == 0, said
    assert "Traceback" not in done.stderr and "\x1b[" not in done.stdout + done.stderr, said


TOUR = r"--out runs/gts(-gcn)?$|psedual solve --checkpoint runs/gts |results add runs/gts |--experiment\+ mine"
"""The tour's first look: its two trainings, the solve of the first, and the analysis of both."""


@pytest.mark.slow
def test_the_tours_first_look_runs_as_printed(checkouts):
    """The README's first block trains and solves as printed (about 1 and 1.5 min on 2 cores), and
    its two runs go into the tables and are compared and plotted by epoch as the Analyse block says."""
    get, env = checkouts
    lines = [c for doc, _, c in documented() if doc == "README.md" and re.search(TOUR, c.split("#")[0].strip())]
    assert len(lines) == 6, lines
    for line in lines:
        done = subprocess.run(["bash", "-c", line], cwd=get("tour"), env=env, capture_output=True, text=True,
                              timeout=1800)
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        if " solve " in line:
            assert done.stderr == "psedual solve: runs/gts is a run folder: solving with its runs/gts/best.pt\n"
            assert re.fullmatch(r".+ = \S+\n", done.stdout), done.stdout
    assert (get("tour") / "learning.png").stat().st_size > 0
