"""The gold rules (docs/data.md, "Gold expressions" and "Slots"): each one's note, as the loaders
count it and `data stats` shows it."""

from __future__ import annotations

# Gold rules (docs/data.md, "Gold expressions" and "Slots"): what each did to a dataset, counted by
# the loaders as notes and shown by `data stats`, zeros included. A rule that reads a kept gold is
# counted by `make_problem` (through `notes`); one that refuses a record travels on its
# RecordError (`rules`) and is counted by the loader that skips it (`sources.common.Collector`).
NEGATED_NUMBER = "gold rule: a - n where the text holds -n (and no n), read as a + (-n)"
MINUS_BEFORE_POWER = "gold rule: a minus before a number's power (-3^2 is -(3^2) = -9)"
JUXTAPOSITION_REFUSED = "gold rule: a number or bracket directly before a bracket (4(1/2)), refused"
TEXT_MIXED_NUMBER = "gold rule: a mixed number the text writes (3(1/2)), read as that number in the gold"
MIXED_ANSWER = "gold rule: an answer written as a mixed number (7(2/3)), read as 7 + 2/3"
ZERO_DENOMINATOR = "gold rule: a denominator that is zero in exact arithmetic, refused"
ZERO_ONLY_EXACT = "gold rule: of those, zero only in exact arithmetic (floats gave a finite value)"
RELATIVE_CHECK = "gold rule: the relative answer check disagrees where the old absolute 1e-4 below 1 agreed"
SLOT_REFUSED = "gold rule: a slot not written canonically (N01), refused"
GOLD_RULES = {MINUS_BEFORE_POWER: "-3^2 read as -(3^2)", JUXTAPOSITION_REFUSED: "4(1/2) refused",
              TEXT_MIXED_NUMBER: "the text's 3(1/2) in the gold", MIXED_ANSWER: "answer 7(2/3) as 7+2/3",
              ZERO_DENOMINATOR: "zero denominator refused", ZERO_ONLY_EXACT: "of those, zero only exactly",
              NEGATED_NUMBER: "a - n over the text's -n", RELATIVE_CHECK: "relative check disagrees, absolute agreed",
              SLOT_REFUSED: "slot N01 refused"}
"""Every gold rule's note, in the order docs/data.md lists them, with the short label `data stats`
prints beside its count (zeros too)."""
