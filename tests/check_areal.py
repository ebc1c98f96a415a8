"""Run the suite's AReaL-dependent tiers against another AReaL, in an environment
of its own, and print what passed.

    uv run python tests/check_areal.py --areal ../AReaL          # a source tree
    uv run python tests/check_areal.py --areal 1.0.4             # a registry release

The environment (``outputs/areal-check/<name>/.venv``) holds the packages of
``uv.lock`` exactly, with the AReaL given in place of the locked one (installed
without its dependencies, as AReaL's install guide installs a clone into its
image). The tiers run from this checkout with that environment's Python:

* ``unit``, ``integration``: ``tests/unit`` and ``tests/integration``;
* ``launch``: the CPU main job in one-process SPMD mode (``test_train_cpu.py``),
  the single-controller disk and xccl launches and Ray (``test_train_launch.py``)
  and kill-and-resume in both modes (``test_recover.py``);
* ``main``: the README's main job itself (``python -m standin.train --config
  config_cpu.yaml``, 40 steps, into the environment's folder), not run by default.

Each tier's JUnit report lands beside the environment; the table counts its
tests. What differs between AReaL releases, and the tables for the v2.0.0 tag
and AReaL's main after it: docs/areal-versions.md.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIERS = {
    "unit": ["tests/unit"],
    "integration": ["tests/integration"],
    "launch": [
        "tests/e2e/test_train_cpu.py",
        "tests/e2e/test_train_launch.py",
        "tests/e2e/test_recover.py",
    ],
}
RELEASE = r"\d+(\.\d+)*(\.?(post|rc|a|b)\d+)?"  # e.g. 1.0.4, 0.5.10.post1
MAIN_JOB = ["-m", "standin.train", "--config", "config_cpu.yaml"]


def run(cmd: list[str], **kwargs) -> None:
    print("$", " ".join(map(str, cmd)), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def build_env(areal: str, env: Path) -> Path:
    """``env`` with uv.lock's packages and ``areal`` (a folder or a release)."""
    python = env / "bin" / "python"
    spec = str(Path(areal).resolve()) if Path(areal).is_dir() else f"areal=={areal}"
    locked = subprocess.run(
        ["uv", "export", "--locked", "--no-hashes", "--no-emit-project",
         "--all-groups", "--format", "requirements-txt"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    requirements = env.parent / "requirements.txt"
    env.parent.mkdir(parents=True, exist_ok=True)
    requirements.write_text(
        "".join(line + "\n" for line in locked.splitlines() if not line.startswith("areal=="))
    )  # fmt: skip
    install = ["uv", "pip", "install", "--python", str(python), "--no-deps",
               "--compile-bytecode"]  # fmt: skip
    run(["uv", "venv", "--allow-existing", "--python", "3.11", str(env)])
    run([*install, "-r", str(requirements)])
    run([*install, "--reinstall-package", "areal", spec])
    run([*install, "-e", str(ROOT)])  # this project, as `uv sync` installs it
    return python


def env_of(python: Path) -> dict[str, str]:
    """The environment ``uv run`` gives a command: the venv first on PATH."""
    venv = python.parent.parent
    path = f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "VIRTUAL_ENV": str(venv), "PATH": path}


def areal_version(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('areal'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def counts(report: Path) -> dict[str, int]:
    """Tests passed, failed (errors included) and skipped in a JUnit report."""
    found = {"passed": 0, "failed": 0, "skipped": 0}
    if not report.exists():
        return found
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            found["failed"] += 1
        elif "skipped" in kinds:
            found["skipped"] += 1
        else:
            found["passed"] += 1
    return found


def run_tier(python: Path, name: str, out: Path, workers: str) -> dict:
    report = out / f"{name}.xml"
    report.unlink(missing_ok=True)
    start = time.monotonic()
    if name == "main":
        rc = subprocess.run(
            [str(python), *MAIN_JOB, f"cluster.fileroot={out / 'main'}",
             f"cluster.name_resolve.nfs_record_root={out / 'main' / 'name_resolve'}"],
            cwd=ROOT, env=env_of(python),
        ).returncode  # fmt: skip
        found = {"passed": int(rc == 0), "failed": int(rc != 0), "skipped": 0}
    else:
        cmd = [str(python), "-m", "pytest", "-q", "-n", workers, "-p",
               "no:cacheprovider", "-rs", f"--junitxml={report}", *TIERS[name]]  # fmt: skip
        rc = subprocess.run(cmd, cwd=ROOT, env=env_of(python)).returncode
        found = counts(report)
        if rc != 0 and not found["failed"]:  # collection or start-up error
            found["failed"] = 1
    return {"tier": name, **found, "minutes": (time.monotonic() - start) / 60}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--areal", required=True, help="an AReaL source folder or release")
    ap.add_argument("--name", help="the environment's name (default: from --areal)")
    ap.add_argument("--tiers", default="unit,integration,launch",
                    help=f"comma-separated, of {', '.join([*TIERS, 'main'])}")  # fmt: skip
    ap.add_argument("-n", "--workers", default="auto", help="pytest-xdist workers")
    args = ap.parse_args(argv)
    tiers = args.tiers.split(",")
    unknown = set(tiers) - {*TIERS, "main"}
    if unknown:
        ap.error(f"--tiers: unknown {sorted(unknown)}")
    if not Path(args.areal).is_dir() and not re.fullmatch(RELEASE, args.areal):
        ap.error(f"--areal {args.areal}: neither a folder nor a release number")
    name = args.name or re.sub(r"[^\w.-]", "_", Path(args.areal).name or args.areal)
    out = ROOT / "outputs" / "areal-check" / name
    python = build_env(args.areal, out / ".venv")
    version = areal_version(python)
    print(f"AReaL {version} from {args.areal} in {out / '.venv'}", flush=True)
    rows = [run_tier(python, tier, out, args.workers) for tier in tiers]
    print(f"\n| tier | passed | failed | skipped | minutes |  (AReaL {version})")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['tier']} | {r['passed']} | {r['failed']} | {r['skipped']} "
              f"| {r['minutes']:.1f} |")  # fmt: skip
    print(f"Reports: {out}/<tier>.xml; skipped tests and why: above (-rs).")
    return int(any(r["failed"] for r in rows))


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main())
