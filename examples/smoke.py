"""The planned launch, small, on this machine's GPUs, before the long run.

    python3 examples/smoke.py --config config.yaml scheduler.type=local [the launch's overrides]

Takes the launch's ``--config`` and overrides, and runs them as they are (model,
engine, layout, scheduler, weight-update mode, FSDP or LoRA, prompts) at small
scale, under the trial ``<trial_name>-smoke``: the model checked, the
preflight, 2 training steps of a few groups of 2 episodes (at most 2 chunks)
with a server bench, an HF checkpoint and a recover checkpoint, one more step
resumed from it through AReaL's recover path, then the eval on a few samples
with the saved checkpoint. Each phase has a deadline; one that runs out or
fails stops the smoke, naming the phase and the cause, and nothing it started
is left running. It prints the phase table, the measured rates and the
projection of the full run (``examples/preflight.py --measured`` reads the
same JSON), and writes ``smoke.json`` beside its logs. Exit 0 when every
phase passed. Without a GPU: docs/smoke.md.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python examples/smoke.py` puts examples/ first
    sys.path.insert(0, str(ROOT))

CHILDREN = ("train", "resume", "eval")


@dataclass
class Entries:
    """What a smoke runs in its children: the launch's classes (the product's,
    or another entry's, e.g. a CPU stand-in's) and how to start itself again."""

    child: list[str]  # this entry's command, re-run with --child RUN
    train_config_cls: type
    trainer_cls: type
    job: Callable[[Any], Any]
    eval_config_cls: type
    inference_cls: type
    eval_loader: Callable[[list[str]], Any]  # the eval entry's config loader
    # The eval's data: (eval config, folder, samples) -> its overrides.
    eval_data: Callable[[Any, Path, int], list[str]]
    eval_config: str = "config_eval.yaml"
    # Keys the eval must share with the training run (config -> overrides).
    eval_overrides: Callable[[Any], list[str]] = lambda config: []
    extra_overrides: list[str] = field(default_factory=list)
    inputs_by: str | None = None  # what builds the model and data (preflight)
    # Builds the model at actor.path when missing (config -> None), in the
    # model phase; None: the launch's model must exist (a GPU cluster's).
    build_model: Callable[[Any], None] | None = None


def product_entries() -> Entries:
    """``train.py``'s and ``eval.py``'s classes: a GPU cluster's launch."""
    from examples import eval as product_eval
    from examples.train import on_cluster
    from memagent_workflow.config import MemAgentGRPOConfig
    from memagent_workflow.eval.config import MemAgentEvalConfig
    from memagent_workflow.eval.engine import ClusterInference
    from memagent_workflow.smoke.launch import eval_subset
    from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer

    return Entries(
        child=[sys.executable, str(Path(__file__).resolve())],
        train_config_cls=MemAgentGRPOConfig,
        trainer_cls=MemAgentPPOTrainer,
        job=on_cluster,
        eval_config_cls=MemAgentEvalConfig,
        inference_cls=ClusterInference,
        eval_loader=product_eval.load_config,
        eval_data=eval_subset,
    )


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], allow_abbrev=False
    )
    p.add_argument("--groups", type=int, default=2, help="questions per step (2)")
    p.add_argument("--eval-samples", type=int, default=4, help="eval questions (4)")
    p.add_argument("--eval-config", help="the eval's config (default config_eval.yaml)")
    p.add_argument(
        "--bench-turns", type=int, help="turns at once per server in the bench "
        "(default: as many as the config plans and the KV cache holds)",
    )  # fmt: skip
    p.add_argument(
        "--deadline", action="append", default=[], metavar="PHASE=SECONDS",
        help="a phase's deadline (default: from rollout.setup_timeout and "
        "request_timeout); repeatable",
    )  # fmt: skip
    p.add_argument("--child", choices=CHILDREN, help=argparse.SUPPRESS)
    args, rest = p.parse_known_args(argv)
    try:
        args.deadlines = {
            k.strip(): float(v) for k, v in (d.rsplit("=", 1) for d in args.deadline)
        }
    except ValueError:
        p.error(f"--deadline takes PHASE=SECONDS, got {args.deadline}")
    return args, rest


def child(run: str, argv: list[str], entries_of: Callable[[], Entries]) -> int:
    """One child: a training run (``train``, ``resume``) or the eval; its first
    phase opens before the heavy imports (torch, AReaL), which it counts."""
    from memagent_workflow.smoke.events import FIRST_PHASE, EventLog

    log = EventLog.from_env()
    log.start(FIRST_PHASE[run])
    entries = entries_of()
    if run == "eval":
        from examples import eval as product_eval

        product_eval.main(
            argv,
            config_cls=entries.eval_config_cls,
            inference_cls=entries.inference_cls,
        )
        log.end("eval")
        return 0
    from examples import train
    from memagent_workflow.smoke.timed import timed

    train.main(
        argv,
        config_cls=entries.train_config_cls,
        trainer_cls=timed(entries.trainer_cls),
        job=entries.job,
    )
    return 0


def main(argv: list[str], entries: Callable[[], Entries] = product_entries) -> int:
    """The smoke (0: every phase passed), or one of its children; ``entries``
    gives the launch's classes (default: the product's, a GPU cluster's)."""
    args, rest = parse(argv)
    if args.child:
        return child(args.child, rest, entries)
    from memagent_workflow.infra.paths import load_entry_config
    from memagent_workflow.smoke.plan import deadlines, no_config_copy
    from memagent_workflow.smoke.run import Smoke

    found = entries()
    # A config made for another entry stops here, naming that entry.
    with no_config_copy():
        config = load_entry_config(rest, found.train_config_cls, __file__)
    try:
        deadlines(config, args.deadlines)  # an unknown phase stops here
    except ValueError as exc:
        print(f"smoke: {exc}", file=sys.stderr)
        return 2
    return Smoke(config, rest, args, found, mark=uuid.uuid4().hex).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
