"""MemAgent on AReaL: what a GPU run imports. The map:

The algorithm, at the top, read in this order:
    workflow        the episode loop: chunk by chunk, memory overwritten, the answer
    config          the ``memagent:`` section on AReaL's GRPOConfig
    actor_config    the ``actor:`` section plus the original's KL loss keys
    chunking, context   the document cut into chunks; the one "a turn fits" rule
    prompts/        the wording: built in (wording.py, the one copy) or a user's
                    file, its slots checked; a turn's prompt as token ids
                    (tokens.py); the original MemAgent's templates (original.py)
    episode, rows, advantage    one episode's turns, their training rows, GRPO
    reward/         the training rewards (a built-in name or an import string) and
                    the SQuAD answer metrics (squad.py: training stats, eval scores)
    engine_calls, metrics   a model call that survives a server restart; turn stats

Around it, each a folder:
    trainer/        AReaL trainer extensions (PPO trainer, actor, step report)
    recovery/       surviving crashes and server outages (ledger, checkpoints)
    infra/          process plumbing (how an entry script parses a config, ports,
                    scheduler, Ray, shared folders, terminal, which engine)
    data/           the row schema and data preparation
    eval/           RULER-HQA and RULER evaluation: benchmarks, scoring, reports
    preflight/      checks of a GPU launch before it starts
    serve/          MemAgent behind OpenAI's chat API (examples/serve.py)
    smoke/          the launch itself, small, timed: phases, rates, teardown
    areal_internals/    the AReaL internals relied on, pinned: an upgrade's cost
                    (pinned.py; revised.py, their code at later AReaL commits)
"""
