"""The tree solvers' sampled rollout (GTS, Graph2Tree, BertTree): what a seeded PseDual step samples,
its losses and its gradients, pinned against the rollout as it was before issue 59 (one host read
per token, goal stacks as Python lists: today's `rows_rollout`, which a CPU still runs), and the
masked rollout a GPU runs (stacks as tensors, a few host reads an expression) held to the same pins.

Two steps of Adam on 16 MAWPS problems, every expression sampled (fusion `predicted`), one thread.
The fingerprint of a step: the sampled ids (each problem's, on the host), the solver's and the
infiller's losses, and two numbers per step from the gradients of every parameter (their global
norm and their dot with a fixed pseudo-random vector, which moves if any one gradient moves).

The masked rollout runs every row at every step, so with dropout it draws other dropout masks
than the rows rollout (which draws them for the unfinished rows only): the same RNG draws in
another order cannot be had without knowing on the host which rows are unfinished, the read it
exists to avoid. So it is held to the pins without dropout (the same expressions; losses and
gradients to 1e-6, as the rows it computes beside them may change a sum's order), to pins of its
own with dropout, and to the same distribution of expressions as the rows rollout's over seeds.

Three later changes draw fewer dropout masks: the rows rollout's first step takes the
teacher-forced pass's prediction at the roots (`gts.Roots`) instead of making its own, a whole
expression's last number is not merged up to the root (nothing reads those merges), and the GCN
expression encoder draws its dropout over the expressions' real nodes only. Later draws move, so the
pins with dropout (the masked rollout's too, for the GCN's) were made again then; without dropout
they are still the ones from before issue 59.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from psedual.reexamine import PseDualConfig, Reexaminer
from psedual.reexamine.schedules import Clock
from psedual.solvers import get_solver
from psedual.solvers.batch import collate
from psedual.solvers.config import SolverConfig
from psedual.solvers.rollout import MASKED_DEVICES
from psedual.train.trainer import StepLoss, train_step

pytestmark = pytest.mark.usefixtures("one_thread")
PATHS = ["rows", "masked"]


@pytest.fixture
def path(request):
    """Which rollout the CPU runs: `rows` (its own) or `masked` (a GPU's)."""
    if request.param == "masked":
        MASKED_DEVICES.add("cpu")
    yield request.param
    MASKED_DEVICES.discard("cpu")
SMALL = SolverConfig(embedding_size=32, hidden_size=64, layers=1, dropout=0.0)


def fingerprint(name, mawps, vocab, dropout: float, steps: int = 2, config: SolverConfig = SMALL) -> list[dict]:
    """Each step's sampled ids (a digest and the total length), losses and gradient numbers."""
    torch.manual_seed(0)
    config = replace(config, dropout=dropout)
    solver = get_solver(name)(vocab, config)
    reexaminer = Reexaminer(vocab, config, PseDualConfig(expression_encoder="gcn", fusion="predicted"))
    step = StepLoss(solver, reexaminer, 1.0)
    opt = torch.optim.Adam(step.parameters(), 1e-3)
    batch = collate(mawps.train[:16], vocab)
    sampled = []
    rollout = solver.rollout

    def recording(*args, **kwargs):
        r = rollout(*args, **kwargs)
        sampled.append([[t for t in row if t >= 0] for row in r.tokens.tolist()])
        return r

    solver.rollout = recording
    g = torch.Generator().manual_seed(1)
    probe = {n: torch.randn(p.shape, generator=g) for n, p in step.named_parameters()}
    out = []
    for i in range(steps):
        result = train_step(step, opt, batch, Clock(i, steps, 1))
        grads = {n: p.grad for n, p in step.named_parameters() if p.grad is not None}
        ids = sampled[-1]
        out.append({"ids": hashlib.sha256(repr(ids).encode()).hexdigest()[:16], "length": sum(map(len, ids)),
                    "loss": result.loss.item(), "infill": result.infill_loss.item(),
                    "grad_norm": torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values())).item(),
                    "grad_dot": sum((g.double() * probe[n].double()).sum() for n, g in grads.items()).item()})
    return out


def _check(got: list[dict], pinned: list[dict]) -> None:
    for g, p in zip(got, pinned, strict=True):
        assert (g["ids"], g["length"]) == (p["ids"], p["length"]), (g, p)
        for key in ("loss", "infill", "grad_norm", "grad_dot"):
            assert g[key] == pytest.approx(p[key], rel=1e-6, abs=1e-9), (key, g, p)


