"""The options of a paper file's run that a sweep file takes none of, each group a record of its
own (`psedual.job.GROUPS`): which profile and parts (`PaperOptions`), the plan's timings
(`CalibrationOptions`) and the prices it charges (`PriceOptions`). `psedual.job.TuneJob` holds one
of each; the command line takes their fields flat (`--profile`, `--calibrate_steps`, `--price_cpu_hour`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PaperOptions:
    """A paper file's run (search_spaces/paper.yaml): which profile and parts, and table2's chat model."""

    profile: str | None = None
    """A paper file's profile (`small`, `full`: search_spaces/paper.yaml): its parts run in turn as
    experiments `<name>.<part>`, the name defaulting to `paper-<profile>`."""
    only: str | None = None
    """A paper file: run only these parts, comma-separated (`table1,table3`)."""
    llm_base_url: str | None = None
    """A paper file's table2: the OpenAI-compatible endpoint (with llm_model; the key in
    $OPENAI_API_KEY); without it table2 is skipped."""
    llm_model: str | None = None
    """A paper file's table2: the endpoint's model name."""

    def __post_init__(self) -> None:
        if (self.llm_base_url is None) != (self.llm_model is None):
            raise ValueError("give llm_base_url and llm_model together")

    @property
    def given(self) -> bool:
        """Whether any of a paper file's own options is set (a sweep file takes none)."""
        return self.profile is not None or self.only is not None


@dataclass(frozen=True)
class CalibrationOptions:
    """A paper file's plan's timings: measure them (`calibrate`), and the file they are kept in."""

    calibrate: bool = False
    """A paper file: time each distinct trial shape of the profile and a part's overhead, store them
    in psedual/tune/costs.tsv, then plan. CPU parts' shapes on this machine (as many at once as the
    profile runs); GPU parts' in one Ray task holding one GPU of the Ray at `address` (on a cluster,
    `--address auto`: a GPU worker), one shape at a time, keyed by that GPU's name."""
    calibrate_steps: int | None = None
    """With calibrate: time epochs of this many training steps and 4 validation batches per shape,
    not two whole epochs (a GPU session's minutes); the rows say so and the plan prints it."""
    calibrate_datasets: str | None = None
    """With calibrate: time only the shapes on these data sets, comma-separated (`math23k`); the plan
    prices the same solver, variant and sizes on another data set from them, and says so."""
    calibrate_plm: str | None = None
    """With calibrate: time the pretrained-encoder shapes on a stand-in, a random encoder of
    BERT-base's size (12 layers x 768, as roberta-base) built from this folder's config and tokenizer
    (a machine without the profile's encoders: a GPU session); the rows say so."""
    costs: str | None = None
    """The calibration file the plan reads and calibrate writes (default: psedual/tune/costs.tsv)."""

    def __post_init__(self) -> None:
        options = {"calibrate_steps": self.calibrate_steps, "calibrate_datasets": self.calibrate_datasets,
                   "calibrate_plm": self.calibrate_plm}
        if not self.calibrate and any(v is not None for v in options.values()):
            raise ValueError(f"{', '.join(k for k, v in options.items() if v is not None)}: only with calibrate")
        if self.calibrate_steps is not None and self.calibrate_steps < 1:
            raise ValueError(f"calibrate_steps must be >= 1, got {self.calibrate_steps}")
        if self.calibrate_plm is not None and not (Path(self.calibrate_plm) / "config.json").is_file():
            raise ValueError(f"calibrate_plm {self.calibrate_plm}: no config.json there (a Hugging Face model folder: "
                             "its config and tokenizer are read, never its weights)")

    @property
    def given(self) -> bool:
        """Whether calibrate or costs is set (a paper file's plan's, which a sweep file has not)."""
        return self.calibrate or self.costs is not None

    @property
    def costs_path(self) -> Path:
        """The calibration file (`costs`, default psedual/tune/costs.tsv)."""
        from psedual.tune.cost import COSTS

        return COSTS if self.costs is None else Path(self.costs)

    @property
    def datasets(self) -> tuple[str, ...]:
        """`calibrate_datasets` as names (none: every data set of the profile)."""
        return tuple(d.strip() for d in self.calibrate_datasets.split(",")) if self.calibrate_datasets else ()


@dataclass(frozen=True)
class PriceOptions:
    """What a paper file's plan charges: the machines' prices and the minutes paid around the trials."""

    price_cpu_hour: float = 0.05
    """The plan's dollars per CPU-hour (default: about one vCPU of an on-demand general-purpose
    cloud instance, e.g. AWS m7i.large at $0.10/h for 2 vCPUs)."""
    gpu_instance: str = "g5.xlarge"
    """The GPU workers' instance type the plan prices (clusters/gpu.yaml's: g5.xlarge, one NVIDIA
    A10G, $1.006/h on demand in us-west-2; also g6.xlarge, NVIDIA L4, $0.8048/h; g4dn.xlarge, Tesla
    T4, $0.526/h). GPU parts are planned from the calibration of its GPU."""
    price_gpu_hour: float | None = None
    """The plan's dollars per GPU-hour (default: `gpu_instance`'s on-demand price per GPU)."""
    head_instance: str = "m6i.2xlarge"
    """The head's instance type, paid for the run's whole wall time (clusters/gpu.yaml's:
    m6i.2xlarge, $0.384/h on demand in us-west-2)."""
    price_head_hour: float | None = None
    """The plan's dollars per head-hour (default: `head_instance`'s on-demand price)."""
    node_setup_minutes: float = 15.0
    """Minutes each GPU node is paid for before its first trial (boot, the installs with the CUDA
    torch, the data, the encoders): an estimate, not measured."""
    node_idle_minutes: float = 10.0
    """Minutes each GPU node is paid for after its last trial (clusters/gpu.yaml's
    idle_timeout_minutes)."""

    def __post_init__(self) -> None:
        prices = (self.price_cpu_hour, self.price_gpu_hour, self.price_head_hour, self.node_setup_minutes,
                  self.node_idle_minutes)
        if min(x for x in prices if x is not None) < 0:
            raise ValueError("prices and minutes must be >= 0")
        self.cluster_cost()  # an unknown instance type is refused here, listing the valid ones

    def cluster_cost(self):
        """The plan's cluster costs (`tune.cost.ClusterCost`) from the instance options."""
        from psedual.tune.instances import ClusterCost, instance

        gpu, head = instance(self.gpu_instance, gpu=True), instance(self.head_instance)
        return ClusterCost(gpu, head, head.price_hour if self.price_head_hour is None else self.price_head_hour,
                           self.node_setup_minutes, self.node_idle_minutes)

    @property
    def gpu_hour(self) -> float:
        """Dollars per GPU-hour: given, or the GPU instance's price per GPU."""
        from psedual.tune.instances import instance

        gpu = instance(self.gpu_instance, gpu=True)
        return gpu.price_hour / gpu.gpus if self.price_gpu_hour is None else self.price_gpu_hour
