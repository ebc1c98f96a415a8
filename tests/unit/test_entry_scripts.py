"""The entry scripts: the product's run the product's classes, the CPU stand-in's
entries pass theirs in, and a stand-in config given to the product is refused.

``examples/train.py`` and ``examples/eval.py`` parse with the product's config
classes only (no ``run:`` section, no pre-parse to pick a class); the
stand-in's ``python -m standin.train`` / ``standin.eval`` / ``standin.preflight``
call them with its config class, trainer, job and inference as arguments.
"""

import contextlib
import re
import runpy
import sys
from pathlib import Path

import pytest
import yaml

from examples import eval as product_eval
from examples import preflight
from examples import train as product_train
from memagent_workflow.config import MemAgentGRPOConfig
from memagent_workflow.eval.config import MemAgentEvalConfig
from memagent_workflow.eval.engine import ClusterInference
from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted(p.name for p in ROOT.glob("config*.yaml"))


def argv(name: str, tmp_path: Path, *overrides: str) -> list[str]:
    return ["--config", str(ROOT / name), f"cluster.fileroot={tmp_path}", *overrides]


class Log:
    """A logger's stand-in that keeps the INFO messages."""

    def __init__(self):
        self.lines: list[str] = []

    def info(self, msg: str) -> None:
        self.lines.append(msg)

    warning = error = info


def test_the_product_never_imports_the_stand_in():
    imports = re.compile(
        r"^\s*(from|import)\s+standin\b|['\"]standin\.\w+\.[A-Z]", re.M
    )
    files = [*ROOT.glob("examples/**/*.py"), *ROOT.glob("memagent_workflow/**/*.py")]
    assert len(files) > 20
    found = [str(p.relative_to(ROOT)) for p in files if imports.search(p.read_text())]
    assert found == []


def test_no_config_names_code_to_run():
    assert {"config.yaml", "config_cpu.yaml", "config_eval.yaml"} <= set(CONFIGS)
    for name in CONFIGS:
        assert "run" not in yaml.safe_load((ROOT / name).read_text()), name


def test_gpu_configs_load_with_the_product_classes(tmp_path):
    cfg = product_train.load_config(argv("config.yaml", tmp_path))
    assert type(cfg) is MemAgentGRPOConfig
    ev = product_eval.load_config(argv("config_eval.yaml", tmp_path))
    assert type(ev) is MemAgentEvalConfig


@pytest.mark.parametrize(
    "loader, name, entry",
    [
        (product_train.load_config, "config_cpu.yaml", "standin.train"),
        (product_eval.load_config, "config_eval_cpu.yaml", "standin.eval"),
        (product_eval.load_config, "config_eval_needle.yaml", "standin.eval"),
    ],
)
def test_a_stand_in_config_is_refused_naming_its_entry(loader, name, entry, tmp_path):
    args = argv(name, tmp_path)
    with pytest.raises(SystemExit) as stop:
        loader(args)
    message = str(stop.value.code)
    assert "\n" not in message and "CPU stand-in config" in message
    assert f"`uv run python -m {entry} {' '.join(args)}`" in message


def test_each_entry_that_refuses_a_stand_in_config_names_an_entry_that_exists():
    # The refusal names standin.<script>: a script loading configs without a
    # stand-in twin of that name would send the user to a missing module.
    loading = [
        p.stem
        for p in sorted(ROOT.glob("examples/*.py"))
        if "load_entry_config" in p.read_text()
    ]
    assert loading == ["ask", "eval", "preflight", "serve", "smoke", "train"]
    missing = [s for s in loading if not (ROOT / "standin" / f"{s}.py").exists()]
    assert missing == []


def test_the_preflight_refuses_a_stand_in_config_naming_its_own_entry(tmp_path):
    args = argv("config_cpu.yaml", tmp_path)
    with pytest.raises(SystemExit) as stop:
        preflight.product_loaders()["train"](args)
    assert f"`uv run python -m standin.preflight {' '.join(args)}`" in str(
        stop.value.code
    )


def test_another_unknown_key_is_still_an_error(tmp_path):
    with pytest.raises(Exception, match="nonsense"):
        product_train.load_config(argv("config.yaml", tmp_path, "+nonsense.x=1"))


def test_the_train_script_stops_with_one_line(monkeypatch):
    # The script run as `python examples/train.py --config config_cpu.yaml` from
    # the repository's root (its __main__ block, in this interpreter): Python
    # prints a SystemExit's message to stderr and exits 1.
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(
        sys, "argv", ["examples/train.py", "--config", "config_cpu.yaml"]
    )
    with pytest.raises(SystemExit) as stop:
        runpy.run_path("examples/train.py", run_name="__main__")
    message = stop.value.code
    assert isinstance(message, str) and "\n" not in message  # exit status 1
    assert message.startswith("config_cpu.yaml is a CPU stand-in config")
    assert message.endswith("`uv run python -m standin.train --config config_cpu.yaml`")


