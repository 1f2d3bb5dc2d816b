"""A sweep file's top-level keys declared once (issue 56, item 6): `SweepSpec`'s fields with their
rules (`psedual/tune/spec_types.py`) are the only list of them; the loader reads names, types,
sections and searcher rules from there, and an unknown key names the nearest valid ones first.

`sweep_specs.json` holds every shipped sweep and paper file as the loader built it before the keys
moved into one table (a paper file: each profile's parts); the files must load to the same specs,
a key added since at its default. A file changed on purpose: `python tests/test_sweep_keys.py`
rewrites it (review the diff).
"""

from __future__ import annotations

import ast
import json
import sys
from dataclasses import asdict, make_dataclass
from pathlib import Path

import pytest

from psedual.tune import space
from psedual.tune.paper import LLM_PART, is_paper_file, load_paper
from psedual.tune.space import SpecError, build_spec, load_spec
from psedual.tune.spec_types import KEYS, MODES, SweepSpec, key, keys

ROOT = Path(__file__).parent.parent
EXPECTED = Path(__file__).parent / "sweep_specs.json"
FILES = sorted(str(p.relative_to(ROOT)) for folder in ("search_spaces", "psedual/search_spaces")
               for p in (ROOT / folder).glob("*.yaml"))
GRID = {"name": "s", "mode": "grid", "fixed": {"data.fold": 0, "epochs": 2}, "grid": {"seed": [0]}}
OPTUNA = {"name": "s", "mode": "optuna", "fixed": {"data.fold": 0, "epochs": 2}}


def built(path: str) -> object:
    """The file as the loader builds it, as JSON reads it back (a paper file: per profile and part)."""
    if is_paper_file(ROOT / path):
        paper = load_paper(ROOT / path)
        spec = {f"{profile}/{part}": asdict(paper.llm(part, profile) if part == LLM_PART else paper.sweep(part, profile))
                for profile in paper.profiles for part in paper.parts}
    else:
        spec = asdict(load_spec(ROOT / path))
    return json.loads(json.dumps(spec, default=repr))


def _as_before(spec: dict, expected: dict) -> dict:
    """`spec` with the keys added since `expected` was written at their defaults left out: a new key
    must not change what an old file means."""
    defaults = json.loads(json.dumps({name: k.default for name, k in KEYS.items()}, default=repr))
    assert all(spec[name] == defaults[name] for name in set(spec) - set(expected)), set(spec) - set(expected)
    return {name: value for name, value in spec.items() if name in expected}


@pytest.mark.parametrize("path", FILES)
def test_every_shipped_file_loads_to_the_spec_it_loaded_to_before(path):
    expected = json.loads(EXPECTED.read_text())
    if path not in expected:  # a file added since: it loads (the other tests check what it says)
        built(path)
        return
    got = built(path)
    if "name" in expected[path]:
        assert _as_before(got, expected[path]) == expected[path]
    else:  # a paper file: per profile and part (table2's is no sweep)
        assert got.keys() == expected[path].keys()
        for part, spec in got.items():
            assert (_as_before(spec, expected[path][part]) if "mode" in spec else spec) == expected[path][part], part


def test_the_expectation_names_only_shipped_files():
    assert set(json.loads(EXPECTED.read_text())) <= set(FILES)


@pytest.mark.parametrize(("raw", "said"), [
    ({**GRID, "grdi": {}}, "unknown top-level key 'grdi'; did you mean grid? The other valid top-level keys: arms, "),
    ({**GRID, "num_smaples": 2}, "unknown top-level key 'num_smaples'; did you mean num_samples? The other valid"),
    ({**GRID, "fixed": {"lrr": 1}}, "fixed: unknown key 'lrr'; did you mean lr? The other valid keys: batch_size, "),
    ({**GRID, "fixed": {"model.hiden_size": 1}}, "fixed: unknown key 'model.hiden_size'; did you mean model.hidden_size or "),
    ({**GRID, "resources": {"cpus": 2}}, "resources: unknown key 'cpus'; did you mean cpus_per_worker? The other"),
    ({**GRID, "seeds_for": {"delta": 1, "maximum": 9}}, "seeds_for: unknown key 'maximum'; did you mean max?"),
    ({**GRID, "compare": [{"arms": "variant"}]}, "compare[0]: unknown key 'arms'; did you mean arm? The other valid"),
    ({**GRID, "zzz": 1}, "unknown top-level key 'zzz'; valid: arms, asha_by, compare, fixed, grace_period, grid, "),
])
def test_an_unknown_key_names_the_nearest_valid_ones_first(raw, said):
    with pytest.raises(SpecError) as err:
        build_spec(raw, "f.yaml")
    assert str(err.value).startswith(f"f.yaml: {said}"), str(err.value)


