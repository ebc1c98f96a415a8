"""The quiet terminal: step lines, warnings and errors shown; everything kept in files."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

from memagent_workflow.infra.terminal import (
    CONSOLE_LOG,
    REDRAW_PIPED_S,
    Screen,
    progress_bar,
)

ROOT = Path(__file__).resolve().parents[2]
AREAL = "\x1b[37m\x1b[1;38;2;180;140;80m(AReaL)\x1b[0m \x1b[37m20261124-05:03:20.424"


def shown(lines: list[str]) -> list[str]:
    screen = Screen()
    return [s for s in map(screen.show, lines) if s is not None]


def test_records_below_warning_are_hidden_with_their_tables():
    lines = [
        f"{AREAL} StatsLogger INFO: Stats (1/1):",
        f"{AREAL} StatsLogger INFO: ",
        "╒══════════╤═══════╕",
        "│ timeperf │ 1e-01 │",
        "╘══════════╧═══════╛",
        f"{AREAL} [FSDPEngine Rank 0] INFO: ready",
        f"{AREAL} Recover WARNING: Resume info not found",
        f"{AREAL} LocalScheduler ERROR: Failed to fork worker",
        "Details: Readiness timeout",
        "  more detail",
    ]
    assert shown(lines) == lines[6:]


def test_the_projects_step_lines_show_their_message_only():
    assert shown([f"{AREAL} MemAgentTrainer INFO: step 3: reward 0.500\x1b[0m"]) == [
        "step 3: reward 0.500"
    ]
    assert shown([f"{AREAL} MemAgentActor INFO: recover checkpoint saved"]) == []


def test_the_model_build_says_what_it_does():
    """Start-up: building, waiting for another process's build, the warm start's
    summary, a cached model reused."""
    lines = [
        f"{AREAL} BuildOnce INFO: Another process is building the stand-in model "
        "in /m; waiting for it",
        f"{AREAL} StandinBuild INFO: warm start: 2,000 steps in 10 min 58 s",
        f"{AREAL} StandinBuild INFO: using the cached stand-in model at /m",
        f"{AREAL} NeedleModel INFO: warm start step 500: loss 0.5",
    ]
    assert shown(lines) == [
        "Another process is building the stand-in model in /m; waiting for it",
        "warm start: 2,000 steps in 10 min 58 s",
        "using the cached stand-in model at /m",
    ]


def test_a_bar_is_drawn_into_a_pipe_too_less_often():
    pipe = io.StringIO()  # not a terminal
    bar = progress_bar(10, "warm start", unit="step", file=pipe)
    assert not bar.disable and bar.mininterval == REDRAW_PIPED_S
    bar.update(10)
    bar.close()
    assert "warm start: 100%" in pipe.getvalue()


def test_library_chatter_is_hidden_and_python_warnings_and_tracebacks_are_not():
    lines = [
        "Writing model shards: 100%|██████████| 1/1 [00:00<00:00, 17.46it/s]",
        "[Gloo] Rank 0 is connected to 0 peer ranks.",
        "swanlab: SwanLab run disabled",
        "/x/grad.py:37: UserWarning: Apex is not installed.",
        "  warnings.warn(",
        "Traceback (most recent call last):",
        '  File "examples/train.py", line 1, in <module>',
        "ValueError: bad",
        "2026-11-24 05:01:51,280 StandinServer INFO: server on http://x",
        "(RayRPCServer pid=123) 2026-11-24 05:01:51,280 Foo WARNING: careful",
    ]
    assert shown(lines) == lines[3:8] + lines[9:]


def test_a_run_shows_little_and_keeps_everything(tmp_path):
    """A process under quiet_terminal, with a child writing to the same stdout."""
    script = textwrap.dedent(f"""
        import subprocess, sys
        from areal.utils import logging
        from memagent_workflow.infra.terminal import quiet_terminal
        with quiet_terminal({str(tmp_path)!r}):
            logging.getLogger("StatsLogger").info("Stats (1/1):\\n│ a │ 1 │")
            logging.getLogger("MemAgentTrainer").info("step 1: reward 0.5")
            logging.getLogger("Recover").warning("careful")
            subprocess.run([sys.executable, "-c", "print('child chatter')"])
            print("[Gloo] Rank 0 is connected", flush=True)
        print("after")
    """)
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
        timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    terminal = [
        line for line in (out.stdout + out.stderr).splitlines()
        if "UserWarning" not in line and "warnings.warn" not in line
        and "TreeAttention" not in line  # printed by AReaL's imports, before
    ]  # fmt: skip
    assert terminal[:2] == ["step 1: reward 0.5", terminal[1]]
    assert "Recover WARNING: careful" in terminal[1]
    assert terminal[2:] == ["child chatter", "after"]
    console = (tmp_path / CONSOLE_LOG).read_text()
    for line in ("│ a │ 1 │", "step 1: reward 0.5", "child chatter", "[Gloo] Rank 0"):
        assert line in console
    main = (tmp_path / "main.log").read_text()  # AReaL's file logging
    assert "Stats (1/1):" in main and "step 1: reward 0.5" in main