def test_the_product_train_entry_runs_the_product_classes(tmp_path, monkeypatch):
    ran, log = {}, Log()
    monkeypatch.setattr(product_train, "logger", log)
    monkeypatch.setattr(
        product_train, "quiet_terminal", lambda _: contextlib.nullcontext()
    )
    monkeypatch.setattr(product_train, "ray_for", lambda _: contextlib.nullcontext())
    monkeypatch.setattr(
        product_train, "train", lambda c, w, t: ran.update(config=c, trainer=t)
    )
    product_train.main(argv("config.yaml", tmp_path))
    assert type(ran["config"]) is MemAgentGRPOConfig
    assert ran["trainer"] is MemAgentPPOTrainer
    assert log.lines[0] == (
        "config MemAgentGRPOConfig, trainer "
        "memagent_workflow.trainer.ppo_trainer.MemAgentPPOTrainer, "
        "job examples.train.on_cluster"
    )


def test_the_stand_in_train_entry_passes_its_classes(monkeypatch):
    from standin import train
    from standin.config import StandinGRPOConfig
    from standin.cpu_job import cpu_job
    from standin.trainer import StandinPPOTrainer

    got = {}
    monkeypatch.setattr(product_train, "main", lambda *a, **kw: got.update(kw, a=a))
    train.main(["--config", "config_cpu.yaml"])
    assert got["a"] == (["--config", "config_cpu.yaml"], product_train.WORKFLOW)
    assert got["config_cls"] is StandinGRPOConfig
    assert got["trainer_cls"] is StandinPPOTrainer and got["job"] is cpu_job


def test_the_stand_in_job_and_trainer_are_logged(tmp_path, monkeypatch):
    from standin.config import StandinGRPOConfig
    from standin.trainer import StandinPPOTrainer

    log = Log()
    monkeypatch.setattr(product_train, "logger", log)
    monkeypatch.setattr(
        product_train, "quiet_terminal", lambda _: contextlib.nullcontext()
    )
    monkeypatch.setattr(product_train, "ray_for", lambda _: contextlib.nullcontext())
    monkeypatch.setattr(product_train, "train", lambda *a: None)
    product_train.main(
        argv("config_cpu.yaml", tmp_path),
        config_cls=StandinGRPOConfig,
        trainer_cls=StandinPPOTrainer,
        job=product_train.on_cluster,  # the real cpu_job would build a model
    )
    assert log.lines[0].startswith(
        "config StandinGRPOConfig, trainer standin.trainer.StandinPPOTrainer, job "
    )


def test_the_eval_entries_pick_their_inference(tmp_path, monkeypatch):
    from standin import eval as standin_eval
    from standin.config import StandinEvalConfig
    from standin.eval_inference import StandinInference

    got = []
    monkeypatch.setattr(product_eval, "evaluate", lambda c, i: got.append((c, i)))
    product_eval.main(argv("config_eval.yaml", tmp_path))
    standin_eval.main(argv("config_eval_cpu.yaml", tmp_path))
    (gpu, gpu_inference), (cpu, cpu_inference) = got
    assert type(gpu) is MemAgentEvalConfig and gpu_inference is ClusterInference
    assert type(cpu) is StandinEvalConfig and cpu_inference is StandinInference


def test_evaluate_logs_and_builds_the_inference_it_is_given(tmp_path, monkeypatch):
    class Stop(Exception):
        pass

    class Probe(ClusterInference):
        def prepare(self) -> None:
            raise Stop(self.config)

    log = Log()
    monkeypatch.setattr(product_eval, "logger", log)
    config = product_eval.load_config(argv("config_eval.yaml", tmp_path))
    with pytest.raises(Stop):
        product_eval.evaluate(config, Probe)
    assert (
        log.lines[0]
        == f"config MemAgentEvalConfig, inference {__name__}.{Probe.__qualname__}"
    )


def test_the_preflight_loads_as_the_entry_that_would_run_it(tmp_path):
    from standin import preflight as standin_preflight

    product = preflight.product_loaders()
    assert preflight.load(argv("config.yaml", tmp_path), product)[1] == "train"
    config, kind = preflight.load(argv("config_eval.yaml", tmp_path), product)
    assert kind == "eval" and type(config) is MemAgentEvalConfig
    with pytest.raises(SystemExit, match="-m standin.preflight --config"):
        preflight.load(argv("config_cpu.yaml", tmp_path), product)
    cpu = standin_preflight.loaders()
    assert preflight.load(argv("config_cpu.yaml", tmp_path), cpu)[1] == "train"
    config, kind = preflight.load(argv("config_eval_cpu.yaml", tmp_path), cpu)
    assert kind == "eval" and hasattr(config, "standin")
