"""AReaL's local scheduler, safe for two runs side by side on one machine.

AReaL 1.0.4 draws worker ports from Python's global ``random``, which its
trainer seeds with ``config.seed``: two runs with the same seed started at the
same moment draw the same ports, and the worker that loses the race to bind
dies ("Port N is in use by another program") while the scheduler waits for its
``/health`` without a deadline (``LocalScheduler._configure_worker``), or gets
its answer from the other run's worker. `MemAgentLocalScheduler` changes two
things and nothing else:

- ports are drawn from a random state seeded by the OS, inside
  :func:`private_random`, which restores the seeded state afterwards: training's
  randomness (seeded by ``config.seed``) no longer depends on port choices; and
  they are claimed for this run on the machine (`port_claims`): a port another
  run allocated and has not bound yet (the actor's ``MASTER_PORT`` is bound
  seconds after start-up) is not handed out again;
- a worker counts as started once it has registered its own address (AReaL's
  rpc server does so right after binding); a forked worker (the eval-rollout
  worker) whose port answers for another run is forked again on a new port; a
  worker that dies first stops
  the run at once with a message naming the port (where AReaL's would wait
  forever); a worker that neither binds nor dies stops the run after
  ``startup_timeout`` (at least ``MIN_START_TIMEOUT_S``). The same bound holds
  for a forked worker's ``/health``, which AReaL waits for 60 s only: on a loaded
  machine (load above ~10 on 2 cores) importing torch and AReaL takes longer.
"""

from __future__ import annotations

import contextlib
import random
import re
import time
from collections.abc import Iterator

from areal.infra import LocalScheduler
from areal.infra.scheduler.exceptions import PortAllocationError, WorkerCreationError
from areal.utils import logging, name_resolve, names

from memagent_workflow.infra import port_claims

logger = logging.getLogger("MemAgentScheduler")

#: The longest a worker may take to bind its port (importing torch and AReaL on
#: a loaded machine), unless the scheduler's ``startup_timeout`` is longer.
MIN_START_TIMEOUT_S = 300.0
#: How often a fork is tried when its port turns out to be another run's.
FORK_ATTEMPTS = 3
#: How often ports are drawn again when another run claimed one of them first.
CLAIM_ATTEMPTS = 5
_PORT_IN_USE = re.compile(r"port (\d+) is in use|address already in use", re.I)


@contextlib.contextmanager
def private_random() -> Iterator[None]:
    """Python's global ``random``, seeded by the OS inside, restored on exit.

    For choices that must differ between runs (ports) in code that draws from
    the global state, without consuming or changing the seeded stream.
    """
    state = random.getstate()
    random.seed()  # from os.urandom
    try:
        yield
    finally:
        random.setstate(state)


class WorkerPortError(WorkerCreationError):
    """A worker could not listen on its port (another program holds it)."""


class MemAgentLocalScheduler(LocalScheduler):
    """`LocalScheduler` with ports unique per run and a bounded worker start."""

    def _allocate_ports(self, count: int) -> list[int]:
        for _ in range(CLAIM_ATTEMPTS):
            # Ports other runs allocated and may not have bound yet: excluded.
            others = port_claims.claimed_ports() - self._allocated_ports
            self._allocated_ports |= others
            try:
                with private_random():
                    ports = super()._allocate_ports(count)
            finally:
                self._allocated_ports -= others
            if port_claims.claim(ports):
                return ports
            self._release_ports(ports)  # another run claimed one first: again
        raise PortAllocationError(
            f"could not claim {count} free ports in {CLAIM_ATTEMPTS} attempts "
            f"(claims of other runs: {port_claims.claims_dir()})"
        )

    async def _fork_single_worker(
        self, session, role: str, idx: int, target_wi, target_role: str, command=None
    ):
        """AReaL's fork, checked: the ``/health`` it waited for must come from the
        forked worker itself, not from another run's worker on the same port.

        The forked worker's port comes from its parent's ``/alloc_ports``, drawn
        in the parent worker from ``random`` seeded by ``config.seed``: the same
        in two runs with one seed. On a collision the fork is undone and
        retried; the parent draws a new port.
        """
        for attempt in range(1, FORK_ATTEMPTS + 1):
            info = await super()._fork_single_worker(
                session, role, idx, target_wi, target_role, command
            )
            if self._registered(info):
                return info
            port = info.worker.worker_ports[0]
            logger.warning(
                f"forked worker {info.worker.id}: another program answers on port "
                f"{port} (attempt {attempt}/{FORK_ATTEMPTS}); forking again"
            )
            await self._kill_forked_worker(session, role, idx, target_wi)
            self._release_ports([int(p) for p in info.worker.worker_ports[1:]])
        raise WorkerPortError(
            role,
            f"forked worker {role}/{idx} found its port in use by another "
            f"program {FORK_ATTEMPTS} times (last: {port})",
        )

    async def _wait_for_fork_ready(
        self, session, host: str, port: int, timeout: float = 60
    ) -> bool:
        """AReaL's wait for a forked worker's ``/health``, given the start-up
        bound of a spawned worker instead of AReaL's fixed 60 s."""
        bound = max(timeout, self.startup_timeout, MIN_START_TIMEOUT_S)
        return await LocalScheduler._wait_for_fork_ready(
            session, host, port, timeout=bound
        )

    def _registered(self, worker_info) -> bool:
        """Whether the worker registered itself on its own port (AReaL's rpc
        server registers right after it binds, before it answers ``/health``)."""
        worker = worker_info.worker
        role, index = worker.id.rsplit("/", 1)
        key = names.worker_discovery(
            self.experiment_name, self.trial_name, role, int(index)
        )
        try:
            addr = name_resolve.get(key)
        except name_resolve.NameEntryNotFoundError:
            return False
        return addr.rsplit(":", 1)[-1] == str(worker.worker_ports[0])

    def _configure_worker(self, worker_info, worker_rank: int) -> None:
        self._wait_until_registered(worker_info)
        super()._configure_worker(worker_info, worker_rank)

    def _wait_until_registered(self, worker_info) -> None:
        """Return once the worker has bound its port; raise if it dies first."""
        worker = worker_info.worker
        port = worker.worker_ports[0]
        role = worker.id.rsplit("/", 1)[0]
        process = worker_info.process
        # A forked worker (no process here) has answered /health already.
        timeout = max(self.startup_timeout, MIN_START_TIMEOUT_S) if process else 10.0
        deadline = time.monotonic() + timeout
        while True:
            if self._registered(worker_info):
                return
            if process is not None and process.poll() is not None:
                raise self._start_failure(worker_info, port)
            if time.monotonic() > deadline:
                raise WorkerCreationError(
                    role,
                    f"worker {worker.id} did not listen on port {port} within "
                    f"{timeout:.0f} s",
                    f"its log: {worker_info.log_file}",
                )
            time.sleep(0.2)

    def _start_failure(self, worker_info, port: str) -> WorkerCreationError:
        worker = worker_info.worker
        role = worker.id.rsplit("/", 1)[0]
        tail = self._read_log_tail(worker_info.log_file)
        match = _PORT_IN_USE.search(tail)
        if match and match.group(1) in (None, str(port)):
            return WorkerPortError(
                role,
                f"worker {worker.id} could not listen on port {port}: another "
                "program on this machine uses it (another run started at the "
                "same moment?). Start the run again: it draws new ports.",
                tail,
            )
        return WorkerCreationError(
            role,
            f"worker {worker.id} (port {port}) exited before it started",
            tail,
        )