PINNED = {
    ("gts", 0.0): [{"ids": "f21963d187f19dcf", "length": 46, "loss": 3.4970169067382812, "infill": 1.1189689636230469,
                    "grad_norm": 1.1523922013165975, "grad_dot": 1.2479464753311589},
                   {"ids": "a694eb495e293227", "length": 38, "loss": 3.382607936859131, "infill": 1.0875283479690552,
                    "grad_norm": 1.1204345974778362, "grad_dot": 1.0794608871697884}],
    ("gts", 0.5): [{"ids": "2da79ad7088fec8d", "length": 84, "loss": 3.532137393951416, "infill": 1.1274704933166504,
                    "grad_norm": 1.0845647408889907, "grad_dot": 1.2648900140916193},
                   {"ids": "f400b407d5a73614", "length": 44, "loss": 3.4173312187194824, "infill": 1.0999109745025635,
                    "grad_norm": 1.013966395382412, "grad_dot": 1.4376697061845465}],
    ("graph2tree", 0.0): [{"ids": "636b4388851eb2e3", "length": 50, "loss": 3.787142753601074,
                           "infill": 1.1438285112380981, "grad_norm": 3.8652959163097678,
                           "grad_dot": 2.116048644576791},
                          {"ids": "d3d4348958140536", "length": 72, "loss": 3.4427382946014404,
                           "infill": 1.1342391967773438, "grad_norm": 3.2454464906105716,
                           "grad_dot": 1.7888891928638486}],
    ("graph2tree", 0.5): [{"ids": "6f3f8c00a9d2dfc4", "length": 74, "loss": 3.7682418823242188,
                           "infill": 1.134545087814331, "grad_norm": 2.9463751228319626,
                           "grad_dot": -0.2667388145128885},
                          {"ids": "caa218bf816bd097", "length": 74, "loss": 3.563854455947876,
                           "infill": 1.1199696063995361, "grad_norm": 2.6840411318692063,
                           "grad_dot": 1.60247690491412}],
}
"""Two PseDual steps' fingerprints (see `fingerprint`), by solver and dropout."""


MASKED_WITH_DROPOUT = {
    "gts": [{"ids": "555907513d5bc968", "length": 88, "loss": 3.5294723510742188, "infill": 1.1248054504394531,
             "grad_norm": 1.106802371931944, "grad_dot": 1.0282403354459855},
            {"ids": "88a006180590e9aa", "length": 28, "loss": 3.407857894897461, "infill": 1.1020371913909912,
             "grad_norm": 1.0049935330775377, "grad_dot": 0.3858314602266464}],
    "graph2tree": [{"ids": "1946a90f41a7042c", "length": 62, "loss": 3.773599863052368, "infill": 1.1399030685424805,
                    "grad_norm": 2.918261625870405, "grad_dot": -0.17806844029929556},
                   {"ids": "53603423298012a4", "length": 54, "loss": 3.5124034881591797, "infill": 1.1212748289108276,
                    "grad_norm": 2.591676519332911, "grad_dot": 1.9685435041044277}],
}
"""The masked rollout's own fingerprints with dropout 0.5 (see the module's doc)."""


@pytest.mark.parametrize("path", PATHS, indirect=True)
@pytest.mark.parametrize("name", ["gts", "graph2tree"])
@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_sample_losses_and_gradients_of_two_steps_are_the_pinned_ones(mawps, vocab, name, dropout, path):
    pinned = MASKED_WITH_DROPOUT[name] if path == "masked" and dropout else PINNED[name, dropout]
    _check(fingerprint(name, mawps, vocab, dropout), pinned)


