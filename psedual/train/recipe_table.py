"""Each solver's published recipe, as a table: the optimiser, learning-rate schedule, sizes and
decoding that its own paper and official code train it with, every value beside the file and line it
was read from. This is the recipes' one copy: `psedual.train.recipes` checks each against TrainConfig
(and is what `psedual train --recipe` reads), docs/solvers.md's table is rendered from it (`make
readme`), and analysis reads the epochs from it (`analysis/checks/protocol.py`): it imports neither
torch nor the solvers, only the data sets' registry.

The paper trains each baseline "depending on the official open-sourced codes" with its learning
rate, maximum epochs and beam size (paper.tex:270-275); these are those codes' values. A value
depends on the data set where the code's does (RE-Deduction's epochs, DNS's batch size, the
encoder's language): a setting's `scope` is `*` (every data set), a language (`zh`, `en`:
`DatasetSpec.language`) or a data set's name, and the most specific one applies.

Adding a recipe: its row in `RECIPES` (each value with its source), its test in
tests/test_recipes.py, then `make readme`.

A recipe also trains at the precision measured faster for its solver on the device it runs on
(`PRECISIONS_MEASURED`, each figure beside the report and line it was read from; a recipe's
`precision` is `auto`, which the trainer resolves with `precision_for`): the published codes train
in fp32, and bf16 is only how fast a step runs on our code, not part of what the source trained.
"""

from __future__ import annotations

from dataclasses import dataclass

from psedual.data.registry import DATASETS

ANY = "*"
"""The scope of a setting that holds on every data set."""
AUTO = "auto"
"""A recipe's `precision`: the one `PRECISIONS_MEASURED` chose for the solver on the run's device
(`--precision fp32|bf16` overrides it)."""
LANGUAGES = ("zh", "en")
"""The languages a scope may name (the data sets' `language`)."""
NOT_RECIPE = ("solver", "variant", "seed", "data.", "psedual.", "device", "threads", "precision")
"""Keys (and key prefixes) no recipe sets: what is run, on what, and how it executes."""

# The sources, each pinned to the commit read (`fetch`ed mirrors, `git show HEAD:path`).
GTS_CODE = "ShichaoSun/math_seq2tree@d2310d0"
GRAPH2TREE_CODE = "2003pro/Graph2Tree@05b48a1"
MWPTOOLKIT = "LYH-YF/MWPToolkit@0993beb"
BERT_TREE_CODE = "zwx980624/mwp-cl@2c1d2a1"
DEDUCTIVE_CODE = "allanj/Deductive-MWP@b482b27"

BERT_TREE_WARMUP = 3500 / (1323 * 50)
"""mwp-cl warms up for 3,500 steps (train-ft-monolingual-zh.sh:16) of Math23K's 50 epochs x 1,323
steps (run_ft.py:109: 21,162 problems // 16 + 1), 5.3% of the run: kept as that share on every
data set (3,500 steps would be 70% of a MAWPS run, which the source never trained)."""


@dataclass(frozen=True)
class Setting:
    """One value of a published recipe and where it was read."""

    key: str
    """The TrainConfig key it sets, dotted as a sweep file's (`lr`, `model.hidden_size`)."""
    value: object
    """The value, in the key's type."""
    source: str
    """The repository (at its commit) and `file:line` it was read from."""
    scope: str = ANY
    """Where it holds: `*`, a language (`zh`, `en`) or a data set's name; the most specific wins."""
    note: str = ""
    """Where the source is silent, or disagrees with the paper: what was chosen and why."""

    def __post_init__(self) -> None:
        if self.key.startswith(NOT_RECIPE):  # whether TrainConfig has the key: recipes.py, which may import it
            raise ValueError(f"recipe key {self.key!r}: not a TrainConfig key a recipe sets")
        if self.scope not in (ANY, *LANGUAGES, *DATASETS):
            raise ValueError(f"recipe scope {self.scope!r}; valid: {ANY}, {', '.join(LANGUAGES)}, {', '.join(DATASETS)}")
        if not self.source:
            raise ValueError(f"recipe key {self.key}: name its source")


def _rank(scope: str, dataset: str) -> int | None:
    """How specific `scope` is for `dataset` (higher wins), or None when it does not hold there."""
    if scope == dataset:
        return 2
    if scope == DATASETS[dataset].language:
        return 1
    return 0 if scope == ANY else None


