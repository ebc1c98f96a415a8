"""The training questions as a resumable data loader: what was handed out, what trained.

AReaL's trainer pulls questions from its data loader ahead of training: with
``rollout.max_head_offpolicyness`` > 0 the next batches are already rolling out
when a recover checkpoint is written, and every rejected group pulls one more
question. AReaL 1.0.4 checkpoints the loader's position, so after a crash the
questions that were handed out but not yet trained are skipped for the epoch;
and its ``cycle_dataloader`` restarts the shuffling seed at epoch 0, so a run
resumed in a later epoch reshuffles with the first epoch's order.

`QuestionLedger` replaces the loader with one whose checkpointed state is the
pass, the position in that pass's order (AReaL's own sampler) and the
questions handed out but not trained; a resumed run hands those out again
first. Which questions a step trained comes back in the rows themselves: the
loader adds ``question_index`` to each item and the workflow copies it into
every row of the group (see `MemAgentWorkflow.arun_episode`).

Passes. A pass is one epoch's shuffle of the questions; the ledger hands out
each question once per pass. AReaL trains on the first groups to finish, and
near a pass's end it reads ahead: questions of the next pass roll out while
the last of this one still do. So AReaL's last step of an epoch can train a
question of the next pass, and its next step a straggler of this one. The
ledger counts every trained question to the pass it was handed out for (the
oldest pass it is still outstanding in: groups of one question are
interchangeable), not to AReaL's epoch counter. What holds, across any number
of crashes: in each pass every question is trained exactly once, except those
whose group was rejected or which were still rolling out when the run
stopped; `log_untrained` lists these at the end of a run, and a resumed run
hands the ones it finds in its checkpoint out again, each in its own pass.

It also bounds the wait for a batch: AReaL replaces a rejected group by pulling
another question, forever, so with every server gone a run would churn through
its data without end. A step that has pulled a whole batch more than AReaL can
hold in flight raises `RolloutStalled` instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

from areal.utils import logging
from torch.utils.data import Dataset

from memagent_workflow.rows import INDEX_KEY

logger = logging.getLogger("QuestionLedger")

STATE_VERSION = 1


class RolloutStalled(RuntimeError):
    """A step keeps pulling questions without getting a batch of groups back."""


class IndexedRows(Dataset):
    """A dataset of dict rows, each returned with its own index as ``question_index``."""

    def __init__(self, rows: Any):
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return {**self.rows[int(index)], INDEX_KEY: int(index)}


class QuestionLedger:
    """A drop-in for AReaL's train data loader that remembers untrained questions.

    ``loader`` is the loader AReaL built over `IndexedRows` (its sampler, batch
    size and length are kept); ``prefetch_batches`` is how many batches AReaL
    may hold in flight beyond the one being trained
    (``rollout.max_head_offpolicyness``). ``log_path``: a JSONL file that gets
    the question ids of every batch handed to training, written before the
    step trains on it.
    """

    def __init__(
        self,
        loader: Any,
        prefetch_batches: int = 0,
        log_path: str | None = None,
    ):
        self.loader = loader
        self.dataset: IndexedRows = loader.dataset
        self.batch_size: int = loader.batch_size
        self.drop_last = bool(loader.drop_last)
        self.prefetch_batches = max(0, int(prefetch_batches))
        self.log_path = log_path
        self.epoch = 0  # the pass being handed out
        self.position = 0  # questions of this pass's order handed out
        self.steps = 0  # batches trained (= global steps done)
        # handed out, not trained: question -> the passes it was handed out for
        self.outstanding: dict[int, list[int]] = {}
        self.replay: list[tuple[int, int]] = []  # (question, pass); first out
        self.pulled_this_step = 0

    # ------------------------------------------------------------ AReaL's view
    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[list[dict[str, Any]]]:
        """The rest of the current epoch (after any replayed questions)."""
        while self.replay:  # kept in self.replay until handed out (state_dict)
            batch = self.replay[: self.batch_size]
            self.replay = self.replay[self.batch_size :]
            yield self._hand_out(batch, True)
        order = self.epoch_order()
        while self.position + self._min_batch() <= len(order):
            batch = order[self.position : self.position + self.batch_size]
            self.guard(len(batch))
            self.position += len(batch)
            yield self._hand_out([(i, self.epoch) for i in batch], False)
        self.epoch += 1
        self.position = 0
        # Still outstanding from two passes back: its group was rejected (the
        # workflow logged why). Forgotten, so a resume no longer replays it.
        for i in list(self.outstanding):
            passes = [p for p in self.outstanding[i] if p >= self.epoch - 1]
            if passes:
                self.outstanding[i] = passes
            else:
                del self.outstanding[i]

    def _min_batch(self) -> int:
        return self.batch_size if self.drop_last else 1

    def epoch_order(self, epoch: int | None = None) -> list[int]:
        """Dataset indices of ``epoch`` (default: the current one) in sampler order."""
        sampler = self.loader.sampler
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(self.epoch if epoch is None else epoch)
        return [int(i) for i in sampler]

    def _hand_out(
        self, batch: list[tuple[int, int]], replayed: bool
    ) -> list[dict[str, Any]]:
        for i, p in batch:
            self.outstanding.setdefault(i, []).append(p)
            self.outstanding[i].sort()
        if not replayed:
            self.pulled_this_step += len(batch)
        return [self.dataset[i] for i, _ in batch]

    def guard(self, n: int) -> None:
        """Raise `RolloutStalled` once this step has pulled a batch too many.

        Without rejections AReaL holds at most ``prefetch + 1`` batches queued
        and as many running or finished (its staleness window), so pulling more
        than that plus one batch since the last batch came back means at least a
        batch worth of groups was rejected in this step.
        """
        in_flight = 2 * (self.prefetch_batches + 1) * self.batch_size
        if self.pulled_this_step + n > in_flight + self.batch_size:
            raise RolloutStalled(
                f"step {self.steps}: {self.pulled_this_step} questions handed to "
                f"rollout and no batch of {self.batch_size} groups came back (at "
                f"most {in_flight} can be in flight): the groups are being "
                "rejected, so their episodes fail. Either the inference servers "
                "are down or unreachable, or every episode fails for another "
                "reason (see the workflow's warnings)."
            )

    # ------------------------------------------------------------ trained rows
    def mark_trained(
        self,
        indices: Sequence[int],
        owners: Sequence[tuple[int, int] | None] | None = None,
        rank: int = 0,
    ) -> list[int | None]:
        """The questions of the batch a step is about to train on; returns the
        pass each is counted to (None: it was not handed out, a bug upstream).

        ``owners``: for each question, the (data-parallel rank, pass) of the
        ledger that handed it out (`assign_owners`); this ledger, of ``rank``,
        settles only its own. Default: this ledger handed out all of them.
        """
        indices = [int(i) for i in indices]
        if owners is None:
            owners = assign_owners(indices, [self.claims()])
        passes = []
        for i, owner in zip(indices, owners, strict=True):
            if owner is None:
                logger.warning(f"question {i} trained but never handed out")
                passes.append(None)
                continue
            owner_rank, p = owner
            if owner_rank == rank:
                self._settle(i, p)
            passes.append(p)
        self.pulled_this_step = 0
        ids = [self.question_id(i) for i in indices]
        epoch = self.steps // max(1, len(self))  # AReaL's count, not the loader's
        self._log({"step": self.steps, "epoch": epoch, "questions": ids,
                   "passes": passes})  # fmt: skip
        self.steps += 1
        return passes

    def claims(self) -> dict[int, list[int]]:
        """Question -> the passes it is outstanding in here (a copy)."""
        return {i: list(ps) for i, ps in self.outstanding.items()}

    def _settle(self, index: int, p: int) -> None:
        passes = self.outstanding[index]
        passes.remove(p)
        if not passes:
            del self.outstanding[index]

    def untrained(self) -> list[tuple[int, int]]:
        """(question, pass) handed out and not trained: rolling out or rejected."""
        out = [(i, p) for i, ps in self.outstanding.items() for p in ps]
        return sorted(self.replay + out, key=lambda x: x[1])  # hand-out order

    def log_untrained(self) -> None:
        """The run's last line: the questions of each pass it did not train."""
        left = [[self.question_id(i), p] for i, p in self.untrained()]
        if left:
            logger.info(
                f"{len(left)} question(s) handed out and not trained when the run "
                "stopped (still rolling out, or their groups rejected): "
                f"{left[:20]}{' ...' if len(left) > 20 else ''}"
            )
        self._log({"step": self.steps, "untrained": left})

    def _log(self, line: dict[str, Any]) -> None:
        if self.log_path is None:
            return
        os.makedirs(os.path.dirname(self.log_path) or ".", exist_ok=True)
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")

    def question_id(self, index: int) -> str:
        row = self.dataset.rows[int(index)]
        return str(row.get("id", index)) if isinstance(row, dict) else str(index)

    # ------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs to go on where this one is."""
        return {
            "version": STATE_VERSION,
            "epoch": self.epoch,
            "position": self.position,
            "steps": self.steps,
            "outstanding": [[i, p] for i, p in self.untrained()],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            raise ValueError(
                "the recover checkpoint's data loader state was not written by "
                f"QuestionLedger (version {STATE_VERSION}): {str(state)[:200]}"
            )
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])
        self.steps = int(state["steps"])
        self.outstanding = {}
        self.replay = [(int(i), int(p)) for i, p in state["outstanding"]]
        self.pulled_this_step = 0
        logger.info(
            f"data: epoch {self.epoch}, {self.position} questions of its order "
            f"handed out; {len(self.replay)} handed out but not trained go first"
        )


def assign_owners(
    indices: Sequence[int], claims_by_rank: Sequence[dict[int, list[int]]]
) -> list[tuple[int, int] | None]:
    """Which ledger settles each trained question: (its rank, the pass).

    ``claims_by_rank``: each data-parallel rank's `QuestionLedger.claims`. A
    question goes to the oldest pass it is outstanding in, over all ranks (the
    lowest rank on a tie); a question trained twice takes two claims. None: no
    rank handed it out. Every rank computes the same answer from the same input.
    """
    left = [{i: sorted(ps) for i, ps in c.items()} for c in claims_by_rank]
    out: list[tuple[int, int] | None] = []
    for i in indices:
        options = [(ps[0], r) for r, c in enumerate(left) if (ps := c.get(int(i)))]
        if not options:
            out.append(None)
            continue
        p, r = min(options)
        left[r][int(i)].pop(0)
        out.append((r, p))
    return out
