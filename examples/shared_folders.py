"""Create the shared folders a config names, before AReaL's SPMD launcher runs.

``python3 -m areal.infra.launcher.local`` refuses to start unless
``cluster.fileroot`` and ``cluster.name_resolve.nfs_record_root`` exist, and it
checks them before any script of this project runs. This reads the config as
the launcher does (same arguments, a leading script path allowed) and creates
both, relative paths taken from the current directory:

    python3 examples/shared_folders.py --config config.yaml
    python3 -m areal.infra.launcher.local examples/train.py --config config.yaml \\
        allocation_mode=sglang:d4p1t1+fsdp:d4p1t1

(``examples/train.py`` and ``examples/eval.py`` create them themselves when
they are the command, as under ``scheduler.type=local|ray``.)
"""

from __future__ import annotations

import os
import sys

from areal.api.cli_args import (
    ClusterSpecConfig,
    NameResolveConfig,
    parse_cli_args,
    to_structured_cfg,
)

from memagent_workflow.infra.paths import make_shared_folders


def main(argv: list[str]) -> list[str]:
    """Create the folders; returns the ones made (absolute paths)."""
    config, _ = parse_cli_args(argv)
    cluster = to_structured_cfg(config.cluster, ClusterSpecConfig)
    cluster.name_resolve = to_structured_cfg(cluster.name_resolve, NameResolveConfig)
    cluster.fileroot = os.path.abspath(cluster.fileroot)
    name_resolve = cluster.name_resolve
    name_resolve.nfs_record_root = os.path.abspath(name_resolve.nfs_record_root)
    made = make_shared_folders(cluster)
    print(f"cluster.fileroot: {cluster.fileroot}")
    if name_resolve.type == "nfs":
        print(f"cluster.name_resolve.nfs_record_root: {name_resolve.nfs_record_root}")
    print(f"created: {made}" if made else "both exist already")
    return made


if __name__ == "__main__":
    main(sys.argv[1:])