@dataclass(frozen=True)
class Recipe:
    """A solver's published recipe: its settings, and the paper and code they come from."""

    solver: str
    """The solver's registry name."""
    sources: str
    """Its paper and official code, in a few words (the docs' table heading)."""
    settings: tuple[Setting, ...]
    """Its values; each key holds on every data set (an `*` setting, or one per language)."""

    def __post_init__(self) -> None:
        seen = [(s.key, s.scope) for s in self.settings]
        twice = sorted({x for x in seen if seen.count(x) > 1})
        if twice:
            raise ValueError(f"recipe {self.solver}: {twice} set twice")
        for dataset in DATASETS:  # every key resolves on every data set (its values' config: recipes.py)
            self.values(dataset)

    def values(self, dataset: str) -> dict[str, Setting]:
        """Key -> the setting that applies on `dataset`."""
        if dataset not in DATASETS:
            raise ValueError(f"unknown dataset {dataset!r}; valid: {', '.join(DATASETS)}")
        best: dict[str, tuple[int, Setting]] = {}
        for s in self.settings:
            rank = _rank(s.scope, dataset)
            if rank is not None and (s.key not in best or rank > best[s.key][0]):
                best[s.key] = (rank, s)
        missing = sorted({s.key for s in self.settings} - set(best))
        if missing:
            raise ValueError(f"recipe {self.solver}: {missing} hold on no scope that covers {dataset}")
        return {key: s for key, (_, s) in best.items()}

    def flat(self, dataset: str) -> dict[str, object]:
        """The recipe's dotted keys on `dataset`, with the solver's and its precision (`auto`:
        the one measured faster for the solver on the device the run trains on, `precision_for`)."""
        return {"solver": self.solver, **{key: s.value for key, s in self.values(dataset).items()},
                "precision": AUTO}


def _recurrent(code: str, where: dict[str, str], dropout: str, no_clip: str) -> tuple[Setting, ...]:
    """GTS's recipe, which Graph2Tree's code repeats line for line: `where` maps each key to its line."""
    values = {"optimizer": "adam", "lr": 1e-3, "weight_decay": 1e-5, "lr_schedule": "step", "lr_step": 20,
              "lr_gamma": 0.5, "epochs": 80, "batch_size": 64, "beam_size": 5, "model.embedding_size": 128,
              "model.hidden_size": 512, "model.layers": 2, "min_word_count": 5}
    return (*(Setting(key, value, f"{code} {where[key]}") for key, value in values.items()),
            Setting("model.dropout", 0.5, f"{code} {dropout}", note="the encoder's default; the scripts pass none"),
            Setting("clip_grad_norm", 0.0, f"{code} {no_clip}", note="clipping is commented out there"))


GTS_LINES = {"optimizer": "run_seq2tree.py:59", "lr": "run_seq2tree.py:13", "weight_decay": "run_seq2tree.py:14",
             "lr_schedule": "run_seq2tree.py:64", "lr_step": "run_seq2tree.py:64", "lr_gamma": "run_seq2tree.py:64",
             "epochs": "run_seq2tree.py:12", "batch_size": "run_seq2tree.py:9", "beam_size": "run_seq2tree.py:15",
             "model.embedding_size": "run_seq2tree.py:10", "model.hidden_size": "run_seq2tree.py:11",
             "model.layers": "run_seq2tree.py:16", "min_word_count": "run_seq2tree.py:47"}
# Graph2Tree's Math23K script; its MAWPS one (mawps/cross_valid_mawps.py:15-22, 89, 105, 110) has the same values
G2T = "math23k/run_seq2tree_graph.py"
GRAPH2TREE_LINES = {"optimizer": f"{G2T}:115", "lr": f"{G2T}:19", "weight_decay": f"{G2T}:20",
                    "lr_schedule": f"{G2T}:120", "lr_step": f"{G2T}:120", "lr_gamma": f"{G2T}:120",
                    "epochs": f"{G2T}:18", "batch_size": f"{G2T}:15", "beam_size": f"{G2T}:21",
                    "model.embedding_size": f"{G2T}:16", "model.hidden_size": f"{G2T}:17", "model.layers": f"{G2T}:22",
                    "min_word_count": f"{G2T}:99"}

