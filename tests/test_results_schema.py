"""The table rows: one typed record each, Arrow types derived from the real types, never guessed;
unknown keys refused."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal, Optional

import pyarrow as pa
import pytest

from analysis.checks import guardrails
from psedual.results import folder, records, row, schema
from psedual.results import tables
from psedual.train.config import TrainConfig


@pytest.mark.parametrize("hint, arrow", [
    (int, pa.int64()), (float, pa.float64()), (str, pa.string()), (bool, pa.bool_()),
    (int | None, pa.int64()), (Optional[float], pa.float64()), (Literal["a", "b"], pa.string()),
    (Literal[1, 2] | None, pa.int64()), (Literal[True, False], pa.bool_()),
    (tuple[int, ...], pa.list_(pa.int64())), (list[str], pa.list_(pa.string())),
    (tuple[float, ...] | None, pa.list_(pa.float64())),
])
def test_each_type_maps_to_its_arrow_type(hint, arrow):
    assert schema.arrow_type(hint) == arrow


@pytest.mark.parametrize("hint", [dict[str, int], tuple[int, str], tuple[int], int | str, Literal[1, "a"],
                                  bytes, object, list])
def test_a_type_without_a_mapping_fails_loudly(hint):
    with pytest.raises(TypeError, match="config field x: no Arrow type"):
        schema.arrow_type(hint, "x")


def test_every_config_field_has_its_column_and_type():
    hints = TrainConfig.field_hints()
    assert set(hints) == set(TrainConfig().flat())  # the runs table's config columns are flat()'s keys
    for name, hint in hints.items():
        assert tables.RUNS_SCHEMA.field(name).type == schema.arrow_type(hint, name)
    assert tables.RUNS_SCHEMA.field("data.fold").type == pa.int64()
    assert tables.RUNS_SCHEMA.field("psedual.fusion").type == pa.string()


def test_a_config_field_of_an_unmappable_type_breaks_the_schema(monkeypatch):
    """What a new config field of a type the mapping cannot represent does: the schema is not built."""
    @dataclass(frozen=True)
    class Extended(TrainConfig):
        weights: dict[str, float] = field(default_factory=dict)
        """A field no Arrow column type is derived for."""

    assert "weights" in {f.name for f in fields(Extended)}
    monkeypatch.setattr(schema, "TrainConfig", Extended)
    with pytest.raises(TypeError, match=r"config field weights: no Arrow type for dict\[str, float\]"):
        schema.config_columns()


# The columns tables written before the records were declared hold, with their types: they must still read.
OLD_RUNS = {"trial": "string", "variant": "string", "status": "string", "error": "string", "code_version": "string",
            "epochs_done": "int64", "best_epoch": "int64", "valid_value_acc": "double", "valid_expr_acc": "double",
            "test_value_acc": "double", "test_expr_acc": "double", "test_expr_acc_values": "double",
            "test_infill_acc": "double", "test_perfect_match": "double", "test_infill_acc_used": "double",
            "test_perfect_match_used": "double", "final_epsilon": "double", "final_tau": "double", "n_train": "int64",
            "n_valid": "int64", "n_test": "int64", "n_test_infilled": "int64", "data_key": "string",
            "data_train_hash": "string", "data_test_hash": "string", "train_seconds": "double",
            "test_seconds": "double", "llm.model": "string", "llm.prompt_version": "string", "llm.rounds": "int64",
            "llm.samples": "int64", "llm.temperature": "double", "llm.failures": "int64", "llm.changed": "int64",
            "llm.calls": "int64", "llm.prompt_tokens": "int64", "llm.completion_tokens": "int64"}
OLD_EPOCHS = {"trial": "string", "epoch": "int32", "train_loss": "double", "lr": "double", "valid_value_acc": "double",
              "valid_expr_acc": "double", "seconds": "double", "infill_loss": "double", "epsilon": "double",
              "tau": "double"}
OLD_PREDICTIONS = {"trial": "string", "id": "string", "predicted": "list<item: string>",
                   "gold": "list<item: string>", "value_correct": "bool", "expression_correct": "bool",
                   "expression_correct_values": "bool", "infill_predicted": "list<item: int32>",
                   "infill_gold": "list<item: int32>", "unscored": "string"}


@pytest.mark.parametrize("table, old", [("runs", OLD_RUNS), ("epochs", OLD_EPOCHS), ("predictions", OLD_PREDICTIONS)])
def test_the_records_keep_every_column_older_tables_hold(table, old):
    schema = tables.SCHEMAS[table]
    assert {name: str(schema.field(name).type) for name in old if name in schema.names} == old


def test_the_run_folder_files_are_the_tables_rows_without_the_trial():
    assert tables.SCHEMAS["epochs"].names == ["trial", *schema.EPOCHS_SCHEMA.names]
    assert tables.SCHEMAS["predictions"].names == ["trial", *schema.PREDICTIONS_SCHEMA.names]
    assert schema.RUNS_SCHEMA.names == [f.name for f in schema.columns(records.Trial)] + schema.METRICS_SCHEMA.names
    assert set(schema.PREDICTIONS_SCHEMA.names) < set(schema.LLM_PREDICTIONS_SCHEMA.names)
    assert "out_dir" not in schema.METRICS_SCHEMA.names  # RunResult's one field that is no column
    assert len(set(schema.RUNS_SCHEMA.names)) == len(schema.RUNS_SCHEMA.names)


def test_every_record_field_has_a_docstring():
    import ast
    import inspect

    tree = ast.parse("\n".join(inspect.getsource(module) for module in (records, row, folder)))
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert {c.name for c in classes} >= {"Epoch", "Prediction", "LLMPrediction", "RunResult", "LLMResult", "DataRecord",
                                         "Trial", "MetricsRow", "RunsRow", "Tested", "RunFile", "RunFolder"}
    for c in classes:
        for field_, after in zip(c.body, c.body[1:] + [None]):
            if isinstance(field_, ast.AnnAssign):
                assert isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant), \
                    f"{c.name}.{field_.target.id} has no docstring"


def test_a_key_no_record_has_is_refused_naming_the_key_and_the_table(tmp_path):
    import pyarrow.parquet as pq

    with pytest.raises(ValueError, match=r"the runs table: unknown column\(s\) n_tset, trail"):
        tables.write(str(tmp_path), "runs", "e", "t1", [{"trial": "t1", "trail": "t1", "n_tset": 3}])
    with pytest.raises(ValueError, match=r"metrics.parquet: unknown column\(s\) out_dir"):
        folder.write_rows([{"test_value_acc": 0.5, "out_dir": "x"}], tmp_path / "metrics.parquet",
                         schema.METRICS_SCHEMA)
    assert not list(tmp_path.rglob("*.parquet"))
    path = tables.write(str(tmp_path), "runs", "e", "t1", [{"trial": "t1", "n_test": 3}])
    assert pq.read_table(path).to_pylist()[0]["n_test"] == 3


def test_an_older_run_folder_file_reads_as_its_record(tmp_path):
    """A metrics.parquet written before the records: its retired column is not read, new ones are null."""
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"test_value_acc": [0.5], "out_dir": ["/tmp/x"], "n_test": [4]}), tmp_path / "m.parquet")
    row, = schema.read(tmp_path / "m.parquet", schema.METRICS_SCHEMA)
    assert row["test_value_acc"] == 0.5 and row["n_test"] == 4 and row["data_kept"] is None and "out_dir" not in row


# The runs columns other than the config that a claim's arms must share: each marked so in its record.
SHARED = {"status", "code_version", "epochs_done", "variant", "llm.model", "llm.prompt_version", "llm.reexamine",
          "llm.rounds", "llm.samples", "llm.temperature"}


def test_the_arms_share_the_config_and_the_marked_columns_and_no_outcome():
    compared = set(guardrails.config_columns(schema.RUNS_SCHEMA.names, []))
    assert compared == (set(TrainConfig.field_hints()) - set(records.EXECUTION)) | SHARED
    assert {"test_value_acc", "data_root", "data_kept", "llm.cache_hits", "llm.changed_to_right"} <= row.NOT_COMPARED
    # where a run trained is never config: two arms of one sweep on different nodes stay comparable
    assert {f"env.{f.name}" for f in fields(records.Environment)} <= row.NOT_COMPARED
    # the arm's other names differ with it: comparing llm vs llm+reexamine compares llm.reexamine no more
    assert "llm.reexamine" not in guardrails.config_columns(schema.RUNS_SCHEMA.names, ["variant"])
    assert "llm.reexamine" in guardrails.config_columns(schema.RUNS_SCHEMA.names, ["psedual.fusion"])


def test_a_new_outcome_field_of_a_record_is_never_compared():
    @dataclass(frozen=True)
    class Extended(records.LLMRecord):
        refusals: int = 0
        """A new count of the model's replies: an outcome, unmarked."""
        top_p: float = field(default=1.0, metadata=records.COMPARED)
        """A new sampling setting, marked as one."""

    found = row.not_compared(((Extended, "llm."),))
    assert "llm.refusals" in found and "llm.top_p" not in found and "llm.model" not in found


