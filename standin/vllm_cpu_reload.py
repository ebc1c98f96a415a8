"""AReaL's vLLM worker extension with disk updates that work on vLLM's CPU build.

A CPU-build-only workaround, used by the real-engine smoke
(tests/vllm_cpu/smoke.py) through AReaL's own setting,
``vllm.worker_extension_cls=standin.vllm_cpu_reload.CPUReloadWorkerExtension``.
It imports vLLM, so it loads only in the envs/vllm-cpu environment.

Why: AReaL 1.0.4's ``VLLMWorkerExtension.areal_update_weights`` calls
``model_loader.load_weights(model)`` on the live model. On vLLM's CPU build,
``UnquantizedLinearMethod.process_weights_after_loading`` has packed every
Linear weight into a oneDNN handle and replaced ``layer.weight`` with an empty
parameter, so that load fails ("Attempted to load weight (torch.Size([256,
128])) into parameter (torch.Size([0]))") and the served weights stay as they
were. vLLM's own ``model_runner.reload_weights`` restores the layers, loads,
and packs them again. On GPU, AReaL's extension works as it is: keep it there.
"""

from __future__ import annotations

import traceback
from pathlib import Path

from areal.engine.vllm_ext.vllm_worker_extension import VLLMWorkerExtension, logger


class CPUReloadWorkerExtension(VLLMWorkerExtension):
    """``areal_update_weights`` through vLLM's ``reload_weights``."""

    def areal_update_weights(self, model_path: str) -> tuple[bool, str]:
        """Load the safetensors checkpoint in ``model_path`` into the served model."""
        logger.info(f"start update weights (reload_weights), {model_path}")
        # A failed reload leaves the layers on meta tensors and the engine dies
        # on its next step ("_C::onednn_mm ... Meta tensors"): refuse a folder
        # without weights first, as AReaL's extension fails on a bad path.
        if not list(Path(str(model_path)).glob("*.safetensors")):
            return (
                False,
                f"failed to upload weights! no *.safetensors under {model_path}",
            )
        try:
            self.model_runner.reload_weights(weights_path=model_path)
            self.sync()
            return True, "Success"
        except Exception as e:  # reported to AReaL's client, as AReaL's extension does
            message = f"failed to upload weights! {e}"
            logger.error(message + "\n" + traceback.format_exc())
            return False, message
