"""The smoke: the planned launch, small, on the user's own GPUs, before the long
run (``examples/smoke.py``; docs/smoke.md). The map:

    run.py        the phases, in order, and the report at the end
    plan.py       what the smoke changes in the launch; each phase's deadline
    launch.py     the model it loads, the checkpoint it saved, the eval's samples
    processes.py  each child in its own process group, deadlines, nothing left
    signals.py    SIGTERM and SIGHUP taking the Ctrl-C path
    slurm_jobs.py the smoke trial's Slurm jobs, cancelled by name
    events.py     the phase events children write and the parent reads
    timed.py      the launch's trainer, writing its phases
    bench.py      the servers' prefill and decode rates at the config's turn size
    gpu_memory.py peak GPU memory per role (nvidia-smi)
    report.py     the phase table, the measured rates, smoke.json
"""
