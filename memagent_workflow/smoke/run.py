"""The smoke, phase by phase (``examples/smoke.py`` is its command line).

In this process: ``model`` (``actor.path`` loadable) and ``preflight`` (no
blocking item for the launch as planned). Then three children, one after the
other, under `processes.Supervisor`: the training run (2 steps), its resume
(one more step from the recover checkpoint) and the eval of the saved
checkpoint; GPU memory is polled meanwhile (`gpu_memory`). Whatever happens,
the report (`report`) is printed and written, with the projection of the full
run from what was measured (``preflight.projection``).
"""

from __future__ import annotations

import argparse
import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from areal.utils import logging

from memagent_workflow.preflight import Options, Run, blocking, run_checks
from memagent_workflow.preflight.data import check_train_file, turn_budgets_of
from memagent_workflow.preflight.memory_estimate import (
    actor_memory,
    planned_turns,
    server_memory,
)
from memagent_workflow.preflight.projection import projection
from memagent_workflow.preflight.rates import MeasuredFileError, read_measured
from memagent_workflow.preflight.step import update_passes
from memagent_workflow.smoke import launch, plan, report
from memagent_workflow.smoke.events import FIRST_PHASE, EventLog, read_events
from memagent_workflow.smoke.gpu_memory import PeakMemory
from memagent_workflow.smoke.processes import Child, PhaseFailed, Supervisor
from memagent_workflow.smoke.signals import cause_of, stop_on_signals
from memagent_workflow.smoke.slurm_jobs import smoke_job_prefixes
from memagent_workflow.smoke.timed import BENCH_ENV

logger = logging.getLogger("MemAgentSmoke")
PREFLIGHT_ROWS = 1000  # data rows the preflight checks per file


