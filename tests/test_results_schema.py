"""The runs table's config columns: Arrow types derived from the config's real types, never guessed."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal, Optional

import pyarrow as pa
import pytest

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
    assert tables.arrow_type(hint) == arrow


@pytest.mark.parametrize("hint", [dict[str, int], tuple[int, str], tuple[int], int | str, Literal[1, "a"],
                                  bytes, object, list])
def test_a_type_without_a_mapping_fails_loudly(hint):
    with pytest.raises(TypeError, match="config field x: no Arrow type"):
        tables.arrow_type(hint, "x")


def test_every_config_field_has_its_column_and_type():
    hints = TrainConfig.field_hints()
    assert set(hints) == set(TrainConfig().flat())  # the runs table's config columns are flat()'s keys
    for name, hint in hints.items():
        assert tables.RUNS_SCHEMA.field(name).type == tables.arrow_type(hint, name)
    assert tables.RUNS_SCHEMA.field("data.fold").type == pa.int64()
    assert tables.RUNS_SCHEMA.field("psedual.fusion").type == pa.string()


def test_a_config_field_of_an_unmappable_type_breaks_the_schema(monkeypatch):
    """What a new config field of a type the mapping cannot represent does: the schema is not built."""
    @dataclass(frozen=True)
    class Extended(TrainConfig):
        weights: dict[str, float] = field(default_factory=dict)
        """A field no Arrow column type is derived for."""

    assert "weights" in {f.name for f in fields(Extended)}
    monkeypatch.setattr(tables, "TrainConfig", Extended)
    with pytest.raises(TypeError, match=r"config field weights: no Arrow type for dict\[str, float\]"):
        tables._config_fields()