def deep_rollout(name, mawps, vocab, dropout: float, counter=None) -> dict:
    """A rollout biased towards operators (deep trees: long merge chains and stacks), in training
    mode, and the gradients of a fixed weighing of its rows. With `counter` (bench/syncs.py's
    `SyncCounter`, entered), also the host reads of the rollout alone (`reads`)."""
    from psedual.reexamine.module import GumbelNoise

    torch.manual_seed(0)
    solver = get_solver(name)(vocab, replace(SMALL, dropout=dropout))
    reexaminer = Reexaminer(vocab, SMALL, PseDualConfig(fusion="predicted"))
    batch = collate(mawps.train[:12], vocab)
    V, n_ops, max_length = len(vocab.output_tokens), len(vocab.operators), 17
    noise = GumbelNoise([p.id for p in batch.problems], max_length, V, torch.device("cpu"))
    plain = reexaminer._pick(0.5, noise)
    bias = torch.where(torch.arange(V) < n_ops, 2.0, 0.0)

    def pick(scores, rows, position):
        return plain(scores + bias, rows, position)

    if counter is not None:  # what a GPU would hold
        counter.mark(*solver.parameters(), batch.words, batch.num_pos, batch.num_mask, batch.targets)
    enc = solver.encode(batch)
    if counter is not None:
        counter.take()
    r = solver.rollout(batch, enc, pick, max_length)
    if counter is not None:
        reads = counter.take()[0]
    g = torch.Generator().manual_seed(2)
    (r.choices * torch.randn(r.choices.shape, generator=g)).sum().backward()
    ids = [[t for t in row if t >= 0] for row in r.tokens.tolist()]
    assert r.ids is None or r.ids == ids
    grads = [p.grad for p in solver.parameters() if p.grad is not None]
    return {"ids": hashlib.sha256(repr(ids).encode()).hexdigest()[:16], "length": sum(map(len, ids)),
            "longest": max(map(len, ids)), "choices": r.choices.double().sum().item(),
            "grad_norm": torch.sqrt(sum((g.double() ** 2).sum() for g in grads)).item(),
            **({} if counter is None else {"reads": reads})}


DEEP = {
    ("gts", 0.0): {"ids": "f6ff890952b670ad", "length": 140, "longest": 17, "choices": 140.0,
                   "grad_norm": 11.653179276350318},
    ("gts", 0.5): {"ids": "7d8034133e937c19", "length": 140, "longest": 17, "choices": 140.0,
                   "grad_norm": 20.05734598159844},
    ("graph2tree", 0.0): {"ids": "dc9ad13d30d76c9e", "length": 158, "longest": 17, "choices": 158.0,
                          "grad_norm": 33.31949998120907},
    ("graph2tree", 0.5): {"ids": "daf9fe95261bccf5", "length": 158, "longest": 17, "choices": 158.0,
                          "grad_norm": 54.115724591005964},
}
"""`deep_rollout`'s numbers, by solver and dropout."""


DEEP_MASKED_WITH_DROPOUT = {
    "gts": {"ids": "baabe81e240c59e5", "length": 140, "longest": 17, "choices": 140.0,
            "grad_norm": 20.361456387872604},
    "graph2tree": {"ids": "d20935fac089533c", "length": 158, "longest": 17, "choices": 158.0,
                   "grad_norm": 54.449049814046674},
}
"""The masked rollout's own `deep_rollout` numbers with dropout 0.5."""


@pytest.mark.parametrize("path", PATHS, indirect=True)
@pytest.mark.parametrize("name", ["gts", "graph2tree"])
@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_a_deep_rollout_and_its_gradients_are_the_pinned_ones(mawps, vocab, name, dropout, path):
    got = deep_rollout(name, mawps, vocab, dropout)
    pinned = DEEP_MASKED_WITH_DROPOUT[name] if path == "masked" and dropout else DEEP[name, dropout]
    assert {k: got[k] for k in ("ids", "length", "longest")} == {k: pinned[k] for k in ("ids", "length", "longest")}
    assert got["choices"] == pinned["choices"]
    assert got["grad_norm"] == pytest.approx(pinned["grad_norm"], rel=1e-6)


def _sampled_lengths(mawps, vocab, seeds: range) -> list[int]:
    """Each expression's length from a GTS of dropout 0.5 over `seeds` (fresh noise and dropout
    per seed, the same weights)."""
    from psedual.reexamine.module import GumbelNoise

    torch.manual_seed(0)
    solver = get_solver("gts")(vocab, replace(SMALL, dropout=0.5))
    reexaminer = Reexaminer(vocab, SMALL, PseDualConfig(fusion="predicted"))
    batch = collate(mawps.train[:12], vocab)
    lengths = []
    with torch.no_grad():
        for seed in seeds:
            torch.manual_seed(seed)
            noise = GumbelNoise([p.id for p in batch.problems], 17, len(vocab.output_tokens), torch.device("cpu"))
            r = solver.rollout(batch, solver.encode(batch), reexaminer._pick(1.0, noise), 17)
            lengths += [len([t for t in row if t >= 0]) for row in r.tokens.tolist()]
    return lengths


