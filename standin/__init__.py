"""A CPU stand-in for SGLang: a test double, not an inference engine.

It speaks the part of SGLang's HTTP protocol that AReaL 1.0.4's client uses,
backed by a tiny transformers model, so that AReaL's real client, executor,
trainer and FSDP actor run on a laptop or in CI. Nothing here is imported by a
GPU run; it is not part of the ``memagent_workflow`` wheel.

- ``server``, ``engine``, ``model``, ``protocol``: the HTTP server and its generation core
- ``app``: the server's aiohttp application, SGLang's routes over the engine (or,
  with ``--protocol vllm``, AReaL's vLLM server's: ``vllm_routes``, ``vllm_protocol``)
- ``batching``: the engine's prefill and decode steps (continuous batching)
- ``replies``, ``weight_routes``, ``weight_log``: reply shapes, the weight-update
  endpoints and their record; ``xccl``: distributed weight updates over gloo
- ``launch``: start and stop the server as a subprocess
- ``backend``, ``trainer``, ``actor``: AReaL subclasses that put the stand-in where
  AReaL launches SGLang or vLLM (single controller, Ray) and its actor in a worker
  process
- ``tiny_model``: the tiny offline Qwen2 model and tokenizer
- ``packed_sdpa``: pack-aware SDPA for AReaL's FSDP actor on CPU (a process-wide patch)
- ``config``, ``cpu_job``: the ``standin:`` config section and the CPU job's wiring
- ``ray_nodes``, ``slurm_cluster``, ``slurm``: several Ray nodes, or a one-machine
  Slurm, on this machine, and AReaL's Slurm scheduler for CPU-only nodes
  (docs/multi-node.md)
- ``train``, ``eval``, ``preflight``: the entries of a CPU config (``python -m
  standin.train --config config_cpu.yaml``): the product's ``examples/`` scripts
  with the stand-in's config class, trainer, job and inference passed in
"""

import os

# Under `uv run`, Ray would start the CPU job's workers through `uv run` in a
# packaged copy of the repository (a second environment, without the git-ignored
# outputs/ the run writes). Ray reads this switch once, when it is first
# imported, which AReaL's modules do long before the CPU job starts Ray: it must
# be set before them. A GPU cluster's `ray start` is left to Ray's defaults.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
# Ray 2.60 decides token authentication per process when the mode is unset (on
# where ~/.ray/auth_token exists), and a process that left it unset failed to
# authenticate to nodes started by `ray start` (InvalidAuthToken, or the cluster
# cancelling the job's actors). The CPU job's drivers and nodes say "token", and
# the token is made where the cluster starts: `ray.init()` for the job's own
# instance, `standin.ray_nodes` for two nodes (`ray start` never makes one).
# RAY_AUTH_MODE=disabled, exported, turns it off everywhere (docs/ray-auth.md).
os.environ.setdefault("RAY_AUTH_MODE", "token")
