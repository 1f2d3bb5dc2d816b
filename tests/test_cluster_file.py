"""A static check of clusters/gpu.yaml: what `ray up` needs from a fresh clone, and what a GPU
sweep needs from the nodes it gets (Ray's own schema check is tests/test_tune.py's)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).parent.parent
GPU = yaml.safe_load((ROOT / "clusters" / "gpu.yaml").read_text())


def test_the_gpu_cluster_states_its_nodes_resources_so_gpu_work_goes_only_to_the_workers():
    types = GPU["available_node_types"]
    assert types[GPU["head_node_type"]]["resources"]["GPU"] == 0
    workers = [t for name, t in types.items() if name != GPU["head_node_type"]]
    assert workers and all(t["resources"]["GPU"] >= 1 and t["resources"]["CPU"] >= 1 for t in workers)
    assert all(t["min_workers"] == 0 for t in workers)  # GPU nodes from zero: none idle before a sweep


def test_the_gpu_workers_get_an_instance_profile_for_the_storage():
    """Ray gives its default instance profile to the head only; Train workers upload their
    checkpoints from the GPU nodes."""
    for name, node in GPU["available_node_types"].items():
        if name != GPU["head_node_type"]:
            assert node["node_config"]["IamInstanceProfile"], name


def test_every_mount_source_is_in_a_fresh_clone_and_every_node_fetches_the_data():
    for target, source in GPU["file_mounts"].items():
        path = (ROOT / source).resolve()
        assert path == ROOT or ROOT in path.parents, f"{target}: {source} lies outside the repository"
        assert path.exists(), source
    for node in ("head_setup_commands", "worker_setup_commands"):
        commands = GPU[node]
        install = next(i for i, c in enumerate(commands) if "make install" in c)
        assert any("psedual data fetch" in c for c in commands[install + 1:]), node


def test_ray_up_and_the_heads_autoscaler_find_boto3_through_the_cluster_extra():
    text = (ROOT / "pyproject.toml").read_text()
    extra = re.search(r"^cluster = \[(.*)\]", text, re.M)
    assert extra and "boto3" in extra.group(1)
    assert "EXTRAS=test,cluster" in " ".join(GPU["head_setup_commands"])
    assert "EXTRAS ?= test" in (ROOT / "Makefile").read_text()
    assert "[cluster]" in (ROOT / "README.md").read_text() and "[cluster]" in (ROOT / "docs" / "cluster.md").read_text()


def test_every_node_installs_the_pinned_versions():
    """A worker autoscaled hours after the head installs then: the same Ray only if pinned."""
    makefile = (ROOT / "Makefile").read_text()
    assert "-c constraints.txt" in makefile and "$(VENV)/.installed: pyproject.toml constraints.txt" in makefile
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    from importlib.metadata import version

    assert pins["ray"] == version("ray") and pins["torch"] == version("torch").split("+")[0]
    assert pins["boto3"] and pins["moto"]
    for node in ("head_setup_commands", "worker_setup_commands"):
        assert any("make install" in c for c in GPU[node]), node


def test_the_dashboard_stays_on_the_heads_loopback():
    start = " ".join(GPU["head_start_ray_commands"])
    assert "--dashboard-host=0.0.0.0" not in start and "--dashboard-host=127.0.0.1" in start


def test_every_node_gets_the_encoders_the_full_profile_names_by_an_explicit_command():
    """Issues 42 and 49: the hub ids the full profile's recipes name for bert_tree and re_deduction
    (English and, for Math23K, Chinese) are put in each node's Hugging Face cache by the setup, after
    the install (whose venv has `hf`), once: a restart fetches nothing again."""
    from psedual.tune.paper import load_paper
    from psedual.tune.space import make_config

    paper = load_paper(ROOT / "search_spaces" / "paper.yaml")
    configs = [make_config(f) for part in ("table1", "table3", "figure1")
               for f in paper.sweep(part, "full").trial_configs()]
    plm = {(c.solver, c.data.dataset): c.model.plm for c in configs if c.solver in ("bert_tree", "re_deduction")}
    assert plm[("re_deduction", "math23k")] == "hfl/chinese-roberta-wwm-ext" and \
        plm[("re_deduction", "mawps")] == "FacebookAI/roberta-base"
    assert len(set(plm.values())) == 4
    for node in ("head_setup_commands", "worker_setup_commands"):
        commands = GPU[node]
        install = next(i for i, c in enumerate(commands) if "make install" in c)
        for hub_id in set(plm.values()):
            fetch = [c for c in commands[install + 1:] if f"/.venv/bin/hf download {hub_id} " in c]
            assert len(fetch) == 1 and "--local-dir" not in fetch[0], (node, hub_id)
            cached = f"~/.cache/huggingface/hub/models--{hub_id.replace('/', '--')}/refs/main"
            assert fetch[0].startswith(f"test -e {cached} ||"), fetch[0]  # a restart fetches nothing again