DNS_JSON = f"{MWPTOOLKIT} mwptoolkit/properties/model/DNS.json"
DNS_DATA = f"{MWPTOOLKIT} mwptoolkit/properties/dataset"
DNS_TRAINER = f"{MWPTOOLKIT} mwptoolkit/trainer/supervised_trainer.py:79"
BERT_TREE_ZH = f"{BERT_TREE_CODE} train-ft-monolingual-zh.sh"
BERT_TREE_EN = f"{BERT_TREE_CODE} train-ft-monolingual-en.sh"
BERT_TREE_OPT = f"{BERT_TREE_CODE} run_ft.py:110"
DEDUCTIVE_MAIN = f"{DEDUCTIVE_CODE} universal_main.py"
DEDUCTIVE_OPT = f"{DEDUCTIVE_CODE} src/utils.py"
DEDUCTIVE_SCRIPTS = f"{DEDUCTIVE_CODE} scripts"

RECIPES: dict[str, Recipe] = {r.solver: r for r in (
    Recipe("gts", "Xie & Sun, IJCAI 2019; the official code", _recurrent(
        GTS_CODE, GTS_LINES, "src/models.py:164", "src/train_and_evaluate.py:758")),
    Recipe("dns", "Wang et al., EMNLP 2017, which published no code: MWPToolkit's DNS", (
        Setting("optimizer", "adam", DNS_TRAINER),
        Setting("lr", 1e-3, f"{DNS_JSON}:5"),
        Setting("weight_decay", 0.0, DNS_TRAINER, note="Adam is built without weight decay"),
        Setting("lr_schedule", "step", DNS_TRAINER),
        Setting("lr_gamma", 1.0, DNS_TRAINER, note="no scheduler: a constant learning rate"),
        Setting("clip_grad_norm", 0.0, DNS_TRAINER, note="no clipping"),
        Setting("epochs", 80, f"{DNS_JSON}:9"),
        Setting("batch_size", 64, f"{DNS_DATA}/math23k.json:10", note="also MathQA, which MWPToolkit has no "
                "settings for"),
        Setting("batch_size", 32, f"{DNS_DATA}/mawps.json:9", scope="mawps"),
        Setting("batch_size", 32, f"{DNS_DATA}/mawps-single.json:9", scope="mawps-single"),
        Setting("batch_size", 32, f"{DNS_DATA}/mawps_asdiv-a_svamp.json:9", scope="svamp"),
        Setting("beam_size", 1, f"{MWPTOOLKIT} mwptoolkit/model/Seq2Seq/dns.py:405",
                note="greedy decoding (top 1 under the grammar rules); the paper's beams are 1, 3 or 5"),
        Setting("model.embedding_size", 128, f"{DNS_JSON}:2"),
        Setting("model.hidden_size", 512, f"{DNS_JSON}:3"),
        Setting("model.layers", 2, f"{DNS_JSON}:8"),
        Setting("model.dropout", 0.5, f"{DNS_JSON}:10"),
        Setting("min_word_count", 5, f"{DNS_DATA}/math23k.json:2"),
    )),
    Recipe("graph2tree", "Zhang et al., ACL 2020; the official code", _recurrent(
        GRAPH2TREE_CODE, GRAPH2TREE_LINES, "math23k/src/models.py:167", "math23k/src/train_and_evaluate.py:759")),
    Recipe("bert_tree", "Li et al., Findings of ACL 2022 (BERT-TD, fine-tuned); the official code", (
        Setting("optimizer", "adamw", BERT_TREE_OPT, note="the paper says Adam: with no weight decay the two "
                "are the same"),
        Setting("lr", 1e-4, f"{BERT_TREE_ZH}:14"),
        Setting("plm_lr", 1e-4, BERT_TREE_OPT, note="one parameter group: the encoder at the same rate"),
        Setting("weight_decay", 0.0, BERT_TREE_OPT),
        Setting("plm_weight_decay", 0.0, BERT_TREE_OPT),
        Setting("lr_schedule", "linear", f"{BERT_TREE_ZH}:12"),
        Setting("warmup_fraction", BERT_TREE_WARMUP, f"{BERT_TREE_ZH}:16",
                note="3,500 warm-up steps, kept as their share of the Math23K run (5.3%) on every data set"),
        Setting("clip_grad_norm", 3.0, f"{BERT_TREE_CODE} run_ft.py:291"),
        Setting("epochs", 50, f"{BERT_TREE_ZH}:15", note="MAWPS, which the source never trained: the same"),
        Setting("batch_size", 16, f"{BERT_TREE_ZH}:13"),
        Setting("beam_size", 3, f"{BERT_TREE_ZH}:22"),
        Setting("model.embedding_size", 128, f"{BERT_TREE_ZH}:20"),
        Setting("model.hidden_size", 768, f"{BERT_TREE_ZH}:21"),
        Setting("model.dropout", 0.5, f"{BERT_TREE_ZH}:23"),
        Setting("model.plm", "google-bert/bert-base-chinese", f"{BERT_TREE_ZH}:5", scope="zh",
                note="the source's `bert-base-chinese`, by its current hub id"),
        Setting("model.plm", "google-bert/bert-base-uncased", f"{BERT_TREE_EN}:5", scope="en",
                note="the source's `bert-base-uncased` (its MathQA run), by its current hub id"),
    )),
    Recipe("re_deduction", "Jie, Li & Lu, ACL 2022 (RoBERTa-base DeductiveReasoner); the official code", (
        Setting("optimizer", "adamw", f"{DEDUCTIVE_OPT}:44", note="the paper says Adam; the code's AdamW "
                "(decoupled weight decay) kept, as the paper reran the official code"),
        Setting("lr", 2e-5, f"{DEDUCTIVE_MAIN}:74"),
        Setting("plm_lr", 2e-5, f"{DEDUCTIVE_OPT}:44", note="one rate for every parameter"),
        Setting("weight_decay", 0.01, f"{DEDUCTIVE_OPT}:20", note="the code exempts biases and LayerNorm weights "
                "(:23); here every parameter decays"),
        Setting("plm_weight_decay", 0.01, f"{DEDUCTIVE_OPT}:20"),
        Setting("lr_schedule", "linear", f"{DEDUCTIVE_OPT}:48"),
        Setting("warmup_fraction", 0.1, f"{DEDUCTIVE_OPT}:47"),
        Setting("clip_grad_norm", 1.0, f"{DEDUCTIVE_MAIN}:75"),
        Setting("epochs", 500, f"{DEDUCTIVE_SCRIPTS}/run_math23k.bash:8", scope="math23k"),
        Setting("epochs", 100, f"{DEDUCTIVE_SCRIPTS}/run_mawps_five_fold.bash:26", scope="mawps"),
        Setting("epochs", 1000, f"{DEDUCTIVE_SCRIPTS}/run_mathqa.bash:22", scope="mathqa"),
        Setting("epochs", 1000, f"{DEDUCTIVE_SCRIPTS}/run_svamp.bash:18", scope="svamp"),
        Setting("epochs", 100, f"{DEDUCTIVE_SCRIPTS}/run_mawps_five_fold.bash:26",
                note="data sets without a script (mawps-single, jsonl): MAWPS's"),
        Setting("batch_size", 30, f"{DEDUCTIVE_MAIN}:43"),
        Setting("beam_size", 1, f"{DEDUCTIVE_CODE} src/model/universal_model.py:150",
                note="greedy: each step takes the best pair and operator"),
        Setting("model.hidden_size", 768, f"{DEDUCTIVE_CODE} src/model/universal_model.py:243",
                note="the encoder's own width"),
        Setting("model.dropout", 0.1, f"{DEDUCTIVE_CODE} src/model/universal_model.py:251",
                note="the encoder config's hidden_dropout_prob (0.1 in RoBERTa-base's)"),
        Setting("model.plm", "hfl/chinese-roberta-wwm-ext", f"{DEDUCTIVE_SCRIPTS}/run_math23k.bash:6", scope="zh",
                note="its Math23K figure (84.3, README.md:32) is this encoder's"),
        Setting("model.plm", "FacebookAI/roberta-base", f"{DEDUCTIVE_SCRIPTS}/run_mawps_five_fold.bash:6",
                scope="en", note="the source's `roberta-base`, by its current hub id"),
    )),
)}
"""Solver name -> its published recipe (`psedual train --recipe NAME`, a paper part's `recipe: published`)."""

