"""The AReaL internals the project cannot do without, each with why: the one list.

This file is the cost of an AReaL upgrade. Everything else the project uses of
AReaL is public (subclasses of its trainer, actor, controllers, recover
handler and engines, and its stats logger wrapped, used through their public
methods). What is below is private, or public code whose inner order an
override relies on; each entry is pinned by the sha256 of its source (stripped
lines), and ``tests/unit/test_areal_internals.py`` fails on the first one an
upgrade changes. Digests are of AReaL LOCKED (1.0.4, LOCKED_COMMIT); where a
later AReaL commit changed an entry's code, ``memagent_workflow/areal_internals/revised.py``
keeps its digest there, naming the commit, with what changed and why the
project's use still holds (docs/areal-versions.md).
When a pin fails: re-read the AReaL code named, bring the project's code (the
``users``) in line with it, then update the digest here (or add a ``Revised``).
"""

from __future__ import annotations

from memagent_workflow.areal_internals.check import LOCKED, Private, digest, load

__all__ = ["LOCKED", "PRIVATE", "SUBCLASSES", "Private", "digest", "load"]

TRAINER = "areal.trainer.rl_trainer:PPOTrainer"

PRIVATE = (
    Private(
        f"{TRAINER}._create_dataloader",
        ("memagent_workflow.trainer.ppo_trainer:MemAgentPPOTrainer",),
        "the train loader must be a QuestionLedger before PPOTrainer.__init__ "
        "restores the loader's state from a recover checkpoint, and AReaL builds "
        "the loader only here",
        "07a17965656878e407d322a7cada7c67581ebd958537ee152e8d490c4df42ca6",
    ),
    Private(
        f"{TRAINER}._create_train_engine",
        (
            "memagent_workflow.trainer.ppo_trainer:MemAgentPPOTrainer",
            "standin.trainer:StandinPPOTrainer",
        ),
        "AReaL names FSDPPPOActor here; the actor must be MemAgentPPOActor (its LR "
        "schedule in recover checkpoints, its batches marked in the ledger), and the "
        "reference model the same class (log-probs computed as the actor's), on CPU "
        "StandinPPOActor (the stand-in only refuses other backends)",
        "0866b13d5da89e32be696a8e5ed529d3992e4a601855a6b2e8767ea487a4517b",
    ),
    Private(
        f"{TRAINER}._init_rollout",
        ("memagent_workflow.trainer.ppo_trainer:MemAgentPPOTrainer",),
        "the rollout controller draws its callback port from the seeded random here, "
        "so the override runs it in private_random; AReaL names RemoteSGLangEngine "
        "here and builds SGLang's server arguments, which import sglang (or names "
        "RemotevLLMEngine for vllm): the stand-in's _rollout_engine_of launches the "
        "stand-in instead, in either protocol (it mirrors the rest of this method)",
        "f582539f2d5e095c1306565abd8df4032e257c98d9f068dc1d812bb23b010760",
    ),
    Private(
        f"{TRAINER}._init_scheduler",
        (
            "memagent_workflow.trainer.ppo_trainer:MemAgentPPOTrainer",
            "standin.trainer:StandinPPOTrainer",
        ),
        "AReaL builds its scheduler here: scheduler.type=local gets "
        "MemAgentLocalScheduler (ports unique per run, a bounded worker start), "
        "ray MemAgentRayScheduler (each worker's node logged, a lost node stops "
        "the run), and on CPU a longer start-up timeout (standin.startup_timeout)",
        "d5d80a1cba3e21048f6182a0d0d8cc2ccc092289066af18d47851cbef77451a1",
    ),
    Private(
        f"{TRAINER}.__init__",
        (
            "memagent_workflow.trainer.ppo_trainer:MemAgentPPOTrainer",
            "standin.trainer:StandinPPOTrainer",
        ),
        "the overrides above read attributes __init__ sets before calling them "
        "(scheduler, allocations, actor, rollout); MemAgentPPOTrainer replaces the "
        "stats logger and the recover handler it builds (RecoverHandler(config."
        "recover, ft_spec), then load) after it, and builds the reference model "
        "for actor.kl_loss_coef after it, as it builds its own for kl_ctl > 0 "
        "(create, initialize with the ft_spec, perf tracer, offload); on AReaL "
        "main after v2.0.0 that body is _init_impl, which __init__ calls",
        "8bd23d69093c02dfb736e916452fcfbdd2213f2c6a74e38c33cdd6ba27e3b3b8",
        overridden=False,
    ),
    Private(
        f"{TRAINER}._export_and_commit_stats",
        ("memagent_workflow.trainer.step_report:StepReport",),
        "not overridden: StepReport reads each step's stats from the one dict "
        "(actor, rollout and eval-rollout stats) this passes to stats_logger.commit, "
        "exported here once per step: a step with no rollout/ key received none",
        "3b6579c849e63f1520bb9caf9f36a5ecf95f4557f631a017a18d348912e2e8fd",
        overridden=False,
    ),
    Private(
        f"{TRAINER}._offload_model",
        ("memagent_workflow.trainer.ppo_trainer:MemAgentPPOTrainer",),
        "not overridden: called to offload the KL loss's reference model at start "
        "(ref.offload), as __init__'s _apply_initial_offload_policy does for its own",
        "265701b0dab61d7789273ff62e251e41df0bb3ef38ed58c093ed16517f51c432",
        overridden=False,
    ),
    Private(
        f"{TRAINER}.train",
        ("memagent_workflow.trainer.ppo_trainer:MemAgentPPOTrainer",),
        "not overridden in its order: it computes the batch's ref_logp whenever "
        "self.ref is set, whatever kl_ctl; the KL loss (actor.kl_loss_coef with "
        "kl_ctl 0) relies on it for the reference model the trainer adds",
        "797dd421d45fec3886c13b0c72605f6d383b344df9128ad40ca749d6405207a9",
        overridden=False,
    ),
    Private(
        "areal.trainer.ppo.actor:PPOActor._ppo_update",
        ("memagent_workflow.trainer.actor:MemAgentPPOActor",),
        "not overridden: it calls self.engine.train_batch(mb, loss_fn=<GRPO loss>, "
        "loss_weight_fn=<loss-mask count>) inside the ppo_actor/update stats scope, "
        "with ref_logp left in the batch; MemAgentPPOActor.train_batch adds the KL "
        "loss to that loss_fn and logs kl_loss in that scope",
        "a2a91bf5c636052bab95e8903a39583c99c13bfa4963c1c64d192372b49c5bc2",
        overridden=False,
    ),
    Private(
        "areal.trainer.ppo.actor:PPOActor._compute_advantages",
        ("memagent_workflow.trainer.actor:MemAgentPPOActor",),
        "not overridden: ref_logp is aligned with the current log-probabilities "
        "(as prox_logp, not rolled) and zeroed outside the loss mask, and the reward "
        "KL is -kl_ctl x estimate: 0 with kl_ctl 0, so only the KL loss acts",
        "43947af3eb763e636f1acfa4c3fc762a5991340cdc54c47577c67ef9bf985068",
        overridden=False,
    ),
    Private(
        "areal.infra.scheduler.local:LocalScheduler._allocate_ports",
        ("memagent_workflow.infra.scheduler:MemAgentLocalScheduler",),
        "AReaL draws worker ports from the global random state seeded by "
        "config.seed, so two runs with one seed collide; the override draws from an "
        "OS-seeded state, leaves training's stream untouched, and claims the ports "
        "machine-wide (port_claims) until its process exits",
        "33ef052262f8e6a1fc00fe207900a5b1606bca64a95cee1db929c73192f2e26e",
    ),
    Private(
        "areal.infra.scheduler.local:LocalScheduler._fork_single_worker",
        ("memagent_workflow.infra.scheduler:MemAgentLocalScheduler",),
        "a forked worker (eval-rollout) picks its port from its parent's seeded "
        "stream; a reply from another run's worker is retried on a new fork",
        "01910ceb059cd177c9aecfc181d5b1aeb780f30f65204ca8f0002ce5632f0c18",
    ),
    Private(
        "areal.infra.scheduler.local:LocalScheduler._configure_worker",
        ("memagent_workflow.infra.scheduler:MemAgentLocalScheduler",),
        "AReaL waits for the worker's /health with no deadline (a taken port hangs "
        "the run); the override waits until the worker registered its own port, and "
        "stops naming the port when it died",
        "fac044b6ccd4914388694eb7bcfcbe624693bce41fe40fd49f419d21828c8208",
    ),
    Private(
        "areal.infra.scheduler.local:LocalScheduler._wait_for_fork_ready",
        ("memagent_workflow.infra.scheduler:MemAgentLocalScheduler",),
        "AReaL gives a forked worker (the eval-rollout worker) a fixed 60 s to answer "
        "/health, which a loaded machine exceeds; the override calls it with the "
        "scheduler's start-up bound (its caller, _fork_single_worker, is pinned too)",
        "d5186dedb7d54eb0f5fe52b0a388a8d278259f51467177a261c3a7a278d77955",
    ),
    Private(
        "areal.infra.controller.rollout_controller:RolloutController."
        "_start_callback_server",
        ("memagent_workflow.trainer.ppo_trainer:MemAgentPPOTrainer",),
        "not overridden: it draws the callback server's port with find_free_ports, "
        "from the global random seeded by config.seed, and binds it at once; "
        "MemAgentPPOTrainer._init_rollout runs it in private_random",
        "0df976a799ebf912d2cdcb169127543433827c691effbd856f88beccfe0ec51f",
        overridden=False,
    ),
    Private(
        "areal.infra.controller.train_controller:TrainController.create_process_group",
        ("memagent_workflow.trainer.ppo_trainer:MemAgentPPOTrainer",),
        "not overridden: the controller's gloo group listens on a port drawn from "
        "the seeded random; MemAgentPPOTrainer creates the group in private_random",
        "8c5cbe249a8c6b321ea14dc543d7c857f51265328c6794e65fc52031463a2bf2",
        overridden=False,
    ),
    Private(
        "areal.engine.fsdp_engine:FSDPEngine._init_weight_update_from_distributed",
        ("memagent_workflow.trainer.actor:MemAgentPPOActor",),
        "the actor draws the xccl weight-update group's master port here, from the "
        "seeded random (the same in two runs with one seed); the override runs it "
        "in private_random",
        "389e436f8a85f299fd97a47da94315d46b76985e8bf1edc1777c32f600e50af6",
    ),
    Private(
        "areal.infra.remote_inf_engine:RemoteInfEngine.launch_server",
        ("standin.backend:StandinBackend",),
        "not overridden: the stand-in binds a port the OS picks and StandinBackend "
        "writes it back into server_args, so AReaL must read the port only after "
        "self.backend.launch_server(server_args)",
        "9604e72fb4502305d7039e1cc8bb8c8fa24aa6290f8e4e5c7b85de2637d962d5",
        overridden=False,
    ),
    Private(
        "areal.utils.recover:RecoverHandler._save_checkpoint",
        ("memagent_workflow.recovery.checkpoint:AtomicRecoverHandler",),
        "called once AReaL has decided to write a recover checkpoint and before it "
        "writes: the only point where the previous checkpoint can be set aside",
        "e469e1f2b64512df5225dea1d9ac30e327b6230fa11930dd66663b3ebb197353",
    ),
    Private(
        "areal.utils.recover:RecoverHandler.load",
        ("memagent_workflow.recovery.checkpoint:AtomicRecoverHandler",),
        "not overridden: of the handler's own state it restores only the checkpoint "
        "timer (freq_ctl, from RecoverInfo.checkpoint_info); "
        "AtomicRecoverHandler.resuming, built after PPOTrainer.__init__ loaded with "
        "AReaL's handler, restores the same",
        "2fb157abb653c191343070822b19d4dbf001da371a8a84d5108061f8c21dc35b",
        overridden=False,
    ),
    Private(
        "areal.engine.sglang_remote:RemoteSGLangEngine.__init__",
        ("standin.backend:StandinSGLangEngine",),
        "the backend that launches servers is fixed here, in the private _engine; "
        "the stand-in's engine replaces _engine with one whose backend launches "
        "the stand-in",
        "c4a98f7ba2ecd37092aabf0bed891717f67d34b71de3a588a5097aa505bf2d63",
    ),
    Private(
        "areal.engine.vllm_remote:RemotevLLMEngine.__init__",
        ("standin.backend:StandinvLLMEngine",),
        "as for SGLang: the vLLM backend that launches servers is fixed in the "
        "private _engine, which the stand-in's vLLM engine replaces",
        "368bba4b3205aeb407679ed15c9b11933f495b0b81fd4608dca49955549380c1",
    ),
    Private(
        "areal.engine.fsdp_engine:FSDPEngine._update_weights_from_distributed",
        ("standin.trainer:StandinPPOTrainer",),
        "reads the xccl bucket size from the WeightUpdateMeta at every update, so "
        "standin.xccl_bucket_mb set on the trainer's meta takes effect",
        "a0e9c350f1ec23accd2d01ea9a76049ff3f9ab404e47017b18b814cacf180be8",
        overridden=False,
    ),
    Private(
        "areal.infra.scheduler.ray:RayScheduler.create_workers",
        ("memagent_workflow.infra.ray_scheduler:MemAgentRayScheduler",),
        "each worker it creates (and each fork) is in the private _worker_info_by_id "
        "with its placement group and bundle index when it returns: the override "
        "reads them to log and watch the node each worker runs on",
        "692de2b007203696a3128ae15603e266d9c03fd93e3bb8d9c063ad9b23fda547",
        overridden=False,
    ),
    Private(
        "areal.infra.scheduler.ray:RayScheduler._create_forked_workers_internal",
        ("memagent_workflow.infra.ray_scheduler:MemAgentRayScheduler",),
        "a forked worker (the eval-rollout worker) reuses its target's placement "
        "group and bundle, so it runs on the target's node",
        "c0bfe3a0781c4b219b6a3a3f535bf926fa816cdb0fccf8d2c3aa1bd012356737",
        overridden=False,
    ),
    Private(
        "areal.infra.remote_inf_engine:RemoteInfEngine.choose_server",
        ("memagent_workflow.serve.relaunch:ServedEngine",),
        "the service probes the servers of RemoteInfEngine.addresses (reached "
        "through the private _engine of RemoteSGLangEngine and RemotevLLMEngine) "
        "and names the one a request's rid was sent to (rid_to_address), as "
        "agenerate and this routing keep them",
        "fb893f0c1ec3999c1bf14048e0099af2acbf58c9405f0968d87aafbaaa681bb3",
        overridden=False,
    ),
    Private(
        f"{TRAINER}._save_hf",
        ("memagent_workflow.trainer.prompt_order_record:RecordsPromptOrder",),
        "where AReaL saves the HF checkpoints (through Saver.save, at its path): "
        "the override then records the prompt order in that folder",
        "c2f01802abbc83006eec8b4b6448f294bd161f474ae8c6709dbb2132ee314886",
    ),
    Private(
        "areal.engine.fsdp_engine:FSDPEngine._prepare_mb_list",
        ("memagent_workflow.trainer.tree_actor:SharesPrefixes",),
        "every pass builds its micro-batches (tries) here: the override counts the "
        "training pass's row tokens and its micro-batches' (padding included)",
        "553014ecd574469e19379b6c209c34a351459a30bc431f0964683722fa327235",
    ),
    Private(
        "areal.trainer.ppo.actor:PPOActor._ppo_update",
        ("memagent_workflow.trainer.tree_actor:SharesPrefixes",),
        "not overridden: with tree training the actor cuts its own mini-batches "
        "and runs each through AReaL's update as one (ppo_n_minibatches=1)",
        "a2a91bf5c636052bab95e8903a39583c99c13bfa4963c1c64d192372b49c5bc2",
        overridden=False,
    ),
    Private(
        "areal.models.tree_attn.tree:_greedy_build_tries",
        ("memagent_workflow.trainer.tree_actor:SharesPrefixes",),
        "not overridden: first fit in batch order; the actor hands rows in trie order",
        "571c1ba65a303e598d31bc7168cd955b48f2fff41682e6d9c655c6406f1e6354",
        overridden=False,
    ),
)

# Every project class derived from AReaL: an override of a private method of
# theirs must be listed above.
SUBCLASSES = (
    "memagent_workflow.trainer.ppo_trainer:MemAgentPPOTrainer",
    "memagent_workflow.trainer.actor:MemAgentPPOActor",
    "memagent_workflow.trainer.actor:MemAgentActorController",
    "memagent_workflow.actor_config:MemAgentActorConfig",
    "memagent_workflow.recovery.checkpoint:AtomicRecoverHandler",
    "memagent_workflow.infra.scheduler:MemAgentLocalScheduler",
    "memagent_workflow.infra.ray_scheduler:MemAgentRayScheduler",
    "standin.trainer:StandinPPOTrainer",
    "standin.actor:StandinPPOActor",
    "standin.backend:StandinSGLangEngine",
    "standin.backend:StandinBackend",
    "standin.backend:StandinvLLMEngine",
    "standin.backend:StandinvLLMBackend",
)
