"""Which inference servers still answer, for the message of a stopped run."""

from __future__ import annotations

import socket


def unreachable(addresses: list[str], timeout: float = 2.0) -> list[str]:
    """The ``host:port`` addresses that refuse or time out a TCP connection.

    A server gone for good can be noticed by any call the trainer makes (a
    rollout, or the ``/pause_generation`` of a weight update); asking the
    servers themselves gives one diagnosis whichever call failed.
    """
    down = []
    for addr in addresses:
        host, _, port = addr.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout):
                pass
        except (OSError, ValueError):
            down.append(addr)
    return down


def servers_down_message(addresses: list[str]) -> str:
    """A sentence naming the servers that do not answer ("" if all do)."""
    down = unreachable(addresses)
    if not down:
        return ""
    return (
        f"The inference servers are down or unreachable: {len(down)} of "
        f"{len(addresses)} refuse connections. Servers: {', '.join(down)}. "
    )