def test_an_environment_names_the_device_it_trained_on_and_its_gpu_only_with_cuda():
    ok = dict(python="3.11.9", torch="2.7.1+cpu", cuda="none", ray="2.60.0", device="cpu", gpu=None, node="n")
    assert records.Environment(**ok).device == "cpu"
    with pytest.raises(ValueError, match="env.device 'auto'"):
        records.Environment(**{**ok, "device": "auto"})
    with pytest.raises(ValueError, match="goes with a CUDA device"):
        records.Environment(**{**ok, "gpu": "NVIDIA A10G"})
    with pytest.raises(ValueError, match="goes with a CUDA device"):
        records.Environment(**{**ok, "device": "cuda:0"})
    with pytest.raises(ValueError, match="empty ray"):
        records.Environment(**{**ok, "ray": ""})
    assert records.Environment(**ok, precision="bf16").precision == "bf16"
    with pytest.raises(ValueError, match="env.precision 'auto'"):  # a recipe's auto is resolved before it is kept
        records.Environment(**ok, precision="auto")
    assert [f.name for f in schema.RUNS_SCHEMA if f.name.startswith("env.")] == [
        "env.python", "env.torch", "env.cuda", "env.ray", "env.device", "env.gpu", "env.node",
        "env.plm_commit", "env.precision"]