@pytest.mark.parametrize("name", [n for n, k in KEYS.items() if k.rules.only])
def test_a_key_of_one_searcher_is_refused_in_the_other_with_its_table_words(name):
    rules = KEYS[name].rules
    other = next(m for m in MODES if m != rules.only)
    raw = {**(GRID if other == "grid" else OPTUNA), name: 3, "mode": other}  # whatever its value
    with pytest.raises(SpecError) as err:
        build_spec(raw, "f.yaml")
    assert str(err.value) == (f"f.yaml: {name}: {rules.why}; it has no effect in a{'n' if other == 'optuna' else ''} "
                              f"{other} sweep (mode: {other}): remove it, or make the sweep mode: {rules.only}")


def test_a_number_below_its_least_is_refused_in_one_line_naming_the_key():
    assert [name for name, k in KEYS.items() if k.rules.least] == ["num_samples", "grace_period", "reduction_factor"]
    for raw, said in (({**GRID, "num_samples": 0}, "num_samples must be >= 1, got 0"),
                      ({**OPTUNA, "grace_period": 0}, "grace_period must be >= 1, got 0"),
                      ({**OPTUNA, "reduction_factor": 1}, "reduction_factor must be >= 2, got 1")):
        with pytest.raises(SpecError, match=f"^f.yaml: {said}$"):
            build_spec(raw, "f.yaml")
    assert build_spec({**OPTUNA, "reduction_factor": 2}, "f.yaml").reduction_factor == 2


def test_a_section_of_the_wrong_shape_says_what_its_entries_are():
    for name in (n for n, k in KEYS.items() if k.rules.entries):
        base = GRID if KEYS[name].rules.only != "optuna" else OPTUNA
        with pytest.raises(SpecError, match=rf"^f\.yaml: {name}: expected a (list|mapping) of .*, got 3$"):
            build_spec({**base, name: 3}, "f.yaml")


def test_a_key_added_to_the_spec_is_read_checked_and_refused_from_its_one_declaration(monkeypatch):
    # the one line a newcomer writes: a field with its type, default and rules
    extended = make_dataclass("Extended", [("patience", int, key(3, only="optuna", why="ASHA's patience"))],
                              bases=(SweepSpec,), frozen=True)
    monkeypatch.setattr(space, "SweepSpec", extended)
    monkeypatch.setattr(space, "KEYS", keys(extended))
    search = {**OPTUNA, "search": {"lr": {"uniform": [0.1, 0.2]}}}
    assert build_spec({**search, "patience": 5}, "f.yaml").patience == 5
    assert build_spec(search, "f.yaml").patience == 3
    for raw, said in (({**search, "patience": "x"}, "patience must be a whole number, got 'x'"),
                      ({**search, "patiense": 5}, "unknown top-level key 'patiense'; did you mean patience?"),
                      ({**GRID, "patience": 5}, "patience: ASHA's patience; it has no effect in a grid sweep")):
        with pytest.raises(SpecError, match=f"^f.yaml: {said}"):
            build_spec(raw, "f.yaml")


def test_the_loader_and_the_value_checks_import_the_spec_types_and_not_each_other():
    def imported(module: str) -> set[str]:
        tree = ast.parse((ROOT / "psedual" / "tune" / f"{module}.py").read_text())
        return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}

    assert "psedual.tune.spec_types" in imported("space") & imported("space_values")
    assert "psedual.tune.space" not in imported("space_values") | imported("spec_types")
    assert "psedual.tune.space_values" not in imported("spec_types")


if __name__ == "__main__":  # rewrite the expectation from the current loader
    EXPECTED.write_text(json.dumps({path: built(path) for path in FILES}, indent=1) + "\n")
    print(f"{EXPECTED}: {len(FILES)} files", file=sys.stderr)
