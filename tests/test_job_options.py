"""The main job's options grouped by concern (issue 56, item 6): `TuneJob` holds a sweep's own
options and a group each for a paper file, its calibration and its plan's prices; the command line
still takes every option flat, as documented (`--profile`, `--calibrate_steps`, `--price_cpu_hour`)."""

from __future__ import annotations

import pytest

from psedual.cli import main, parse
from psedual.job import GROUPS, OPTIONS, CalibrationOptions, PaperOptions, PriceOptions, TuneJob
from psedual.typed_cli import COMMANDS

FLAGS = ("space name resume storage address profile only plan plan_from plan_sd calibrate calibrate_steps "
         "calibrate_datasets calibrate_plm costs price_cpu_hour gpu_instance price_gpu_hour head_instance "
         "price_head_hour node_setup_minutes node_idle_minutes llm_base_url llm_model dashboard verbose").split()
"""`psedual tune`'s options before they were grouped (README.md, docs/*.md, the Makefile use them)."""


def _job(argv: list[str]) -> TuneJob:
    cfg = parse(COMMANDS[("tune",)], argv)
    return TuneJob.of(**{name: cfg[name] for name in OPTIONS})


def test_the_command_line_takes_every_option_flat_as_before():
    parser = COMMANDS[("tune",)].parser()
    options = {o[2:] for o in parser._option_string_actions if o.startswith("--")}
    assert options - {"help", "config", "print_config"} == set(FLAGS) == set(OPTIONS)


def test_each_option_reaches_its_group():
    job = _job(["--space", "search_spaces/paper.yaml", "--profile", "small", "--only", "table1", "--calibrate",
                "--calibrate_steps", "3", "--price_cpu_hour", "0.2", "--gpu_instance", "g6.xlarge", "--plan",
                "--llm_base_url", "http://127.0.0.1:1/v1", "--llm_model", "m"])
    assert job.paper == PaperOptions(profile="small", only="table1", llm_base_url="http://127.0.0.1:1/v1", llm_model="m")
    assert job.calibration == CalibrationOptions(calibrate=True, calibrate_steps=3)
    assert job.prices == PriceOptions(price_cpu_hour=0.2, gpu_instance="g6.xlarge")
    assert (job.space, job.plan) == ("search_spaces/paper.yaml", True)
    assert job.prices.gpu_hour == 0.8048 and job.calibration.given and job.paper.given
    assert set(GROUPS) == {"paper", "calibration", "prices"}


def test_a_printed_config_loads_back_flat(tmp_path, capsys):
    with pytest.raises(SystemExit):
        parse(COMMANDS[("tune",)], ["--profile", "small", "--price_cpu_hour", "0.3", "--print_config"])
    text = capsys.readouterr().out
    assert "profile: small" in text and "price_cpu_hour: 0.3" in text and "prices" not in text
    (tmp_path / "job.yaml").write_text(text)
    job = _job(["--config", str(tmp_path / "job.yaml"), "--calibrate"])
    assert (job.paper.profile, job.prices.price_cpu_hour, job.calibration.calibrate) == ("small", 0.3, True)


def test_a_group_s_check_and_an_unknown_option_are_one_line(capsys):
    assert main(["tune", "--calibrate_steps", "2", "--plan"]) == 2
    assert capsys.readouterr().err.strip() == "psedual: error: calibrate_steps: only with calibrate"
    assert main(["tune", "--llm_model", "m", "--plan"]) == 2
    assert "give llm_base_url and llm_model together" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown option 'profle'; did you mean profile\\?"):
        TuneJob.of(profle="small")
    with pytest.raises(ValueError, match="unknown instance type 'p9.huge'"):
        TuneJob.of(gpu_instance="p9.huge")
