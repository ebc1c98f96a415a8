"""Distributed (xccl) weight updates on the stand-in's side, over gloo.

SGLang's ``/init_weights_update_group`` makes the server join a process group
that the trainer opens as rank 0; ``/update_weights_from_distributed`` then
receives each named tensor of a bucket by a broadcast from rank 0, in the
order the request lists them, and loads them into the served model. AReaL's
FSDP engine (``_init_weight_update_from_distributed`` and
``_update_weights_from_distributed``) drives the trainer's side; on CPU its
backend is gloo. Torch joins a named group without a default process group
only through its private helpers, as SGLang and AReaL both do; the
integration tests run this against AReaL's own group set-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d

GROUP_TIMEOUT = timedelta(minutes=10)


@dataclass
class WeightGroup:
    """A joined weight-update group: this server is ``rank`` of ``world_size``."""

    name: str
    rank: int
    world_size: int
    group: dist.ProcessGroup


def join_group(
    master_address: str,
    master_port: int,
    rank: int,
    world_size: int,
    group_name: str,
    backend: str,
    timeout: timedelta = GROUP_TIMEOUT,
) -> WeightGroup:
    """Join the trainer's group (blocks until every rank has joined)."""
    if backend != "gloo":
        raise ValueError(
            f"backend {backend!r}: the CPU stand-in joins gloo groups only "
            "(AReaL's trainer uses gloo on CPU, NCCL on GPU)"
        )
    if not 0 < rank < world_size:
        raise ValueError(f"rank {rank} is not a receiver rank of {world_size}")
    host = master_address.strip("[]")  # AReaL sends IPv6 hosts in brackets
    store = dist.TCPStore(
        host, int(master_port), world_size, is_master=False, timeout=timeout
    )
    # The trainer keys its rendezvous by the group name; so must we.
    prefixed = dist.PrefixStore(group_name, store)
    group, _ = c10d._new_process_group_helper(
        world_size,
        rank,
        [],
        c10d.Backend(backend),
        prefixed,
        group_name=group_name,
        timeout=timeout,
        group_desc=group_name,
    )
    c10d._world.pg_group_ranks[group] = {i: i for i in range(world_size)}
    return WeightGroup(group_name, rank, world_size, group)


def leave_group(group: WeightGroup) -> None:
    dist.destroy_process_group(group.group)


def receive_bucket(
    group: WeightGroup,
    names: list[str],
    dtypes: list[str],
    shapes: list[list[int]],
) -> list[tuple[str, torch.Tensor]]:
    """Receive one bucket: one broadcast from rank 0 per tensor, in order."""
    if not len(names) == len(dtypes) == len(shapes):
        raise ValueError(
            f"names, dtypes and shapes differ in length: "
            f"{len(names)}, {len(dtypes)}, {len(shapes)}"
        )
    received = []
    for name, dtype, shape in zip(names, dtypes, shapes, strict=True):
        tensor = torch.empty(shape, dtype=torch_dtype(dtype))
        dist.broadcast(tensor, src=0, group=group.group)
        received.append((name, tensor))
    return received


def torch_dtype(name: str) -> torch.dtype:
    """``"bfloat16"`` or ``"torch.bfloat16"`` -> ``torch.bfloat16``."""
    dtype = getattr(torch, str(name).removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dtype


def load_tensors(
    model: torch.nn.Module, tensors: list[tuple[str, torch.Tensor]]
) -> None:
    """Copy received tensors into ``model``, casting to its dtype.

    Every name and shape is checked before anything is copied, so a bad
    bucket leaves the served weights as they were.
    """
    params = dict(model.named_parameters())
    for name, tensor in tensors:
        if name not in params:
            raise KeyError(f"the served model has no parameter {name!r}")
        if tuple(params[name].shape) != tuple(tensor.shape):
            raise ValueError(
                f"{name}: shape {tuple(tensor.shape)} sent, "
                f"{tuple(params[name].shape)} served"
            )
    with torch.no_grad():
        for name, tensor in tensors:
            params[name].copy_(tensor)
