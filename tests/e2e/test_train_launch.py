"""The CPU main job as GPU users launch it: AReaL's single controller, Ray, and
(on vLLM) the one-process SPMD mode.

Each run is ``python -m standin.train --config config_cpu.yaml`` for 2 GRPO steps
with only the launch overrides of docs/gpu-launch.md's GPU commands changed:
``scheduler.type=local|ray|null``, ``actor.weight_update_mode=disk|xccl`` and
``rollout.backend=sglang|vllm:d1`` (the ``vllm`` runs, through
`RemotevLLMEngine`: the README's vLLM line, and Ray with xccl; the one-process
mode is tests/e2e/test_train_cpu.py's), run as
docs/gpu-launch.md writes them: from the root of a fresh copy of the repository, with
``config_cpu.yaml``'s relative paths (model, data, ``cluster.fileroot``). AReaL's
scheduler starts the actor and rollout workers; the rollout worker launches
the stand-in where it would launch SGLang (or vLLM). The xccl runs train in bfloat16, as
the GPU recipe does, so every tensor is cast on its way into the float32
server, and uses 0.02 MB buckets so the needle model (88 KB in bf16) takes several.

The exit report read here (digest, weight syncs) and the event log (the
routes a server answered) are stand-in only: SGLang and vLLM have no such
report.
"""

from __future__ import annotations

import getpass
import re
import shlex
import shutil
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from memagent_workflow.infra.terminal import CONSOLE_LOG
from standin.train import load_config
from tests.areal_release import CPU_RAY, NO_CPU_RAY
from tests.e2e.launch_runs import (
    LAUNCHES,
    ROOT,
    VLLM,
    Launched,
    digest_of,
    fresh_clone,
    train_cmd,
    worker_env,
)
from tests.e2e.ray_cluster import RayNodes

# Beyond the launch (LAUNCHES): several xccl buckets and no validation set for the
# Ray run (no eval-rollout worker). The two single-controller runs (the main job
# on each engine) keep the config's one seed and start at the same moment, as two
# users' main jobs would:
# AReaL draws worker, controller and xccl ports from Python's `random` seeded by
# `seed`, and the eval-rollout worker each forks draws its port there too, so
# both must still finish, each with its own stand-in (MemAgentLocalScheduler).
# AReaL's RayScheduler draws its own ports: the Ray run has a seed of its own.
EXTRA = {
    "local_disk": (),
    "vllm": (),
    "vllm_ray_xccl": ("seed=103", "valid_dataset=null", "standin.xccl_bucket_mb=0.02"),
}
ONE_SEED = ("local_disk", "vllm")
RUNS = sorted(set(EXTRA) - (set() if CPU_RAY else {"vllm_ray_xccl"}))
VLLM_RUNS = [name for name in RUNS if VLLM in LAUNCHES[name]]