@pytest.mark.slow  # 80 rollouts
def test_with_dropout_the_masked_rollout_samples_from_the_same_distribution(mawps, vocab):
    """The two rollouts differ with dropout only in which dropout masks they draw: over 40 seeds
    their expressions' lengths are one distribution (two-sample Kolmogorov-Smirnov)."""
    from scipy.stats import ks_2samp

    rows = _sampled_lengths(mawps, vocab, range(40))
    MASKED_DEVICES.add("cpu")
    try:
        masked = _sampled_lengths(mawps, vocab, range(40))
    finally:
        MASKED_DEVICES.discard("cpu")
    assert rows != masked  # other dropout masks: other samples
    assert ks_2samp(rows, masked).pvalue > 0.05, (sum(rows) / len(rows), sum(masked) / len(masked))


def _load_bench(name: str):
    import importlib.util
    import sys
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent.parent / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # torch.compile builds the step's graphs, forward and backward: about a minute on 2 cores
def test_the_compiled_step_samples_and_differentiates_as_the_eager_one(mawps, vocab):
    """`COMPILED_DEVICES`: the masked rollout with each step through torch.compile is held to the same
    pins without dropout (the same expressions; losses and gradients to 1e-6), over two PseDual steps
    and a deep rollout, for both solvers (one compiled step serves both: the same decoder cells). Its
    host reads are the masked rollout's, outside the step (bench/syncs.py's counter, a dispatch mode, is
    not traced by the compiler). With dropout it draws the compiler's own masks (not pinned)."""
    from psedual.solvers.rollout import COMPILED_DEVICES
    from psedual.solvers.tree_rollout import compiled_step

    from torch._dynamo.utils import counters

    torch._dynamo.reset()  # compiled here, whatever ran before in this process
    graphs = counters["stats"]["unique_graphs"]
    MASKED_DEVICES.add("cpu")
    COMPILED_DEVICES.add("cpu")
    try:
        for name in ("gts", "graph2tree"):
            _check(fingerprint(name, mawps, vocab, 0.0), PINNED[name, 0.0])
            got = deep_rollout(name, mawps, vocab, 0.0)
            pinned = DEEP[name, 0.0]
            assert {k: got[k] for k in ("ids", "length", "longest", "choices")} == {
                k: pinned[k] for k in ("ids", "length", "longest", "choices")}
            assert got["grad_norm"] == pytest.approx(pinned["grad_norm"], rel=1e-6)
        assert compiled_step.cache_info().currsize == 1
        # the steps ran compiled, one graph per solver class and pick function (the compiler guards on the
        # model's type and on the pick's code: the reexaminer's for PseDual steps, deep_rollout's own), so 4;
        # every step, shape and τ shares them (one that recompiled would add graphs: 8 stop the compiler)
        assert counters["stats"]["unique_graphs"] - graphs == 4
        from psedual.reexamine.module import GumbelNoise

        torch.manual_seed(0)
        solver = get_solver("gts")(vocab, SMALL)
        reexaminer = Reexaminer(vocab, SMALL, PseDualConfig(fusion="predicted"))
        V = len(vocab.output_tokens)
        torch._dynamo.reset()
        graphs = counters["stats"]["unique_graphs"]
        # compiled first where two sizes happen to be equal (8 problems, 8 output columns: max_length 7 and
        # its "nowhere" column), which torch's default takes for one size and recompiles when they part
        other = get_solver("gts")(vocab, SMALL)  # another model of the class: the same graph
        for start, size, max_length, tau, model in ((0, 8, 7, 0.9, solver), (8, 12, 13, 0.7, solver),
                                                    (20, 8, 15, 0.5, other), (28, 16, 9, 1.0, solver)):
            batch = collate(mawps.train[start:start + size], vocab)
            noise = GumbelNoise([p.id for p in batch.problems], max_length, V, torch.device("cpu"))
            r = model.rollout(batch, model.encode(batch), reexaminer._pick(tau, noise), max_length)
            r.choices.sum().backward()
        assert counters["stats"]["unique_graphs"] - graphs == 1  # batches, lengths, limits, τ, models: one graph
    finally:
        MASKED_DEVICES.discard("cpu")
        COMPILED_DEVICES.discard("cpu")


