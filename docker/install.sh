#!/usr/bin/env bash
# The container's steps on AReaL's image (docker/Dockerfile), and CI's check of them
# on its own environment (.ci/run): the project in ROOT, on the python3 that AReaL
# starts its workers with, checked. Nothing is installed: AReaL's image holds every
# package the project imports; PYTHONPATH=ROOT makes the project importable.
set -euo pipefail
root="$(cd "${1:?usage: docker/install.sh PROJECT_ROOT}" && pwd)"
cd "$root"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
echo "install.sh: the project at $root on $(command -v python3)"
python3 - <<'PY'
"""Python, AReaL and every package pyproject.toml names, as the image holds them."""
import importlib.metadata as md
import re
import sys
import tomllib

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
low, high = re.fullmatch(r">=(3\.\d+),<(3\.\d+)", project["requires-python"]).groups()
here = "%d.%d" % sys.version_info[:2]
def minor(v): return int(v.split(".")[1])
if not minor(low) <= sys.version_info[1] < minor(high):
    sys.exit(f"install.sh: Python {here}; the project needs {project['requires-python']}")
missing = []
for req in project["dependencies"]:
    name = re.match(r"[A-Za-z0-9_.-]+", req).group(0)
    try:
        version = md.version(name)
    except md.PackageNotFoundError:
        missing.append(name)
        continue
    pin = re.search(r"==(\S+)", req)
    if pin and version != pin.group(1):
        sys.exit(f"install.sh: {name} {version}; the project pins {pin.group(1)}")
if missing:
    sys.exit(f"install.sh: not in this environment: {', '.join(missing)}")
print(f"install.sh: Python {here}, areal {md.version('areal')}, every dependency present")
PY
# The entry scripts import, and config.yaml loads as examples/train.py loads it.
python3 -c "
import examples.eval, examples.preflight, examples.serve, examples.smoke, examples.train
from examples.train import load_config
cfg = load_config(['--config', 'config.yaml'])
print('install.sh: config.yaml loads:', cfg.experiment_name, cfg.actor.path)
"
python3 examples/preflight.py --help >/dev/null
echo "install.sh: done"
