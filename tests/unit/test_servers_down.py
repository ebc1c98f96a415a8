"""The stopped run's diagnosis: which inference servers refuse connections."""

from __future__ import annotations

import socket

from memagent_workflow.recovery.servers import servers_down_message, unreachable


def test_a_listening_server_is_up_and_a_closed_port_is_down():
    with socket.socket() as live, socket.socket() as dead:
        live.bind(("127.0.0.1", 0))
        live.listen()
        dead.bind(("127.0.0.1", 0))  # bound, never listening: refused
        up = f"127.0.0.1:{live.getsockname()[1]}"
        down = f"127.0.0.1:{dead.getsockname()[1]}"
        assert unreachable([up, down]) == [down]
        message = servers_down_message([up, down])
        assert "inference servers are down" in message
        assert f"1 of 2 refuse connections. Servers: {down}." in message
        assert servers_down_message([up]) == ""


def test_a_malformed_address_counts_as_unreachable():
    assert unreachable(["no-port-here"]) == ["no-port-here"]
