"""Data parallelism: W Ray Train workers compute what one process computes; devices; tests after
a sweep as parallel Ray tasks."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
import torch

from psedual.tune.evaluate import collect
from psedual.train import checkpoint
from psedual.train.distributed import decode_split, share, shard
from psedual.train.trainer import train
from psedual.train.resources import Resources
from psedual.tune.space import load_spec, make_config

ROOT = Path(__file__).parent.parent
DDP = ROOT / "search_spaces" / "ddp_smoke.yaml"


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9])
@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_every_rank_gets_a_share_and_the_shares_weigh_up_to_the_batch(n, world):
    problems = list(range(n))
    shares = [shard(problems, r, world) for r in range(world)]
    assert all(mine for mine, _ in shares)  # nobody has an empty shard, even when n < world
    real = sorted(p for mine, w in shares if w for p in mine)
    assert real == problems  # each problem counted once; stand-ins weigh 0
    sizes = [len(mine) for mine, w in shares if w]
    assert max(sizes) - min(sizes) <= 1
    # the factors on the ranks' mean losses average to the global mean (each problem one term here)
    factors = [share(len(mine), n, w, world) for mine, w in shares]
    assert sum(f * 1.0 for f in factors) / world == pytest.approx(1.0)
    assert all(f == 0 for (mine, w), f in zip(shares, factors) if not w)


def test_decoding_in_one_process_keeps_the_chunks_in_order():
    seen = []

    def decode(chunk):
        seen.append(chunk)
        return [p * 10 for p in chunk]

    assert decode_split(decode, list(range(7)), 3, 0, 1) == [0, 10, 20, 30, 40, 50, 60]
    assert seen == [[0, 1, 2], [3, 4, 5], [6]]


def _params(path: Path) -> dict[str, torch.Tensor]:
    state = checkpoint.load(path)
    out = {f"model.{k}": v for k, v in state["model"].items()}
    out.update({f"reexaminer.{k}": v for k, v in (state["reexaminer"] or {}).items()})
    return out


@pytest.fixture(scope="module")
def two_workers(local_ray, tmp_path_factory):
    """The 2-worker sweep of ddp_smoke.yaml, run through Tune and TorchTrainer (gloo)."""
    from psedual.tune.sweep import run_sweep

    spec = load_spec(DDP)
    assert spec.resources == Resources(num_workers=2, in_process=False)  # nothing else set
    root = tmp_path_factory.mktemp("ddp")
    outcomes = run_sweep(spec, str(root), verbose=0)
    assert len(outcomes) == 1 and outcomes[0].status == "completed", outcomes[0].error
    folder = root / "trial"
    outcomes[0].checkpoint.to_directory(str(folder))
    return spec, outcomes, folder, root


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    config = make_config(load_spec(DDP).fixed)
    out = tmp_path_factory.mktemp("one")
    train(config, out, test=False, progress=False, device="cpu")
    return out


def test_two_workers_step_like_one_process(two_workers, one_process):
    _, _, folder, _ = two_workers
    ddp, single = _params(folder / "last.pt"), _params(one_process / "last.pt")
    assert ddp.keys() == single.keys()
    worst = max((ddp[k] - single[k]).abs().max().item() for k in single if single[k].numel())
    moved = max((single[k] - v).abs().max().item() for k, v in _params_at_init(one_process).items() if v.numel())
    print(f"2 workers vs 1 process after 2 steps: max |Δparam| {worst:.2e} (parameters moved up to {moved:.2e})")
    assert moved > 5e-4  # the steps changed the parameters, so equality is not trivial
    # The gradients agree to ~1e-8 (the all-reduce sums in another order). Adam's first update is
    # lr·g/(|g| + 1e-8), which turns that into up to ~lr/2000 where |g| is itself ~1e-8: hence the
    # default lr (1e-3) in ddp_smoke.yaml and a 1e-6 tolerance.
    assert worst < 1e-6
    # the reported losses are the global batch's, as one process reports them
    a, b = pl.read_parquet(folder / "epochs.parquet"), pl.read_parquet(one_process / "epochs.parquet")
    for col in ("train_loss", "infill_loss", "epsilon", "tau"):
        assert a[col].to_list() == pytest.approx(b[col].to_list(), abs=1e-6), col


def _params_at_init(folder: Path) -> dict[str, torch.Tensor]:
    """The parameters a run starts from (the trainer seeds them from the config)."""
    from psedual.reexamine import Reexaminer
    from psedual.solvers import get_solver
    from psedual.train.view import sets, view

    config = make_config(load_spec(DDP).fixed)
    vocab = sets(config, *view(config))[3]
    torch.manual_seed(config.seed)
    model = get_solver(config.solver)(vocab, config.model)
    reexaminer = Reexaminer(vocab, config.model, config.psedual)
    out = {f"model.{k}": v for k, v in model.state_dict().items()}
    out.update({f"reexaminer.{k}": v for k, v in reexaminer.state_dict().items()})
    return out


def test_two_workers_validate_like_one_process(two_workers, one_process):
    _, outcomes, folder, _ = two_workers
    a, b = pl.read_parquet(folder / "epochs.parquet"), pl.read_parquet(one_process / "epochs.parquet")
    assert a["valid_value_acc"].to_list() == b["valid_value_acc"].to_list()
    assert a["valid_expr_acc"].to_list() == b["valid_expr_acc"].to_list()
    assert outcomes[0].metrics["valid_value_acc"] == b["valid_value_acc"][-1]


def test_tests_after_a_sweep_run_as_parallel_tasks_with_the_same_rows(two_workers, tmp_path):
    spec, outcomes, _, root = two_workers
    one_by_one = collect(outcomes, str(tmp_path / "serial"), spec.name)
    parallel = collect(outcomes, str(tmp_path / "parallel"), spec.name, spec.resources)
    drop = ["test_seconds", "code_version"]
    assert one_by_one.drop(drop).equals(parallel.drop(drop))
    for table in ("predictions", "epochs"):
        read = [pl.read_parquet(tmp_path / where / table / f"experiment={spec.name}" / "*.parquet")
                for where in ("serial", "parallel")]
        assert read[0].equals(read[1]), table


def test_a_gpu_trial_hands_the_trainer_rays_cuda_device(monkeypatch, cuda_visible):
    """Where torch sees the GPU Ray assigned (mocked): the worker passes Ray's device (cuda:0
    here) to the trainer. A torch that sees none fails instead (the test after the next)."""
    import ray.train
    import ray.train.torch

    from psedual.tune import trial

    class Context:
        def get_world_rank(self):
            return 0

        def get_world_size(self):
            return 1

    seen = {}
    monkeypatch.setattr(ray.train, "get_context", Context)
    monkeypatch.setattr(ray.train, "get_checkpoint", lambda: None)
    monkeypatch.setattr(ray.train.torch, "get_device", lambda: torch.device("cuda", 0))
    monkeypatch.setattr(ray, "get_gpu_ids", lambda: [0])
    monkeypatch.setattr(trial, "train", lambda config, out, **kw: seen.update(kw, config=config))
    flat = {**load_spec(DDP).fixed, "device": "auto"}
    trial.train_worker({"flat": flat})
    assert seen["device"] == torch.device("cuda", 0) and seen["config"].device == "auto"


@pytest.fixture
def cuda_visible(monkeypatch):
    """A machine where torch sees a GPU (mocked): initialising CUDA fails the test."""
    def refuse():
        raise AssertionError("CUDA was initialised")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "_lazy_init", refuse)
    monkeypatch.setattr(torch.cuda, "init", refuse)


def test_trials_and_workers_that_hold_no_gpu_train_on_the_cpu(monkeypatch, cuda_visible, tmp_path):
    """Ray sets no CUDA_VISIBLE_DEVICES for a process that asked for no GPU: `auto` must not take it."""
    import ray
    import ray.train
    import ray.train.torch
    import ray.tune

    from psedual.train.device import placed, resolve
    from psedual.tune import trial

    assert resolve("auto") == torch.device("cuda")  # the mock works: outside Ray, auto would take it
    assert placed("auto", []) == torch.device("cpu") and placed("cpu", [0]) == torch.device("cpu")
    with pytest.raises(ValueError, match="this trial holds no GPU"):
        placed("cuda", [])

    class Context:
        def get_world_rank(self):
            return 0

        def get_world_size(self):
            return 1

    seen = []
    monkeypatch.setattr(ray, "get_gpu_ids", lambda: [])
    monkeypatch.setattr(ray.tune, "get_checkpoint", lambda: None)
    monkeypatch.setattr(ray.train, "get_checkpoint", lambda: None)
    monkeypatch.setattr(ray.train, "get_context", Context)
    monkeypatch.setattr(ray.train.torch, "get_device", lambda: torch.device("cuda", 0))  # never asked
    monkeypatch.setattr(trial, "train", lambda config, out, **kw: seen.append(kw["device"]))
    flat = {**load_spec(DDP).fixed, "device": "auto"}
    trial.train_in_process(flat)
    trial.train_worker({"flat": flat})
    assert seen == [torch.device("cpu")] * 2
    # and training there touches no CUDA (the mocked init would fail it)
    config = make_config({**flat, "data.train_size": 16, "batch_size": 8, "epochs": 1})
    train(config, tmp_path, test=False, progress=False, device=placed("auto", []))
    assert pl.read_parquet(tmp_path / "epochs.parquet").height == 1


def test_the_default_test_run_sees_no_gpu(request):
    from conftest import gpu_tests_selected

    if not gpu_tests_selected(request.config.getoption("markexpr") or ""):
        assert os.environ.get("CUDA_VISIBLE_DEVICES") == ""  # set before any test touched torch.cuda
    assert not gpu_tests_selected("not slow and not gpu") and not gpu_tests_selected("slow")
    assert gpu_tests_selected("gpu") and gpu_tests_selected("gpu and not slow")


def test_requests_the_ray_cannot_place_are_refused_up_front():
    from psedual.tune.sweep import check_fits

    check_fits(Resources(num_workers=2, in_process=False), {"CPU": 2.0})  # the driver holds no CPU
    with pytest.raises(ValueError, match="needs 3 CPUs for its workers; this Ray has 2"):
        check_fits(Resources(num_workers=3, in_process=False), {"CPU": 2.0})
    with pytest.raises(ValueError, match="needs 2 GPUs"):
        check_fits(Resources(num_workers=2, use_gpu=True), {"CPU": 16.0, "GPU": 1.0})


def test_device_and_precision_are_checked_and_cuda_is_not_faked():
    base = make_config(load_spec(DDP).fixed)
    with pytest.raises(ValueError, match="unknown device 'gpu'; valid: auto, cpu, cuda"):
        replace(base, device="gpu")
    with pytest.raises(ValueError, match="unknown precision 'fp16'; valid: fp32, bf16"):
        replace(base, precision="fp16")
    if not torch.cuda.is_available():
        from psedual.train.device import resolve

        assert resolve("auto") == torch.device("cpu")
        with pytest.raises(ValueError, match="torch sees no CUDA device"):
            resolve("cuda")


def test_bf16_trains_on_cpu_and_stays_close_to_fp32(tmp_path):
    config = make_config(load_spec(DDP).fixed)
    fp32 = train(config, tmp_path / "fp32", test=False, progress=False)
    assert fp32 is None
    train(replace(config, precision="bf16"), tmp_path / "bf16", test=False, progress=False)
    a, b = (pl.read_parquet(tmp_path / d / "epochs.parquet")["train_loss"][0] for d in ("fp32", "bf16"))
    assert a != b and b == pytest.approx(a, rel=0.05)  # autocast ran, and trained the same model


def test_a_run_resumes_on_another_device_setting(tmp_path):
    config = make_config({**load_spec(DDP).fixed, "device": "cpu", "epochs": 2})
    assert train(config, tmp_path, stop_after_epoch=1, test=False, progress=False) is None
    train(replace(config, device="auto"), tmp_path, resume=True, test=False, progress=False)
    assert pl.read_parquet(tmp_path / "epochs.parquet")["epoch"].to_list() == [1, 2]


@pytest.mark.slow
def test_two_workers_on_mawps_fold_0_validate_like_one_process(local_ray, tmp_path):
    """The full fold (1,409 = 22·64 + 1 training problems at batch 64: the last batch holds one
    problem for two ranks), through Tune and TorchTrainer, against one process."""
    from psedual.tune.sweep import run_sweep

    fixed = {k: v for k, v in load_spec(DDP).fixed.items() if k not in ("data.train_size", "batch_size")}
    spec = replace(load_spec(DDP), name="ddp_mawps", fixed=fixed)
    config = make_config(fixed)
    assert config.batch_size == 64
    outcome, = run_sweep(spec, str(tmp_path / "sweep"), verbose=0)
    assert outcome.status == "completed", outcome.error
    outcome.checkpoint.to_directory(str(tmp_path / "ddp"))
    train(config, tmp_path / "one", test=False, progress=False, device="cpu")
    a, b = (pl.read_parquet(tmp_path / d / "epochs.parquet") for d in ("ddp", "one"))
    assert a["valid_value_acc"].to_list() == b["valid_value_acc"].to_list()
    # 23 Adam steps amplify the all-reduce's ~1e-8 summation differences (see above): 8e-5 seen
    assert a["train_loss"].to_list() == pytest.approx(b["train_loss"].to_list(), rel=1e-3)


def test_trials_share_a_gpu_and_what_cannot_be_placed_is_refused():
    from psedual.tune.sweep import check_fits
    from psedual.tune.trial import in_process_resources, scaling

    quarter = Resources(gpus_per_trial=0.25, max_concurrent=4)
    assert in_process_resources(quarter) == {"cpu": 1.0, "gpu": 0.25}
    assert in_process_resources(Resources()) == {"cpu": 1.0, "gpu": 0.0}
    assert in_process_resources(Resources(use_gpu=True)) == {"cpu": 1.0, "gpu": 1.0}
    check_fits(quarter, {"CPU": 16.0, "GPU": 1.0})
    with pytest.raises(ValueError, match="needs 0.25 GPUs .gpus_per_trial.; this Ray has 0"):
        check_fits(quarter, {"CPU": 16.0})
    # two DDP ranks on one GPU: half each, over gloo
    pair = Resources(num_workers=2, in_process=False, gpus_per_trial=1)
    config = scaling(pair)
    assert config.use_gpu and config.num_workers == 2 and config.resources_per_worker == {"CPU": 1.0, "GPU": 0.5}
    assert pair.backend == "gloo" and Resources(num_workers=2, use_gpu=True).backend == "nccl"
    assert Resources(num_workers=2, in_process=False).backend == "gloo"
    assert scaling(Resources(num_workers=2, in_process=False)).resources_per_worker == {"CPU": 1.0}
    check_fits(pair, {"CPU": 2.0, "GPU": 1.0})
    with pytest.raises(ValueError, match="needs 2 GPUs .gpus_per_trial.; this Ray has 1"):
        check_fits(Resources(num_workers=2, in_process=False, gpus_per_trial=2), {"CPU": 2.0, "GPU": 1.0})
    with pytest.raises(ValueError, match="not both"):
        Resources(use_gpu=True, gpus_per_trial=0.5)
    with pytest.raises(ValueError, match="a rank uses one"):
        Resources(gpus_per_trial=2)
    with pytest.raises(ValueError, match="bad resources"):
        Resources(gpus_per_trial=-1)


def test_only_re_deduction_may_leave_a_parameter_out_of_a_step(mawps, vocab):
    """Why DDP searches for unused parameters only for solvers that say they may leave some out:
    no other solver, with or without the reexamining module, leaves a trainable parameter out of
    a step, not even on a batch of one-number expressions; RE-Deduction's rationalizer sits out
    a batch whose expressions are one step each. A pretrained encoder's pooler, which no step
    reads (bert_tree, re_deduction), is frozen."""
    from psedual.reexamine import PseDualConfig, Reexaminer
    from psedual.reexamine.config import BASE, VARIANTS
    from psedual.reexamine.schedules import Clock
    from psedual.solvers import SOLVERS, get_solver
    from psedual.solvers.batch import collate
    from psedual.solvers.config import SolverConfig
    from psedual.train.trainer import StepLoss

    def build(name, variant):
        torch.manual_seed(0)
        psedual = None if variant == BASE else PseDualConfig(expression_encoder=variant)
        model = get_solver(name)(vocab, small)
        return model, StepLoss(model, None if psedual is None else Reexaminer(vocab, small, psedual), 1.0)

    def left_out(step, problems):
        step.zero_grad(set_to_none=True)
        loss, infill = step(collate(problems, vocab), Clock(5, 10, 1))  # ε midway: gold and sampled expressions
        (loss if infill is None else loss + infill.loss).backward()
        return [n for n, p in step.named_parameters() if p.requires_grad and p.grad is None]

    small = SolverConfig(embedding_size=16, hidden_size=32, layers=1, dropout=0.1, plm_layers=1, plm_hidden=32)
    one_number = [replace(p, prefix=("N0",)) for p in mawps.train[:4]]
    one_step = [p for p in mawps.train if len(p.prefix) == 3][:4]
    rationalizer = {f"model.rationalizer.{k}" for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    # the reexamining module uses a solver through its interface only: its variants on two solvers
    cases = [(name, BASE) for name in sorted(SOLVERS)] + [(name, v) for name in ("gts", "dns") for v in VARIANTS[1:]]
    for name, variant in cases:
        model, step = build(name, variant)
        frozen = {n.split(".pooler.")[0] for n, p in step.named_parameters() if not p.requires_grad}
        assert frozen == ({"model.encoder.plm"} if name in ("bert_tree", "re_deduction") else set()), name
        batches = [mawps.train[:8]] + ([one_step] + [one_number] * (name != "re_deduction") if variant == BASE else [])
        for problems in batches:
            unused = left_out(step, problems)
            assert set(unused) <= (rationalizer if model.may_leave_parameters_unused else set()), (name, unused)
            if name == "re_deduction" and problems is one_step:
                assert set(unused) == rationalizer  # the solver that says so does leave some out


def test_each_rank_restores_its_own_rng_states():
    from psedual.train.checkpoint import rank_rng, rng_fields

    states = [(torch.tensor([r]), None) for r in range(3)]
    saved = rng_fields(states)
    assert [rank_rng(saved, r, 3)[0].item() for r in range(3)] == [0, 1, 2]
    assert rank_rng(saved, 1, 2)[0].item() == 0  # saved by 3 ranks, resumed by 2: rank 0's, as one process
    older = {"rng": torch.tensor([7]), "cuda_rng": None}  # a checkpoint from before per-rank states
    assert rank_rng(older, 1, 2)[0].item() == 7


def _rank(rank: int, world: int, flat: dict, out: str, store: str, stop: int | None, resume: bool) -> None:
    """One DDP rank over gloo (torch.multiprocessing.spawn's target)."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        train(make_config(flat), out, resume=resume, stop_after_epoch=stop, test=False, progress=False, rank=rank,
              world_size=world, device="cpu")
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_ranks_stopped_and_resumed_end_as_two_ranks_never_stopped(tmp_path):
    """With dropout, rank 1 draws other masks than rank 0 (its share differs in size): a resumed
    rank 1 must go on from its own RNG state, not rank 0's."""
    import torch.multiprocessing as mp

    flat = {**load_spec(DDP).fixed, "data.train_size": 10, "batch_size": 5, "epochs": 2, "model.dropout": 0.5}

    def run(name, stop=None, resume=False):
        store = tmp_path / f"store-{name}-{int(resume)}"
        mp.spawn(_rank, args=(2, flat, str(tmp_path / name), str(store), stop, resume), nprocs=2)

    run("straight")
    run("stopped", stop=1)
    saved = checkpoint.load(tmp_path / "stopped" / "last.pt")
    assert not torch.equal(saved["rng_by_rank"][0], saved["rng_by_rank"][1])  # the ranks' states do differ
    run("stopped", resume=True)
    a, b = (pl.read_parquet(tmp_path / d / "epochs.parquet") for d in ("straight", "stopped"))
    assert a["train_loss"].to_list() == b["train_loss"].to_list()


