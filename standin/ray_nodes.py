"""Several Ray nodes on this one machine: the multi-node path tried on CPU.

``python -m standin.ray_nodes --nodes 2`` starts a head node and ``N - 1``
worker nodes, each a real raylet (``ray start --block``) with its own CPUs and
memory, sized so that AReaL's placement groups (PACK) cannot put every worker
of the CPU job on one node. It prints each node as the job's logs name it
(``host:raylet-port``, node id) with its raylet's pid, stays in the foreground,
and stops its nodes on Ctrl-C or SIGTERM. A node whose raylet dies is
reported and the others keep running: killing a raylet by its pid is losing
a node (docs/multi-node.md). ``ray start`` records the head's address on this
machine, so ``ray.init()`` in the job joins this cluster.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

import psutil
from areal.utils.network import gethostip

from memagent_workflow.infra.children import die_with_parent, stop_children
from memagent_workflow.infra.node_watch import node_name

START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class NodeSpec:
    """One raylet's share of the machine, as Ray sees it."""

    cpus: int
    memory_gb: float
    object_store_mb: int = 256


def node_command(index: int, ip: str, port: int, spec: NodeSpec) -> list[str]:
    """``ray start`` for node ``index`` (0: the head) of a cluster on ``ip``."""
    role = (
        # The head's other fixed ports (Ray client server, agent) are made free
        # ones too: two clusters may run on one machine (the tests' do).
        [
            "--head",
            f"--port={port}",
            "--include-dashboard=false",
            f"--ray-client-server-port={free_port()}",
            "--dashboard-agent-listen-port=0",
        ]
        if index == 0
        else [
            f"--address={ip}:{port}",
            # One host: a second node must not take the head's fixed agent port
            # nor start a second log monitor over the same files.
            "--dashboard-agent-listen-port=0",
            "--include-log-monitor=false",
        ]
    )
    return [
        sys.executable,
        "-m",
        "ray.scripts.scripts",
        "start",
        *role,
        "--block",
        f"--node-ip-address={ip}",
        f"--num-cpus={spec.cpus}",
        "--num-gpus=0",
        f"--memory={int(spec.memory_gb * 2**30)}",
        f"--object-store-memory={spec.object_store_mb * 2**20}",
        # Workers on ports the OS picks: Ray's default range is one per machine.
        "--min-worker-port=0",
        "--max-worker-port=0",
        "--disable-usage-stats",
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def node_env() -> dict[str, str]:
    # Ray starts workers at niceness 15 (a worker importing torch behind the
    # run's own processes took minutes on 2 cores), and under `uv run` would
    # build a second environment for them (standin/__init__.py).
    return {
        **os.environ,
        "RAY_worker_niceness": "0",
        "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    }


def raylet_pid(proc: subprocess.Popen) -> int | None:
    """The pid of the raylet ``proc`` (a ``ray start --block``) started."""
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return None
    return next((c.pid for c in children if c.name() == "raylet"), None)


def wait_for_nodes(address: str, n: int, procs: list[subprocess.Popen]) -> list[dict]:
    """The ``n`` alive nodes of the cluster at ``address``, once all have joined."""
    import ray

    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise RuntimeError("a node exited while starting (its output is above)")
        try:
            if not ray.is_initialized():
                ray.init(address=address, logging_level="ERROR", log_to_driver=False)
            alive = [node for node in ray.nodes() if node["Alive"]]
            if len(alive) >= n:
                return alive
        except (ConnectionError, RuntimeError):
            pass
        time.sleep(1.0)
    raise TimeoutError(f"{n} Ray nodes did not join within {START_TIMEOUT_S:.0f} s")


def ensure_auth_token() -> str:
    """The token the nodes and the job authenticate with, made if missing.

    The CPU entries run Ray with ``RAY_AUTH_MODE=token`` (standin/__init__.py),
    and ``ray start`` refuses to start without a token where ``ray.init()``
    would make one. So the cluster's token is made here as Ray's own CLI makes
    it (``ray get-auth-token --generate``: ``~/.ray/auth_token``, kept if it,
    ``RAY_AUTH_TOKEN`` or ``RAY_AUTH_TOKEN_PATH`` already gives one). Returns
    what was done, for the terminal; the token itself is never printed.
    """
    if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
        return (
            f"Ray authentication: RAY_AUTH_MODE={os.environ.get('RAY_AUTH_MODE', '')}"
        )
    done = subprocess.run(
        [sys.executable, "-m", "ray.scripts.scripts", "get-auth-token", "--generate"],
        env=node_env(),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"ray get-auth-token --generate failed: {done.stderr.strip()}"
        )
    made = "Generating" in done.stderr
    return (
        "Ray authentication: token "
        + ("made now in ~/.ray/auth_token" if made else "found (kept)")
        + " (docs/ray-auth.md)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--cpus-per-node", type=int, default=1)
    parser.add_argument("--memory-gb-per-node", type=float, default=3.0)
    parser.add_argument("--port", type=int, default=6379, help="the head's GCS port")
    args = parser.parse_args(argv)
    if args.nodes < 1:
        parser.error("--nodes must be at least 1")
    ip, spec = gethostip(), NodeSpec(args.cpus_per_node, args.memory_gb_per_node)
    with socket.socket() as probe:
        if probe.connect_ex((ip, args.port)) == 0:
            parser.error(
                f"{ip}:{args.port} is taken (a Ray cluster already running? "
                "`ray stop` stops every Ray node on this machine): or pass --port"
            )
    print(ensure_auth_token(), flush=True)
    procs: list[subprocess.Popen] = []

    def stop(*_) -> None:  # SIGTERM: `ray start --block` stops its node
        stop_children(procs)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for index in range(args.nodes):
        cmd = node_command(index, ip, args.port, spec)
        procs.append(
            subprocess.Popen(
                cmd,
                env=node_env(),
                stdout=subprocess.DEVNULL,
                preexec_fn=die_with_parent,
            )
        )
        if index == 0:  # the others join the head once it listens
            wait_for_nodes(f"{ip}:{args.port}", 1, procs)
    nodes = wait_for_nodes(f"{ip}:{args.port}", args.nodes, procs)
    import ray

    ray.shutdown()  # a connected driver would replace our signal handlers
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    node_of = {_raylet_of(n): n for n in nodes}
    print(f"RAY_ADDRESS={ip}:{args.port} ({args.nodes} nodes)", flush=True)
    for index, proc in enumerate(procs):
        pid = raylet_pid(proc)
        node = node_of.get(pid)
        print(
            f"node {index}{' (head)' if index == 0 else ''}: "
            f"{node_name(node) if node else '?'}, {spec.cpus} CPU, "
            f"{spec.memory_gb:g} GiB, raylet pid {pid}",
            flush=True,
        )
    while True:
        for index, proc in enumerate(procs):
            if proc.returncode is None and proc.poll() is not None:
                print(f"node {index} stopped (exit {proc.returncode})", flush=True)
        if all(p.returncode is not None for p in procs):
            return 1
        time.sleep(1.0)


def _raylet_of(node: dict) -> int | None:
    """The pid of the raylet listening on ``node``'s node-manager port."""
    for conn in psutil.net_connections(kind="tcp"):
        if conn.laddr and conn.laddr.port == node["NodeManagerPort"] and conn.pid:
            if conn.status == psutil.CONN_LISTEN:
                return conn.pid
    return None


if __name__ == "__main__":
    sys.exit(main())
