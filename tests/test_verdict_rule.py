"""The verdict rule in one place (issue 56): its code (analysis/claims/verdicts.py) and one text beside it
(analysis/claims/verdict_rule.md), rendered into every report's footer, the study report, the README's
demo and docs/analysis.md; a copy that drifts from the text fails here (`make readme` re-renders the docs)."""

from __future__ import annotations

from pathlib import Path


from analysis.claims import claims, verdicts
from analysis.report import report
from psedual import readme

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_hold_the_rule_as_rendered():
    for path, tables in (("README.md", readme.TABLES), ("docs/analysis.md", readme.DOC_TABLES["docs/analysis.md"])):
        text = (ROOT / path).read_text(encoding="utf-8")
        assert readme.render(text, path, tables) == text, f"{path}'s verdict rule is out of date: run `make readme`"
    assert f"<!-- table:verdict-rule -->\n{verdicts.rule()}\n<!-- /table:verdict-rule -->" in (ROOT / "README.md").read_text()
    assert f"<!-- table:verdicts -->\n{verdicts.rule_table()}\n" in (ROOT / "docs" / "analysis.md").read_text()


def test_a_drifted_copy_is_seen():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    drifted = text.replace(verdicts.rule(), verdicts.rule().replace("adjusted p < 0.05", "p < 0.05"), 1)
    assert drifted != text and readme.render(drifted) == text


def test_the_rule_says_the_code_s_constants():
    from analysis.stats.stats import MIN_SEEDS, MIN_TEST_EXAMPLES

    assert f"Below {MIN_SEEDS} seeds" in verdicts.rule() and f"below {MIN_TEST_EXAMPLES} test examples" in verdicts.rule()
    assert f"2 to {MIN_SEEDS - 1} seeds" in verdicts.rule_table() and "{" not in verdicts.rule_table()


def test_a_report_footer_says_the_rule():
    table = claims.load(str(ROOT / "docs" / "converged" / "results"))
    footer = report.footer(table, [])
    # where the footer always said it, between the posterior and the trials
    assert f"paired Δ (one seed: over examples). {verdicts.rule()} trials: the tuning budget" in footer


def test_the_study_report_says_the_rule_in_its_words():
    from analysis import study_report

    assert verdicts.rule() in study_report.CLAIMS_NOTE


def test_no_other_prose_copy():
    # phrases of the copies issue 56 removed: the verdicts docstring's table, the README's demo and
    # glossary lists, the study report's own sentence
    gone = ("better / worse / equivalent within", "Its verdict is `better`", "A verdict is one of four answers",
            "Verdict: better / worse (adjusted p", "gets no `better`/`worse`")
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "analysis").rglob("*.py")]
    found = [(f.relative_to(ROOT).as_posix(), g) for f in files for g in gone if g in f.read_text(encoding="utf-8")]
    assert not found, found
