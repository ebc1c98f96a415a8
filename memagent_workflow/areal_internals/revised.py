"""The pinned AReaL internals as read in AReaL commits after LOCKED (1.0.4).

``memagent_workflow/areal_internals/pinned.py`` pins each internal the project relies on
by the digest of its code in 1.0.4 (``a0f3dca2``). Where a later AReaL commit
changed that code, it was read again; if the project's use still holds, the
new digest is kept here as a `Revised`, naming the commit it was read in, what
changed and why the use holds. One release may have several: AReaL's ``v2.0.0``
tag and AReaL's main after it both say ``2.0.0``, so a release's accepted
digests are 1.0.4's plus each of its `Revised` (docs/areal-versions.md).
"""

from __future__ import annotations

from dataclasses import dataclass

TAG = "fee938ea (the v2.0.0 tag)"
MAIN = "cbff54d6 (AReaL main, 55 commits after the tag)"
TRAINER = "areal.trainer.rl_trainer:PPOTrainer"
ACTOR = "areal.trainer.ppo.actor:PPOActor"


@dataclass(frozen=True)
class Revised:
    """An entry's code at another AReaL commit, read and found still to hold."""

    areal: str  # the release that commit reports (areal.__version__)
    commit: str  # the AReaL commit read, and what it is
    sha256: str
    change: str  # what changed there, and why the project's use still holds
    # Where the code is at that commit, if it moved (digested together, in order).
    code: tuple[str, ...] = ()


REVISED: dict[str, tuple[Revised, ...]] = {
    f"{TRAINER}._init_rollout": (
        Revised(
            "2.0.0",
            MAIN,
            "5229d3a607d69e9addc5da118b1931e4dc30c32ac60558eead3238438414e78d",
            "adds AWEX colocation's server arguments when actor.weight_update_mode="
            "awex (v1), which no config here uses; the callback port is still "
            "drawn inside it (private_random holds) and the stand-in's mirror "
            "serves disk and xccl weight updates as before",
        ),
    ),
    f"{TRAINER}.__init__": (
        Revised(
            "2.0.0",
            TAG,
            "2ec55d20a89b5b9f02e670c0c74f1f8b111f0aa1a4ad4d7c3f378f301432ce12",
            "only the weight-update meta of AReaL's v2 controllers changed (LoRA by "
            "disk, else awex); the attributes the overrides read and the handler "
            "and stats logger replaced after it are built as in 1.0.4",
        ),
        Revised(
            "2.0.0",
            MAIN,
            "3961964679cf909ebcd77e9448699457e69814b3d88c6dbbf1fe945fb587e235",
            "the body moved to _init_impl, which __init__ calls inside a try that "
            "calls close() and re-raises on failure (MemAgentPPOTrainer.close "
            "skips until built, so the cause is raised); _init_impl adds AWEX "
            "colocation (off here), deterministic-env and delta-transfer env "
            "settings, and offloads the actor before the rollout starts when it "
            "is offloaded anyway. The attributes the overrides read, the ref "
            "model's creation and the handler, stats logger and load replaced "
            "after super().__init__ are as in 1.0.4",
            code=(f"{TRAINER}.__init__", f"{TRAINER}._init_impl"),
        ),
    ),
    f"{TRAINER}.train": (
        Revised(
            "2.0.0",
            MAIN,
            "2e46295b252dc8551a3b5df8b70a6c4ba5c2c25770887e00a6db967b35078aaf",
            "passes gconfig.reward_normalization and drop_incomplete_group (both "
            "off by default, and for groups of gconfig.n_samples, which MemAgent "
            "keeps at 1) to prepare_batch, which the project's controllers pass "
            "through; adds AWEX colocation's hand-over (off here) and saves "
            "through _save_training_state (the same save, then recover "
            "checkpoint); ref_logp is still computed whenever self.ref is set",
        ),
    ),
    f"{ACTOR}._ppo_update": (
        Revised(
            "2.0.0",
            TAG,
            "a697d75e50ca4f0219ce74d34928cad29040c6e507ad0320d09c4cb0ae75ede6",
            "the GRPO loss also takes use_cispo_loss (off by default); it is still "
            "passed to engine.train_batch, where MemAgentPPOActor adds the KL loss",
        ),
        Revised(
            "2.0.0",
            MAIN,
            "a998632f43607a4ead03e7a31f0a2457721d024892a117874344b87e73a52dc6",
            "as the tag's, but its correct/incorrect counts and task_reward stat "
            "read original_rewards when a batch has them (this project's have "
            "none) and prompt lengths come from a helper; the loss_fn passed to "
            "engine.train_batch, the update scope and ref_logp are unchanged",
        ),
    ),
    f"{ACTOR}._compute_advantages": (
        Revised(
            "2.0.0",
            TAG,
            "c75edd1cd81f1073db09531c25b4ddea50448a724ad91a6b8a42a77c36d66e30",
            "reward and advantage normalisation take the real group sizes (the "
            "batch's TrajBatchMeta); ref_logp and the reward KL are computed as "
            "in 1.0.4",
        ),
        Revised(
            "2.0.0",
            MAIN,
            "898191625b7726f357af35c10cd4cd3b9fb09d88f525a05288f8664459c7daa0",
            "as the tag's, plus turn-level GAE (actor.gae_timestep_unit=turn, "
            "refused by AReaL without turn_ids, which this project's rows lack) "
            "and a custom gae_lambda; with the defaults (token, a float) the "
            "advantage is the same sum (gae.py's loop is 1.0.4's); ref_logp and "
            "the reward KL are computed as in 1.0.4",
        ),
    ),
    "areal.infra.controller.rollout_controller:RolloutController."
    "_start_callback_server": (
        Revised(
            "2.0.0",
            MAIN,
            "67257fa37b9dd05ebca9bda5ccee2357c52a8463419d68f3e99db6de0e38fd0a",
            "adds /callback/onload and /callback/offload routes; the port is "
            "still drawn with find_free_ports and bound at once, inside "
            "private_random",
        ),
    ),
    "areal.infra.remote_inf_engine:RemoteInfEngine.launch_server": (
        Revised(
            "2.0.0",
            MAIN,
            "2a776737d490fd3cbc5ba9d575a6b659a11d770489e1bb76d1f1356b67465117",
            "no longer returns early without the process under Ray, and a "
            "RuntimeError of the wait also shuts the server down; the port is "
            "still read after self.backend.launch_server(server_args)",
        ),
    ),
    "areal.utils.recover:RecoverHandler.load": (
        Revised(
            "2.0.0",
            MAIN,
            "ccf28586a6102163770bc61ee88b372bc724f194fd174db228d49362d99da0e6",
            "takes colocated_rollout for AWEX colocation (off here) and always "
            "resumes the rollout after the weight push (in a finally); of its own "
            "state it still restores only freq_ctl from checkpoint_info, which "
            "AtomicRecoverHandler.resuming restores",
        ),
    ),
}
