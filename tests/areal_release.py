"""What the AReaL under test can do, for the few tests whose subject exists in
some AReaL releases only (docs/areal-versions.md)."""

from importlib.util import find_spec

import areal
import pytest

# 1.0.4 and the v2.0.0 tag schedule Ray workers in placement groups, which runs on
# a CPU-only machine. AReaL's main after the tag rewrote RayScheduler over HTTP:
# it starts Ray itself and refuses a cluster without GPUs.
CPU_RAY = find_spec("areal.infra.utils.ray_placement_group") is not None

NO_CPU_RAY = pytest.mark.skipif(
    not CPU_RAY,
    reason=f"this AReaL ({areal.__version__}, RayScheduler over HTTP) refuses "
    "CPU-only clusters ('RayScheduler does not support CPU-only clusters'): the "
    "CPU Ray launch is checked on AReaL 1.0.4 and the v2.0.0 tag",
)
