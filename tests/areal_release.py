"""The AReaL release under test, for the few tests whose subject exists in one
release only (docs/areal-versions.md)."""

import areal
import pytest
from packaging.version import Version

AREAL_2 = Version(areal.__version__) >= Version("2")

# AReaL 2.0.0's RayScheduler is a rewrite over HTTP that starts Ray itself and
# refuses a cluster without GPUs; 1.0.4's placement-group helpers are gone.
NO_CPU_RAY = pytest.mark.skipif(
    AREAL_2,
    reason=f"AReaL {areal.__version__}'s RayScheduler refuses CPU-only clusters "
    "('RayScheduler does not support CPU-only clusters'): the CPU Ray launch is "
    "checked on AReaL 1.0.4",
)
