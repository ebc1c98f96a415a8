"""What the checks ask this machine: its GPUs and host, its installed packages,
and a Ray cluster to join. Objects, so that tests can fake a machine."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GPU:
    index: int
    name: str
    capability: tuple[int, int]
    total_bytes: int
    free_bytes: int


@dataclass(frozen=True)
class Host:
    cpus: int
    memory_bytes: int


class TorchHardware:
    """This machine, as torch and psutil see it."""

    def gpus(self) -> list[GPU]:
        import torch

        if not torch.cuda.is_available():
            return []
        out = []
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            free, total = torch.cuda.mem_get_info(i)
            out.append(GPU(i, props.name, (props.major, props.minor), total, free))
        return out

    def host(self) -> Host:
        import os

        import psutil

        return Host(os.cpu_count() or 1, psutil.virtual_memory().total)


HardwareProbe = TorchHardware  # anything with gpus() and host()


class PackageProbe:
    """What is installed in this interpreter's environment."""

    def version(self, dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    def providers(self, package: str) -> list[str]:
        """Distributions that install the top-level ``package``."""
        return importlib.metadata.packages_distributions().get(package, [])

    def import_names(self, module: str, names: tuple[str, ...]) -> str | None:
        """None when ``from module import names`` works, else why not."""
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            return f"not installed ({exc})"
        except Exception as exc:  # a broken extension's error
            return f"import {module}: {type(exc).__name__}: {exc}"
        missing = [n for n in names if not hasattr(mod, n)]
        if missing:
            where = getattr(mod, "__file__", None) or list(getattr(mod, "__path__", []))
            return f"{module} ({where}) has no {', '.join(missing)}"
        return None

    def torch_cuda(self) -> str | None:
        import torch

        return torch.version.cuda

    def nccl(self) -> str | None:
        import torch

        if not torch.distributed.is_nccl_available():
            return None
        try:
            return ".".join(map(str, torch.cuda.nccl.version()))
        except Exception:
            return None

    def path_python_prefix(self) -> tuple[str | None, str | None]:
        """``python3`` on PATH and its ``sys.prefix``."""
        exe = shutil.which("python3")
        if exe is None:
            return None, None
        try:
            out = subprocess.run(
                [exe, "-c", "import sys; print(sys.prefix)"],
                capture_output=True,
                text=True,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return exe, None
        return exe, out.stdout.strip() or None

    def own_prefix(self) -> str:
        return sys.prefix


@dataclass(frozen=True)
class RayNode:
    name: str
    cpus: float
    gpus: float
    memory_bytes: float


@dataclass
class RayState:
    """The cluster as found: its alive nodes, or why none was reached."""

    nodes: list[RayNode] = field(default_factory=list)
    error: str | None = None


class RayProbe:
    """Joins a running cluster (never starts one), reads its nodes, and leaves."""

    def probe(self) -> RayState:
        import ray

        address = os.environ.get("RAY_ADDRESS", "auto")
        try:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        except Exception as exc:  # ConnectionError when there is none
            from ray.exceptions import AuthenticationError

            from memagent_workflow.infra.ray_cluster import TOKEN_ADVICE

            advice = (
                f" ({TOKEN_ADVICE})" if isinstance(exc, AuthenticationError) else ""
            )
            return RayState(error=f"{address}: {type(exc).__name__}: {exc}{advice}")
        try:
            nodes = [
                RayNode(  # host:raylet port (several nodes may share a host)
                    f"{n.get('NodeManagerAddress', '?')}:{n.get('NodeManagerPort', '?')}",
                    n["Resources"].get("CPU", 0),
                    n["Resources"].get("GPU", 0),
                    n["Resources"].get("memory", 0),
                )
                for n in ray.nodes()
                if n.get("Alive")
            ]
        finally:
            ray.shutdown()
        return RayState(nodes=nodes)