def test_an_llm_runs_row_has_its_own_result_type_in_the_result_columns():
    """`psedual llm`'s row goes through the one row builder: its result (three test accuracies)
    fills the result columns of a trained run's type, the rest of them null, and an LLM result
    without the LLM record that says which model gave it is refused."""
    result = records.LLMResult(0.5, 0.25, 0.25)
    llm = records.LLMRecord("m", "v1", False, 1, 1, 0.0, 0, 0, 0, 0, 8, 0, 10, 10)
    metrics = row.MetricsRow(records.RunInfo("llm"), row.llm_config("m", "svamp", None), records.RunCost(0, 1.0),
                             result, llm=llm)
    written = schema.arrow_table([row.RunsRow(records.Trial("t", "completed", None, "v"), metrics).values()],
                                 schema.RUNS_SCHEMA, "the runs table").to_pylist()[0]
    assert (written["test_value_acc"], written["solver"], written["llm.model"]) == (0.5, "llm:m", "m")
    assert written["best_epoch"] is None and written["train_seconds"] is None and written["env.device"] is None
    assert {f.name for f in schema.columns(records.LLMResult)} < {f.name for f in schema.columns(records.RunResult)}
    with pytest.raises(ValueError, match="an LLMResult goes with an LLM run's LLMRecord"):
        row.MetricsRow(records.RunInfo("llm"), {}, records.RunCost(0, 1.0), result)
    with pytest.raises(ValueError, match="shares in"):
        records.LLMResult(1.5, 0.0, 0.0)


def test_a_column_added_later_reads_as_the_behaviour_before_it():
    # each committed runs table's config columns: one it lacks was added after it was written, and a
    # label must show what those runs did (the default then), not `None`
    import glob
    from pathlib import Path

    import pyarrow.parquet as pq

    from analysis.checks.selection import cell_label

    defaults = TrainConfig().flat()
    assert {k: defaults[k] for k in row.BEFORE_COLUMN} == row.BEFORE_COLUMN
    root = Path(__file__).resolve().parents[1]
    lacking = set()
    for table in glob.glob(str(root / "docs/*/results/runs/experiment=*/*.parquet")):
        lacking |= set(defaults) - set(pq.read_schema(table).names)
    assert lacking == set(row.BEFORE_COLUMN), "a config column some committed table lacks needs its before-value"
    assert cell_label({"solver": "gts", "selection": None}, ["solver", "selection"]) == \
        "solver=gts, selection=best (not recorded)"
    assert cell_label({"selection": "last"}, ["selection"]) == "selection=last"
