"""The whole run's cost: the step estimate (``step``) times the run's steps, in
GPU-hours, and what each opt-in speed-up would save.

The speed-ups act on the actor only: ``actor.prox_logp_method=loglinear`` drops
the proximal recompute (one log-probability pass); ``memagent.skip_tied_groups``
keeps tied groups out of every actor pass, a share of the work that is known
only once the run reports ``tied_groups`` (``steps.jsonl``), so it is shown at
several tie rates. Either saves time only where the actor is on the step's
critical path (overlapped with a longer rollout, it saves nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memagent_workflow.preflight.rates import sources
from memagent_workflow.preflight.step import StepEstimate, step_estimate
from memagent_workflow.preflight.tree_ratio import (
    SECTION_FIRST,
    actor_share,
    run_order,
    token_share,
)

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

TIE_RATES = (0.1, 0.3, 0.5)  # shares of tied groups shown for skip_tied_groups
LOGLINEAR = "actor.prox_logp_method=loglinear"
SKIP_TIED = "memagent.skip_tied_groups=true"


@dataclass(frozen=True)
class Saving:
    """Seconds per step an override saves (one per tie rate for skipping)."""

    override: str
    step_s: tuple[float, ...]
    at: str = ""  # what the several values are at


@dataclass(frozen=True)
class Projection:
    """The run's steps at the estimated step time, on the layout's GPUs."""

    step: StepEstimate
    steps: int | None
    steps_how: str
    gpus: int
    unit: str  # "GPU-hours", or "process-hours" for a CPU run
    savings: tuple[Saving, ...]
    rates: str = ""  # where each rate came from (``rates.sources``)
    # the run's estimate another way (tree training on or off): (what, step s)
    others: tuple[tuple[str, float], ...] = ()

    @property
    def hours(self) -> float | None:
        return None if self.steps is None else self.steps * self.step.seconds / 3600

    @property
    def gpu_hours(self) -> float | None:
        return None if self.hours is None else self.hours * self.gpus

    def gpu_hours_of(self, step_s: float) -> float | None:
        """GPU-hours of the run's steps at ``step_s`` seconds each."""
        if self.steps is None:
            return None
        return self.steps * step_s * self.gpus / 3600

    def describe(self) -> str:
        """The run's line and one per speed-up (the step's own: ``step``)."""
        if self.steps is None:
            lines = [f"run estimate: steps unknown ({self.steps_how})"]
        else:
            where = "GPU(s)" if self.unit == "GPU-hours" else "processes (CPU run)"
            lines = [
                f"run estimate: {self.steps} steps ({self.steps_how}) x "
                f"~{self.step.seconds:,.0f} s = {_num(self.hours)} h on {self.gpus} "
                f"{where} = {_num(self.gpu_hours)} {self.unit}"
            ]
        for what, step_s in self.others:
            lines.append(
                f"  {what}: ~{step_s:,.0f} s per step = "
                f"{_num(self.gpu_hours_of(step_s))} {self.unit}"
            )
        for s in self.savings:
            values = "/".join(f"{v:,.0f}" for v in s.step_s)
            line = f"  {s.override} saves {values} s per step"
            if s.at:
                line += f" at {s.at}"
            if self.steps is not None:
                hours = "/".join(_num(self.gpu_hours_of(v)) for v in s.step_s)
                line += f" ({hours} {self.unit})"
            lines.append(line)
        if self.rates:
            lines.append(self.rates)
        return "\n".join(lines)


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


def run_steps(run: Run) -> tuple[int | None, str]:
    """The steps the run makes: ``total_train_steps``, capped by the epochs over
    the training rows when the whole file was read (no ``--max-rows``)."""
    config = run.config
    limit = config.total_train_steps
    if run.train_rows and run.options.max_rows is None:
        per_epoch = run.train_rows // config.train_dataset.batch_size
        schedule = config.total_train_epochs * per_epoch
        if limit is None or schedule < limit:
            return schedule, f"{config.total_train_epochs} epochs of {per_epoch}"
    if limit is None:
        return None, "no total_train_steps and no rows read"
    return limit, "total_train_steps"


def savings(run: Run, step: StepEstimate) -> tuple[Saving, ...]:
    """What each opt-in speed-up the config leaves off would save per step."""
    found = []
    if run.config.actor.should_compute_prox_logp():
        fewer = step.with_actor(logp_passes=step.logp_passes - 1)
        found.append(Saving(LOGLINEAR, (step.seconds - fewer.seconds,)))
    if not run.config.memagent.skip_tied_groups:
        saved = tuple(
            step.seconds - step.with_actor(share=1 - r).seconds for r in TIE_RATES
        )
        at = "/".join(f"{r:.0%}" for r in TIE_RATES) + " tied groups"
        found.append(Saving(SKIP_TIED, saved, at))
    return tuple(found)


def projection(run: Run) -> Projection | None:
    """The run's projection, or None where the step cannot be estimated."""
    step = step_estimate(run)
    if step is None:
        return None
    steps, how = run_steps(run)
    unit = "GPU-hours" if run.gpu_run else "process-hours"
    return Projection(
        step, steps, how, max(1, run.layout.gpus), unit, savings(run, step),
        sources(run.rates), tree_alternatives(run, step),
    )  # fmt: skip


def tree_alternatives(run: Run, step: StepEstimate) -> tuple[tuple[str, float], ...]:
    """The step the other way: packed where the run trains on tries, with tree
    training (the section first, and the run's order) where it does not."""
    share = actor_share(run)[0]
    if getattr(run.config.actor, "enable_tree_training", False):
        return (("without tree training (packed)", step.with_actor(1 / share).seconds),)
    found = []
    orders = ["section_first"] + ["memory_first"] * (run_order(run) == "memory_first")
    for order in orders:
        tree = token_share(run, order)
        if tree is not None:
            what = (
                SECTION_FIRST
                if order == "section_first"
                else ("actor.enable_tree_training=true actor.pad_to_maximum=true")
            )
            found.append((f"with {what}", step.with_actor(tree).seconds))
    return tuple(found)