@pytest.mark.parametrize("resources, gpus", [(Resources(), 0.0), (Resources(use_gpu=True), 1.0),
                                             (Resources(gpus_per_trial=0.25, max_concurrent=4), 0.25)])
def test_a_trials_test_holds_what_one_of_its_workers_held(monkeypatch, resources, gpus):
    import ray

    from psedual.tune import evaluate
    from psedual.tune.outcome import TrialOutcome

    asked = {}

    def remote(**kwargs):
        asked.update(kwargs)
        return lambda fn: type("Task", (), {"remote": staticmethod(lambda checkpoint: checkpoint)})

    monkeypatch.setattr(ray, "remote", remote)
    monkeypatch.setattr(ray, "get", lambda refs: ["tested"] * len(refs))
    outcome = TrialOutcome("t0", {}, "completed", {}, "a checkpoint", None)
    assert evaluate.evaluate_trials([outcome], resources) == {"t0": "tested"}
    assert (asked["num_cpus"], asked["num_gpus"]) == (1.0, gpus)  # a shared GPU's test shares it too


def test_a_trial_holding_a_gpu_its_torch_cannot_see_fails_at_once_naming_the_node(monkeypatch):
    """An AMI's driver older than the wheel's CUDA (or a CPU build of torch) on a GPU node: the
    trial held a GPU and trained silently on the CPU; now one line names the node and versions."""
    import platform

    from psedual.train.device import placed

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for name in ("auto", "cuda"):
        with pytest.raises(RuntimeError, match=r"this trial holds GPU 0 but torch .* sees no CUDA device") as err:
            placed(name, [0])
        message = str(err.value)
        assert f"node {platform.node()}:" in message and torch.__version__ in message and "driver:" in message
        assert "\n" not in message
    assert placed("cpu", [0]) == torch.device("cpu")  # asked for: taken as asked
    assert placed("auto", []) == torch.device("cpu")  # no GPU held: the CPU, as before