def within(seconds: float, phase: str, fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in this process, `PhaseFailed` if it takes over ``seconds``
    (it is left to the process's end, in a daemon thread: its result is
    dropped, so nothing it does later reaches the report)."""
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["result"] = fn(*args)
        except BaseException as exc:  # raised again in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise PhaseFailed(phase, f"ran out of its deadline ({seconds:g} s)")
    if "error" in box:
        raise box["error"]
    return box.get("result")


class Smoke:
    """One smoke of the launch ``config`` (loaded from ``argv``)."""

    def __init__(
        self, config: Any, argv: list[str], args: argparse.Namespace, entries: Any,
        mark: str,
    ):  # fmt: skip
        self.config, self.argv, self.args, self.entries = config, argv, args, entries
        self.mark = mark
        self.started = datetime.now(UTC).isoformat(timespec="seconds")
        self.cwd = Path.cwd()
        self.run_: Run | None = None
        self.context: dict[str, Any] = {"model": config.actor.path}
        self.model_found = ""

    # ------------------------------------------------------------ the phases
    def run(self) -> int:
        """Every phase; 0 when all passed. Whatever stops it (a phase that
        fails or runs out of time, any exception, Ctrl-C, SIGTERM, SIGHUP), the
        report and ``smoke.json`` are written."""
        deadlines = plan.deadlines(self.config, self.args.deadlines)
        plan.clear_previous(self.config)
        self.dir = plan.smoke_dir(self.config)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.events = self.dir / "events.jsonl"
        self.events.unlink(missing_ok=True)
        supervisor = Supervisor(
            self.events, deadlines, self.mark, cwd=self.cwd,
            slurm_jobs=smoke_job_prefixes(self.config),
        )  # fmt: skip
        print(f"smoke of {' '.join(self.argv)}: trial {plan.smoke_trial(self.config)}, "
              f"logs in {self.dir}", flush=True)  # fmt: skip
        failure = None
        peaks = PeakMemory(self.mark)
        self.phase = "model"
        with stop_on_signals():
            try:
                self.phases(deadlines, supervisor, peaks)
            except PhaseFailed as exc:
                failure = {"phase": exc.phase, "cause": exc.cause}
            except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP
                failure = {"phase": "interrupted", "cause": cause_of(exc)}
            except Exception as exc:  # a bug or an OSError: named, reported
                logger.exception(f"the smoke stopped in {self.phase}")
                failure = {"phase": self.phase, "cause": repr(exc)}
            self.finish(failure, peaks)
        return 1 if failure else 0

    def phases(
        self, deadlines: dict[str, float], supervisor: Supervisor, peaks: PeakMemory
    ) -> None:
        own = EventLog(str(self.events), "smoke")
        with own.phase("model"):
            if self.entries.build_model is not None:  # e.g. the stand-in's
                self.entries.build_model(self.config)
            self.model_found = within(
                deadlines["model"], "model", launch.check_model, self.config.actor.path
            )
        self.phase = "preflight"
        with own.phase("preflight"):
            run, bad = within(deadlines["preflight"], "preflight", self.preflight)
        self.run_ = run  # a timed-out preflight's thread never sets it
        gpus = run.gpus
        self.context["device"] = gpus[0].name if gpus else "no GPU (CPU)"
        if bad:
            raise PhaseFailed(
                "preflight",
                "; ".join(f"{c.label}: {c.found}" for c in bad)
                + " (examples/preflight.py with the same arguments shows the table)",
            )
        with peaks:
            for name in ("train", "resume", "eval"):
                self.phase = FIRST_PHASE[name]
                self.say(name)
                try:
                    child = self.child(name)
                except (OSError, ValueError) as exc:  # e.g. its eval config
                    raise PhaseFailed(FIRST_PHASE[name], repr(exc)) from exc
                supervisor.run(child)

    def say(self, name: str) -> None:
        what = {
            "train": f"{plan.STEPS} training steps (launch, model load, engine "
            "start, server bench, rollout, actor, weight update, save)",
            "resume": "one more step, resumed from the recover checkpoint",
            "eval": f"the eval of the saved checkpoint on {self.args.eval_samples} "
            "samples",
        }[name]
        print(f"smoke: {what} ...", flush=True)

    def preflight(self) -> tuple[Run, list[Any]]:
        """The preflight of the launch as planned, and its blocking items."""
        run = Run(
            self.config, "train", Options(max_rows=PREFLIGHT_ROWS),
            inputs_by=self.entries.inputs_by,
        )  # fmt: skip
        return run, blocking(run_checks(run))

    def bench_spec(self) -> dict[str, int]:
        """The server bench at the real config's turn size and concurrency."""
        run = self.run_
        memory_turn = turn_budgets_of(run)[0][0]
        turns = planned_turns(run)
        shape = run.model[0]
        if run.gpu_run and shape is not None:
            held = server_memory(run, shape, run.gpu_memory_bytes[0]).turns_held
            turns = min(turns, max(1, held))
        if self.args.bench_turns:
            turns = min(turns, self.args.bench_turns)
        return {
            "turns": turns,
            "prompt_tokens": memory_turn.prompt,
            "new_tokens": memory_turn.new,
        }

    def child(self, name: str) -> Child:
        """One child: the launch's arguments, then the smoke's."""
        env = {BENCH_ENV: ""}
        if name == "eval":
            argv = self.eval_argv()
        else:
            steps = plan.STEPS + (name == "resume")
            argv = plan.merged(
                self.argv,
                plan.train_overrides(self.config, self.args.groups, steps),
                self.entries.extra_overrides,
            )
        if name == "train":
            env[BENCH_ENV] = json.dumps(self.bench_spec())
        cmd = [*self.entries.child, "--child", name, *argv]
        return Child(name, cmd, self.dir / f"{name}.log", FIRST_PHASE[name], env)

    def eval_argv(self) -> list[str]:
        path = self.args.eval_config or self.entries.eval_config
        with plan.no_config_copy():
            eval_config = self.entries.eval_loader(["--config", path])
        n = self.args.eval_samples
        return plan.merged(
            launch.eval_argv(self.config, path, eval_config, self.dir, n),
            self.entries.eval_overrides(self.config),
            self.entries.eval_data(eval_config, self.dir / "eval_data", n),
        )

    # ------------------------------------------------------------ the report
    def finish(self, failure: dict[str, str] | None, peaks: PeakMemory) -> None:
        """Print the table, the rates and the projection; write smoke.json."""
        events = read_events(self.events)
        run = self.run_
        gpus = run.layout.actor_gpus if run is not None else 1
        steps = Path(self.dir).parent / "steps.jsonl"
        self.context["at"] = self.started
        rates = report.rates_of(
            events, steps, gpus, self.context, update_passes(self.config)
        )
        warnings = [w for w in [report.rows_warning(steps, gpus)] if w]
        for warning in warnings:
            logger.warning(warning)
        rows = report.phase_rows(events)
        memory = self.memory(peaks) if peaks.available else []
        out = self.dir / "smoke.json"
        data = {
            "smoke": {
                "argv": self.argv, "trial": plan.smoke_trial(self.config),
                "dir": str(self.dir), "started": self.started,
                "model": self.model_found,
            },
            "phases": rows, "failure": failure, "servers": report.servers_of(events),
            "rates": rates, "warnings": warnings,
            "memory": [m.__dict__ for m in memory],
        }  # fmt: skip
        report.write_json(out, data)
        print("\n" + report.table(rows, rates, memory, failure))
        data["projection"] = self.projection(out)
        report.write_json(out, data)
        if data["projection"]:
            print("\nprojection of the full run, from these rates:")
            print(data["projection"]["text"])
        verdict = f"FAILED in {failure['phase']}" if failure else "every phase passed"
        print(f"\nsmoke: {verdict}; {out}", flush=True)

    def memory(self, peaks: PeakMemory) -> list[report.Memory]:
        """Each role's peak beside the preflight's estimate for it."""
        run = self.run_
        shape = run.model[0] if run is not None else None
        estimates: dict[str, dict[str, int]] = {}
        if shape is not None and run.gpu_run:
            dp = max(1, run.layout.actor_gpus)
            est = actor_memory(shape, self.config, dp, run.actor_offloads)
            estimates["actor"] = {
                "steady": est.steady,
                "load peak": est.load_peak,
            }
            pool = server_memory(run, shape, run.gpu_memory_bytes[0]).pool
            estimates["rollout"] = {"pool": pool}
        roles = sorted(set(peaks.peaks) | set(estimates))
        return [
            report.Memory(r, peaks.peaks.get(r), estimates.get(r, {})) for r in roles
        ]

    def projection(self, path: Path) -> dict[str, Any] | None:
        """The preflight's projection of the full run, fed with this file."""
        if self.run_ is None:
            return None
        try:
            measured = read_measured(path)
        except MeasuredFileError as exc:  # nothing measured (an early failure)
            logger.info(f"no projection: {exc}")
            return None
        run = Run(
            self.config, "train", Options(measured=measured),
            inputs_by=self.entries.inputs_by,
        )  # fmt: skip
        check_train_file(run, "train")  # its rows and longest context, written now
        found = projection(run)
        if found is None:
            return None
        return {
            "step_s": found.step.seconds,
            "steps": found.steps,
            "gpu_hours": found.gpu_hours,
            "unit": found.unit,
            "text": f"{found.step.describe()}\n{found.describe()}",
        }