@pytest.mark.parametrize("path", PATHS, indirect=True)
def test_the_masked_rollout_reads_the_host_a_few_times_whatever_the_length(mawps, vocab, path):
    """Counted as bench/syncs.py counts them: the rows rollout reads once per token of the longest
    expression; the masked one once per `check_every` steps (17 tokens at most: every 5 steps)."""
    from psedual.solvers.tree_rollout import check_every

    syncs = _load_bench("syncs")
    counter = syncs.SyncCounter()
    with counter:
        got = deep_rollout("gts", mawps, vocab, 0.0, counter=counter)
    assert got["longest"] == 17
    if path == "rows":
        assert got["reads"] >= 17
    else:
        assert check_every(17) == 5
        assert got["reads"] == 4  # after steps 5, 10, 15 and 20 (the last token's step is the 17th)


@pytest.mark.parametrize("path", PATHS, indirect=True)
@pytest.mark.parametrize("max_length", [1, 3, 8])
def test_every_expression_is_complete_within_max_length(mawps, vocab, path, max_length):
    """Prefix expressions with two operands per operator, no longer than `max_length`; each
    position's row picks its token; rows after the end are zero (both rollouts, short limits)."""
    from psedual.reexamine.module import GumbelNoise

    torch.manual_seed(0)
    solver = get_solver("graph2tree")(vocab, replace(SMALL, dropout=0.5))
    reexaminer = Reexaminer(vocab, SMALL, PseDualConfig(fusion="predicted"))
    batch = collate(mawps.train[:24], vocab)
    V, n_ops = len(vocab.output_tokens), len(vocab.operators)
    noise = GumbelNoise([p.id for p in batch.problems], max_length, V, torch.device("cpu"))
    plain = reexaminer._pick(1.0, noise)
    bias = torch.where(torch.arange(V) < n_ops, 3.0, 0.0)  # operators wherever the grammar allows one
    r = solver.rollout(batch, solver.encode(batch), lambda s, rows, at: plain(s + bias, rows, at), max_length)
    assert r.ids == [[t for t in row if t >= 0] for row in r.tokens.tolist()]
    assert max(map(len, r.ids)) == min(max_length, 7 if max_length == 8 else max_length)  # prefix lengths are odd
    for ids, choice in zip(r.ids, r.choices):
        need = 1
        for t in ids:
            assert need > 0
            need += 1 if t < n_ops else -1
        assert need == 0 and len(ids) <= max_length
        assert torch.equal(choice[:len(ids)].argmax(-1), torch.tensor(ids))
        assert choice[len(ids):].abs().sum() == 0


@pytest.mark.parametrize("name", ["gts", "graph2tree"])
def test_predict_on_an_encodings_rows_is_predict_by_index(mawps, vocab, name):
    """The rows rollout reads the unfinished problems' rows of the encoding (`Encoded.rows`, gathered
    once the set shrinks) with `ex=None`: the same scores, goals and contexts as gathering them by
    index at every step, in the order asked."""
    torch.manual_seed(0)
    solver = get_solver(name)(vocab, SMALL)  # no dropout: the two calls draw nothing
    enc = solver.encode(collate(mawps.train[:8], vocab))
    ex, H = torch.tensor([5, 2, 7]), SMALL.hidden_size
    goal, left, has_left = torch.randn(3, H), torch.randn(3, H), torch.tensor([True, False, True])
    by_index = solver.predict(enc, ex, goal, left, has_left)
    by_rows = solver.predict(enc.rows(ex), None, goal, left, has_left)
    for a, b in zip(by_index, by_rows, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("has_left", [[True, False, True, False, False], [False] * 5, [True] * 5])
def test_gates_on_their_own_rows_are_both_gates_on_every_row(mawps, vocab, has_left):
    """`Sides` (each gate on its own rows, where the host knows them) gives the scores, goals, contexts
    and gradients of a bool tensor (both gates on every row, one kept), mixed or all of one side."""
    from psedual.solvers.sides import sides_of

    torch.manual_seed(0)
    solver = get_solver("gts")(vocab, SMALL)
    with torch.no_grad():
        enc = solver.encode(collate(mawps.train[:8], vocab))
    ex, H = torch.tensor([5, 2, 7, 0, 2]), SMALL.hidden_size
    goal, left = torch.randn(5, H, requires_grad=True), torch.randn(5, H, requires_grad=True)
    weights = [torch.randn(5, n) for n in (len(vocab.output_tokens), H, H)]
    grads = []
    for sides in (torch.tensor(has_left), sides_of(has_left, torch.device("cpu"))):
        out = solver.predict(enc, ex, goal, left, sides)
        solver.zero_grad()
        goal.grad = left.grad = None
        sum((o * w).sum() for o, w in zip(out, weights)).backward()
        grads.append([*out, goal.grad, left.grad, solver.gate_l.weight.grad, solver.gate_r.weight.grad])
    for a, b in zip(*grads, strict=True):
        if a is None or b is None:  # a gate no row needs: no gradient of its own rows (both: zeros)
            assert (a if b is None else b).abs().sum() == 0
            continue
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)  # a sum over other rows may change order


