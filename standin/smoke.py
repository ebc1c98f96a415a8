"""The smoke's CPU twin: ``examples/smoke.py`` with the stand-in's classes.

    uv run python -m standin.smoke --config config_cpu.yaml

The planned launch is the CPU main job (``python -m standin.train``): AReaL's
single controller, its actor and rollout workers, the stand-in launched where
SGLang would be. Its children are this entry again, so they take the
stand-in's config, trainer and job (the model and data built when missing;
the model first in this process, in the model phase, as the main job builds
it: the same progress bar and cached folder);
the eval is ``python -m standin.eval`` on the needle config the CPU job's
length eval uses, with synthetic questions.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from examples import smoke

INPUTS_BY = "python -m standin.train"
NO_LENGTH_EVAL = "standin.length_eval=[]"  # the smoke runs its own eval


def eval_data(eval_config: Any, folder: Path, samples: int) -> list[str]:
    """Synthetic eval questions, written by the stand-in's eval into ``folder``."""
    return [f"eval.data_root={folder}", f"standin.synthetic_eval={samples}"]


def entries() -> smoke.Entries:
    from standin import eval as standin_eval
    from standin.config import StandinEvalConfig, StandinGRPOConfig
    from standin.cpu_job import build_model, cpu_job
    from standin.eval_inference import StandinInference
    from standin.length_eval import eval_overrides
    from standin.trainer import StandinPPOTrainer

    return smoke.Entries(
        child=[sys.executable, "-m", "standin.smoke"],
        train_config_cls=StandinGRPOConfig,
        trainer_cls=StandinPPOTrainer,
        job=cpu_job,
        eval_config_cls=StandinEvalConfig,
        inference_cls=StandinInference,
        eval_loader=standin_eval.load_config,
        eval_data=eval_data,
        eval_config="config_eval_needle.yaml",
        eval_overrides=eval_overrides,
        extra_overrides=[NO_LENGTH_EVAL],
        inputs_by=INPUTS_BY,
        build_model=build_model,  # as the main job builds it, bar and cache
    )


def main(argv: list[str]) -> int:
    return smoke.main(argv, entries)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