@pytest.fixture(scope="module")
def model(needle_model_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("launch") / "model"
    shutil.copytree(needle_model_dir, path)
    return path


@pytest.fixture(scope="module")
def initial(model):
    return digest_of(model)


def selected_runs(request) -> list[str]:
    """The runs the collected tests of this module use."""
    names = set()
    for item in request.session.items:
        if item.module is request.module:
            names |= set(item.fixturenames) & set(RUNS)
            callspec = getattr(item, "callspec", None)
            if callspec is not None and "run" in callspec.params:
                names.add(callspec.params["run"])
    return sorted(names)


# AReaL picks a worker's ports when it starts the process and the worker binds
# them some 10-30 s later (after importing torch and AReaL); a run started at the
# same time can take one in between. The Ray run, if it failed on a taken port,
# is run again, alone (the single-controller runs claim theirs: no second try).
PORT_TAKEN = ("EADDRINUSE", "address already in use")


@pytest.fixture(scope="module")
def runs(model, tmp_path_factory, request):
    """The selected runs, started together: each is a chain of process starts
    that mostly waits on one core, so two cores finish three at once in about
    the time of one and a half."""

    clusters: dict[str, RayNodes] = {}

    def start(name: str) -> Launched:
        clone = fresh_clone(tmp_path_factory.mktemp(name), model)
        env = None
        if "cluster.n_nodes=2" in LAUNCHES[name]:  # docs/multi-node.md's cluster,
            # whose workers inherit the run's environment (its stand-in's report)
            clusters[name] = RayNodes(clone, worker_env(clone))
            env = clusters[name].env()
        cmd = train_cmd(*LAUNCHES[name], *EXTRA[name])
        return Launched(cmd, clone, cwd=clone, env=env)

    def finish(launched: Launched):
        try:
            return launched.finish()
        except AssertionError as exc:  # reported by the tests of that run
            return exc

    started = {name: start(name) for name in selected_runs(request)}
    finished = {name: finish(launched) for name, launched in started.items()}
    for name, result in finished.items():
        if (
            name not in ONE_SEED  # a port taken there is the bug tested
            and isinstance(result, AssertionError)
            and any(sign in str(result) for sign in PORT_TAKEN)
        ):
            if name in clusters:
                clusters.pop(name).stop()
            finished[name] = finish(start(name))
    for name, cluster in clusters.items():
        cluster.stop()
        if not isinstance(finished[name], AssertionError):
            finished[name].nodes = [node.name for node in cluster.nodes]
    return finished


def get(runs, name):
    if isinstance(runs[name], AssertionError):
        pytest.fail(f"the {name} run failed: {runs[name]}", pytrace=False)
    return runs[name]


@pytest.fixture(scope="module")
def local_disk(runs):
    """The CPU main job shortened, validation included (eval-rollout worker)."""
    return get(runs, "local_disk")


@pytest.fixture(scope="module")
def vllm(runs):
    """The README's vLLM line: the main job on vLLM, validation included."""
    return get(runs, "vllm")


@pytest.fixture(scope="module")
def ray(runs):
    return get(runs, "vllm_ray_xccl")


@pytest.fixture(params=RUNS)
def run(request, runs):
    return get(runs, request.param)


def report_of(run) -> dict:
    assert len(run.reports) == 1, f"expected one stand-in, got {len(run.reports)}"
    return run.reports[0]


def test_the_server_serves_exactly_the_weights_the_actor_saved(run, initial):
    served = report_of(run)["digest"]
    assert served == digest_of(run.checkpoint)
    assert served != initial


def test_one_weight_sync_per_step_with_every_tensor(run, request):
    syncs = report_of(run)["weight_syncs"]
    assert len(syncs) == 2  # one pause ... resume window per step, each with updates
    n_params = len(
        dict(AutoModelForCausalLM.from_pretrained(run.checkpoint).named_parameters())
    )
    for sync in syncs:
        assert sync["tensors"] == sync["distinct_tensors"] == n_params
        if "xccl" in request.node.callspec.params["run"]:
            assert sync["source"] == "distributed"
            assert sync["requests"] >= 2  # several buckets, one request each
            assert sync["dtypes"] == ["bfloat16"]  # cast into the float32 server
        else:
            assert sync["source"] == "disk" and sync["requests"] == 1


def test_step_two_rollouts_carry_version_one(run):
    first, second = run.steps
    assert [first["step"], second["step"]] == [1, 2]
    assert first["oldest_rollout_version"] == 0
    assert second["oldest_rollout_version"] == 1
    assert second["staleness_max"] == 0
    assert first["rows"] > 0 and second["rows"] > 0


def test_the_server_takes_its_context_length_from_the_config(run, tmp_path):
    config = load_config(
        ["--config", "config_cpu.yaml", f"cluster.fileroot={tmp_path}"]
    )
    assert report_of(run)["context_length"] == config.sglang.context_length
    assert config.vllm.max_model_len == config.sglang.context_length  # vLLM's


HEAD = "uv run python -m standin.train --config config_cpu.yaml "


def readme_overrides() -> list[str]:
    """The overrides of the vLLM command of docs/cpu.md (the README's CPU page)."""
    text = (ROOT / "docs" / "cpu.md").read_text()
    line = next(x for x in text.splitlines() if "rollout.backend=vllm" in x)
    assert line.startswith(HEAD), line
    return shlex.split(line[len(HEAD) :].split("#", 1)[0])


def test_the_readme_vllm_line_is_the_vllm_run():
    assert readme_overrides() == [VLLM] == list(LAUNCHES["vllm"])


def test_the_readme_vllm_line_launched_the_stand_in_in_its_vllm_mode(vllm):
    console = next(vllm.out.rglob(CONSOLE_LOG)).read_text(errors="replace")
    assert "CPU stand-in vLLM (AReaL's extension) server" in console
    assert report_of(vllm)["protocol"] == "vllm"


@pytest.mark.parametrize("run", VLLM_RUNS, indirect=True)
def test_vllm_runs_generate_and_sync_over_vllms_routes(run, request):
    """Only AReaL's ``VLLMBackend`` (in `RemotevLLMEngine`) sends these."""
    report, routes = report_of(run), run.routes
    assert report["protocol"] == "vllm"
    assert routes["/v1/completions"] > 0 and routes["/generate"] == 0
    # one pause per step (a resume may come more: the one-process mode's trainer
    # also resumes before its first rollout)
    assert (
        routes["/areal_pause_generation"] == 2 <= routes["/areal_continue_generation"]
    )
    if "xccl" in request.node.callspec.params["run"]:
        assert routes["/areal_init_weights_update_group"] == 1
        buckets = sum(s["requests"] for s in report["weight_syncs"])
        assert routes["/areal_set_update_weight_meta"] == buckets
        assert routes["/areal_update_weights_xccl"] == buckets
        assert routes["/update_weights_from_distributed"] == 0
    else:
        assert routes["/areal_update_weights"] == 2  # one per step
        assert routes["/update_weights_from_disk"] == 0


def test_two_runs_with_one_seed_at_once_each_served_their_own_stand_in(
    local_disk, vllm
):
    pids = [report_of(run)["pid"] for run in (local_disk, vllm)]
    assert pids[0] != pids[1]
    for run in (local_disk, vllm):  # each forked its eval-rollout worker
        assert run.steps[-1]["eval_sub_em"] is not None
        assert (run.checkpoint / "model.safetensors").is_file()


def test_workers_and_server_were_started_by_the_local_scheduler(local_disk):
    rollout_log = log_dir(local_disk, "rollout.log").read_text()
    assert "standin.backend.StandinSGLangEngine" in rollout_log
    assert "CPU stand-in SGLang server on http://" in rollout_log
    actor_log = log_dir(local_disk, "actor.log").read_text()
    assert "standin.actor.StandinPPOActor" in actor_log


def test_validation_ran_on_the_eval_rollout_worker(local_disk):
    assert local_disk.steps[-1]["eval_sub_em"] is not None


@NO_CPU_RAY
def test_the_ray_run_joined_two_nodes_and_put_workers_on_both(ray):
    console = log_dir(ray, CONSOLE_LOG).read_text()  # the full terminal output
    assert "joined a Ray cluster of 2 nodes" in console
    assert "RayScheduler" in console and "LocalScheduler" not in console
    assert "local Ray instance" not in console
    placed = dict(PLACED.findall(log_dir(ray, "main.log").read_text()))
    assert set(placed) == {"actor/0", "rollout/0"}  # (no validation set here)
    assert placed["actor/0"] != placed["rollout/0"]
    assert set(placed.values()) == set(ray.nodes)  # as the cluster named them


PLACED = re.compile(r"(\S+/\d+) on Ray node (\S+ \(\w+\))")


def log_dir(run, name: str = "") -> Path:
    return (
        run.out
        / "outputs"
        / "cpu"
        / "areal"
        / "logs"
        / getpass.getuser()
        / "memagent-cpu"
        / "trial0"
        / name
    )


# The terminal of the shortened main job: its step lines and progress bar, the
# start and the end, and the warnings of its four processes (about 25 lines in
# all, measured); the 50-step main job adds one line per step.
TERMINAL_LINES = 40


def test_the_terminal_shows_the_step_lines_and_the_files_keep_the_rest(local_disk):
    lines = [line for line in local_disk.log.splitlines() if line.strip()]
    steps = [line for line in lines if line.startswith("step ")]
    assert [s.split(":")[0] for s in steps] == ["step 1", "step 2"]
    assert "validation accuracy" in steps[1]
    assert any("steps in" in line and "validation accuracy" in line for line in lines)
    assert len(lines) <= TERMINAL_LINES, "\n".join(lines)
    assert "ppo_actor/n_seqs" not in local_disk.log  # AReaL's stats table...
    assert "ppo_actor/n_seqs" in log_dir(local_disk, "main.log").read_text()  # ...here
    assert "ppo_actor/n_seqs" in log_dir(local_disk, CONSOLE_LOG).read_text()
    assert "Loaded weights" in log_dir(local_disk, "rollout.log").read_text()


def test_tensorboard_gets_every_stat(local_disk):
    board = (
        local_disk.out
        / "outputs"
        / "cpu"
        / "areal"
        / "tensorboard"
        / "memagent-cpu"
        / "trial0"
    )
    events = list(board.glob("events.out.tfevents.*"))
    assert len(events) == 1 and events[0].stat().st_size > 0


def test_relative_paths_mean_the_directory_of_the_command(run):
    # config_cpu.yaml's relative paths, resolved once by the entry script: the
    # workers (Ray's run elsewhere) wrote and read them under the clone's root.
    root = run.out / "outputs" / "cpu"
    assert run.checkpoint.is_relative_to(root / "areal" / "checkpoints")
    train = re.search(r"train_dataset\.path=(\S+\.jsonl)", run.log)
    assert train, run.log[-3000:]
    # data/{task}/train_{size}.jsonl, beside its record of the options
    assert Path(train.group(1)).parent == root / "data" / "needle"
    assert Path(f"{train.group(1)}.spec.json").is_file()
    assert Path(train.group(1)).is_file()
    assert (root / "name_resolve").is_dir()
    assert f"actor.path={root / 'needle_model'}" in run.log