def test_the_teacher_forced_groups_split_each_depth_by_left_sibling(mawps, vocab):
    """`lone{d}`/`right{d}` are where the depth's nodes without and with a left sibling are, and
    `order{d}` puts the two groups' outputs back in the depth's order."""
    tree = collate(mawps.train[:16], vocab).tree
    seen = 0
    for d in range(tree.depths):
        idx = tree.group(f"depth{d}")
        lone, right, order = (tree.group(f"{g}{d}") for g in ("lone", "right", "order"))
        assert torch.equal(tree.left_sibling[idx[lone]] < 0, torch.ones(len(lone), dtype=torch.bool))
        assert torch.equal(tree.left_sibling[idx[right]] >= 0, torch.ones(len(right), dtype=torch.bool))
        assert torch.equal(torch.cat([lone, right])[order], torch.arange(len(idx)))
        seen += len(right)
    assert seen == int((tree.left_sibling >= 0).sum()) > 0


@pytest.mark.parametrize("name", ["gts", "graph2tree"])
def test_the_rows_rollout_takes_its_first_step_from_the_teacher_forced_roots(mawps, vocab, name):
    """With dropout, the first step's scores are the teacher-forced pass's at the roots (the same
    masks), not a second pass's; roots made in another mode (evaluation) are not taken."""
    from psedual.reexamine.module import GumbelNoise

    torch.manual_seed(0)
    solver = get_solver(name)(vocab, replace(SMALL, dropout=0.5))
    batch = collate(mawps.train[:12], vocab)
    V = len(vocab.output_tokens)
    noise = GumbelNoise([p.id for p in batch.problems], 9, V, torch.device("cpu"))
    pick = Reexaminer(vocab, SMALL, PseDualConfig())._pick(1.0, noise)

    def first_scores(enc) -> torch.Tensor:
        seen = []

        def recording(scores, rows, position):
            seen.append(scores.detach().clone())
            return pick(scores, rows, position)

        solver.rollout(batch, enc, recording, 9)
        return seen[0]

    enc = solver.encode(batch)
    solver.loss(batch, enc)
    assert enc.roots is not None and enc.roots.scores.requires_grad
    taken = first_scores(enc)
    assert torch.equal(taken, enc.roots.scores.detach())
    assert not torch.equal(first_scores(solver.encode(batch)), taken)  # its own pass: other masks
    solver.eval()
    with torch.no_grad():
        solver.loss(batch, enc)
    solver.train()
    assert enc.roots.mode == (False, False)
    assert not torch.equal(first_scores(enc), enc.roots.scores)


def _merges_before_the_last_number(ids: list[int], n_ops: int) -> int:
    """Subtree merges a prefix expression needs before its last token (the last number's merges
    up to the root make the whole expression, which nothing reads)."""
    open_ops, merges = [], 0  # per open operator: whether its left subtree is done
    for t in ids[:-1]:
        if t < n_ops:
            open_ops.append(False)
            continue
        while open_ops and open_ops[-1]:
            open_ops.pop()
            merges += 1
        if open_ops:
            open_ops[-1] = True
    return merges


def test_the_rows_rollout_merges_no_subtree_above_a_whole_expression(mawps, vocab):
    """A deep rollout's merges (rows through `merge`) are those its right siblings read: none after
    an expression's last number."""
    torch.manual_seed(0)
    solver = get_solver("gts")(vocab, SMALL)
    merged = []
    merge = solver.merge
    solver.merge = lambda op, left, right: merged.append(len(op)) or merge(op, left, right)
    batch = collate(mawps.train[:12], vocab)
    V, n_ops = len(vocab.output_tokens), len(vocab.operators)
    bias = torch.where(torch.arange(V) < n_ops, 2.0, 0.0)
    r = solver.rollout(batch, solver.encode(batch), lambda s, rows, at: F.one_hot((s + bias).argmax(-1), V).float(), 17)
    assert sum(merged) == sum(_merges_before_the_last_number(ids, n_ops) for ids in r.ids) > 0
