"""AReaL trainer extensions: `MemAgentPPOTrainer` and what it plugs into AReaL.

``ppo_trainer`` (the trainer), ``actor`` (the FSDP actor), ``step_report`` and
``curve`` (one line per step, ``steps.jsonl``, the learning curve),
``tied_groups`` (groups whose rewards tie), ``prox_approx`` (the proximal
log-probabilities' approximation). Each overrides public AReaL classes; the
private internals they rely on are listed in ``memagent_workflow/areal_internals/pinned.py``.
"""