H100_REPORT = "docs/gpu/h100_report.md"
"""The first GPU session's report (commit 3d2b7a9, one H100 80GB): its `bench/train_speed.py` section."""


@dataclass(frozen=True)
class StepSpeed:
    """One solver x variant's training rate at fp32 and at bf16 on one device, as measured."""

    variant: str
    """`base` or the PseDual expression encoder measured (`gcn`)."""
    fp32: float
    """Training problems/s in fp32."""
    bf16: float
    """Training problems/s under bf16 autocast."""
    source: str
    """The report and the line of the fp32 row (the bf16 row is the next line)."""

    def __post_init__(self) -> None:
        if self.fp32 <= 0 or self.bf16 <= 0:
            raise ValueError(f"{self.variant}: problems/s must be > 0, got fp32 {self.fp32}, bf16 {self.bf16}")
        if not self.source:
            raise ValueError(f"{self.variant}: name the report the speed was read from")


@dataclass(frozen=True)
class MeasuredPrecision:
    """The precision a solver's recipe trains at on a device type, chosen by measurement."""

    solver: str
    """The solver's registry name."""
    device: str
    """The torch device type it was measured on (`cuda`); a CPU always trains in fp32."""
    gpu: str
    """The device the figures are from."""
    speeds: tuple[StepSpeed, ...]
    """Its measured variants' fp32 and bf16 rates (the variants a bench ran: base and PseDual-GCN)."""
    accuracy: str
    """What is known of bf16's accuracy beside fp32's (a choice is by speed only where accuracy is not
    measured: said here, not assumed)."""

    def __post_init__(self) -> None:
        if self.device == "cpu":
            raise ValueError(f"{self.solver}: a CPU trains in fp32; no measurement chooses there")
        if not self.speeds:
            raise ValueError(f"{self.solver}: no measured speeds")

    @property
    def precision(self) -> str:
        """bf16 where it trained faster than fp32 for every variant measured, else fp32: one
        precision for all of a solver's arms, so a claim's base and PseDual arms never differ in it."""
        return "bf16" if all(s.bf16 > s.fp32 for s in self.speeds) else "fp32"


