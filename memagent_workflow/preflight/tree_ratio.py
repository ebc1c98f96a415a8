"""The actor's tokens with AReaL's tree training, as a share of the packed ones.

With ``actor.enable_tree_training`` a micro-batch's rows become tries: a
group's rows of one turn share a prefix, computed once. How much they share is
set by the prompt order (``memagent_workflow/prompts/order.py``) and the group
size ``G``; per turn of a group, with the turn's fullest row (``TurnBudget``):

* turn 1 (every memory the same initial one): the whole prompt is shared;
* later memory turns, the paper's order: the template (instruction, question);
  the section first: the template and the section;
* the final turn: the template.

A turn whose trie outgrows ``actor.mb_spec.max_tokens_per_mb`` is split into
tries of ``n`` branches each, every one holding the shared part again. So is a
turn that ``actor.tree_minibatches`` cuts over the update's
``ppo_n_minibatches`` (`turn_parts`): ``dealt`` puts part of every turn in each
mini-batch, ``runs`` a turn in two or more only when a group has fewer turns
than there are mini-batches. Padding is not counted: with
``actor.tree_padding: block`` (both configs) a trie gains less than one
128-token block; with ``maximum`` each is padded to ``max_tokens_per_mb``, which
the estimate's line says (bench/results.md measures both). A run's own share
(``actor_tokens_computed`` over ``actor_tokens_rows`` in its ``steps.jsonl``)
given as ``rates.tree_token_share`` in ``--measured`` replaces the estimate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memagent_workflow.prompts import load_prompts
from memagent_workflow.prompts.order import prompt_order

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

SECTION_FIRST = (
    "actor.enable_tree_training=true actor.pad_to_maximum=true "
    "memagent.prompts=prompts/section_first.yaml"
)


def turn_tokens(shared: int, branch: int, group: int, mb: int | None) -> int:
    """Tokens of one group's turn as tries of at most ``mb`` tokens."""
    per_trie = group if not mb else max(1, (mb - shared) // max(1, branch))
    tries = -(-group // per_trie)
    return tries * shared + group * branch


def turn_parts(cut: str, minibatches: int, group: int, turns: int) -> int:
    """Into how many mini-batches a group's rows of one turn go."""
    if cut == "dealt":
        return max(1, min(minibatches, group))
    if cut == "runs" and minibatches > turns:
        return min(group, -(-minibatches // turns))
    return 1


def split_turn_tokens(
    shared: int, branch: int, group: int, mb: int | None, parts: int
) -> int:
    """Tokens of one group's turn cut into ``parts`` mini-batches (as even as
    rows allow), each part its own tries."""
    sizes = [group // parts + (i < group % parts) for i in range(parts)]
    return sum(turn_tokens(shared, branch, n, mb) for n in sizes if n)


def token_share(run: Run, order: str) -> float | None:
    """Tree tokens over packed tokens for one episode's turns, in ``order``."""
    from memagent_workflow.preflight.budgets import turns_per_episode
    from memagent_workflow.preflight.data import turn_budgets_of

    turns = turns_per_episode(run)[0]
    if turns is None:
        return None
    (update, final), _ = turn_budgets_of(run)
    cfg = run.config
    g, mb = cfg.memagent.group_size, cfg.actor.mb_spec.max_tokens_per_mb
    cut = getattr(cfg.actor, "tree_minibatches", "groups")
    parts = turn_parts(cut, cfg.actor.ppo_n_minibatches, g, turns)
    row, head = update.total, update.template
    later = head + update.chunk if order == "section_first" else head
    tree = split_turn_tokens(row - update.new, update.new, g, mb, parts)  # turn 1
    tree += (turns - 2) * split_turn_tokens(later, row - later, g, mb, parts)
    tree += split_turn_tokens(
        final.template, final.total - final.template, g, mb, parts
    )
    packed = g * ((turns - 1) * row + final.total)
    return tree / packed


def run_order(run: Run) -> str:
    """The prompt order ``memagent.prompts`` puts the memory turns in."""
    m = run.config.memagent
    return prompt_order(load_prompts(m.prompts, m.answer_protocol).memory_update)


def actor_share(run: Run) -> tuple[float, str]:
    """The share of the packed tokens the run's actor computes, and how it was
    found ("" without tree training: all of them)."""
    if not getattr(run.config.actor, "enable_tree_training", False):
        return 1.0, ""
    m = run.options.measured
    measured = m.rates.get("tree_token_share") if m is not None else None
    if measured is not None:
        return measured, f"tree training: {measured:.0%} of the row tokens (measured)"
    order = run_order(run)
    share = token_share(run, order)
    if share is None:
        return 1.0, "tree training: share unknown (no turns), counted as packed"
    note = f"tree training, {order}: ~{share:.0%} of the row tokens"
    if getattr(run.config.actor, "tree_padding", "block") == "maximum":
        note += " (+ each trie's padding to max_tokens_per_mb, not counted)"
    return share, note
