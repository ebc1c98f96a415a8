"""The trainer writes the prompt order beside every model it saves.

A model trained with the section before the memory (``prompts/
section_first.yaml``) reads the paper's order worse, and the other way round;
`RecordsPromptOrder` (a base of `MemAgentPPOTrainer`) writes
``memagent_prompt_order.json`` into each HF checkpoint AReaL's saver writes
(``PPOTrainer._save_hf``), from ``memagent.prompts``. The eval, ``ask`` and
the service read it (`memagent_workflow.prompts.order.check_prompt_order`).
"""

from __future__ import annotations

import os

from areal.utils import logging
from areal.utils.saver import Saver

from memagent_workflow.prompts import load_prompts
from memagent_workflow.prompts.order import prompt_order, write_prompt_order

logger = logging.getLogger("MemAgentTrainer")


class RecordsPromptOrder:
    """``_save_hf`` that also records the prompt order in the saved folder."""

    def _save_hf(self, epoch: int, epoch_step: int, global_step: int) -> None:
        super()._save_hf(epoch, epoch_step, global_step)
        if int(os.environ.get("RANK", "0")) != 0:
            return
        saver = self.config.saver
        # Saver.get_model_save_path's folder, without creating it
        root = Saver.get_model_save_root(
            saver.experiment_name, saver.trial_name, saver.fileroot, "default"
        )
        path = os.path.join(
            root, f"epoch{epoch}epochstep{epoch_step}globalstep{global_step}"
        )
        if not (os.path.isdir(path) and os.listdir(path)):  # no save at this step
            return
        memagent = self.config.memagent
        prompts = load_prompts(memagent.prompts, memagent.answer_protocol)
        order = prompt_order(prompts.memory_update)
        write_prompt_order(path, order, prompts.source)
        logger.info(f"{path}: trained with the {order} prompt order")