def _h100(solver: str, base: tuple[float, float, int], gcn: tuple[float, float, int], accuracy: str,
          ) -> MeasuredPrecision:
    """A solver's H100 figures: (fp32, bf16 problems/s, the fp32 row's line) for base and GCN."""
    return MeasuredPrecision(solver, "cuda", "NVIDIA H100 80GB HBM3 (3d2b7a9, Math23K, batch 64, published sizes)",
                             tuple(StepSpeed(variant, fp32, bf16, f"{H100_REPORT}:{line}")
                                   for variant, (fp32, bf16, line) in (("base", base), ("gcn", gcn))), accuracy)


_FIRST_STEP = ("not measured over a run; one training step's loss (MAWPS, batch 64) at bf16 is within {} of "
               "fp32's ({}:{})")
_STAND_IN = "; timed with a stand-in encoder (random weights, 12 layers x 768), not the recipe's own"
PRECISIONS_MEASURED: dict[str, MeasuredPrecision] = {m.solver: m for m in (
    _h100("gts", (511.5, 384.4, 205), (153.6, 151.7, 207), _FIRST_STEP.format("0.1%", H100_REPORT, 56)),
    _h100("dns", (425.3, 387.4, 209), (380.2, 284.1, 211), _FIRST_STEP.format("0.1%", H100_REPORT, 44)),
    _h100("graph2tree", (384.4, 316.1, 213), (201.5, 180.3, 215), _FIRST_STEP.format("0.5%", H100_REPORT, 50)),
    _h100("bert_tree", (299.5, 260.1, 217), (197.7, 215.1, 219),
          _FIRST_STEP.format("0.3%", H100_REPORT, 38) + _STAND_IN),
    _h100("re_deduction", (419.6, 691.6, 221), (250.3, 313.3, 223),
          _FIRST_STEP.format("0.4%", H100_REPORT, 62) + _STAND_IN),
)}
"""Solver -> the precision its recipe trains at on a GPU, from the H100 session's `bench/train_speed.py`
rows. bf16 is slower for the small recurrent solvers (the step is bound by kernel launches, and
autocast adds casts) and for BERT-Tree's base step; it is faster for RE-Deduction's steps (a 12-layer
encoder at batch 64). The figures are at the published sizes with batch 64, not each recipe's own
batch; a GPU other than the H100 takes the H100's choice until it is measured itself."""


def precision_for(solver: str, device_type: str, precision: str = AUTO) -> str:
    """The precision a run trains at: `precision` itself unless `auto`; `auto` on a CPU is fp32,
    on another device the measured choice for `solver` (fp32 for a solver without a measurement)."""
    if precision != AUTO:
        return precision
    measured = PRECISIONS_MEASURED.get(solver)
    if device_type == "cpu" or measured is None or measured.device != device_type:
        return "fp32"
    return measured.precision
