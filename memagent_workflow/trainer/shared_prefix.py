"""Rows that share a prefix kept side by side, so AReaL's tree packing shares it.

With ``actor.enable_tree_training`` AReaL's FSDP engine packs a micro-batch's
rows into tries (``areal/models/tree_attn/tree.py``, ``_greedy_build_tries``):
rows are taken in batch order and each joins the first trie with room for its
unshared tokens. What reaches a trie therefore depends on two things upstream:

* the order of the rows: a group's rows come episode by episode (turn 1, 2, ...
  of episode 1, then of episode 2), so at a micro-batch size that holds a few
  rows a trie fills with one episode's turns, which share only the instruction;
* AReaL's PPO mini-batch split (``ppo_n_minibatches``), a first-fit-decreasing
  partition by length that spreads a group's rows of one turn over the
  mini-batches (`measure` shows it; ``tests/unit/test_shared_prefix.py``).

The data-parallel dispatch keeps a group whole: a trajectory dict is one group,
and AReaL's controller partitions the list of dicts, never a dict's rows.

`trie_order` sorts a group's rows by their tokens (lexicographically: a trie's
depth-first order), so rows sharing a prefix are adjacent and first fit packs
them together; `contiguous_minibatches` cuts the ordered rows into mini-batches
of about equal tokens at the boundaries where neighbours share least (whole
groups), `dealt_minibatches` deals them in turn (every group in every one), and
`dealt_runs` cuts each group into runs where its rows share least and deals the
runs (every group in every one, a run's shared prefix computed once).
"""

from __future__ import annotations

from typing import Any

import torch

from memagent_workflow.rows import common_prefix


def row_tokens(data: dict[str, Any]) -> list[list[int]]:
    """Each row's tokens (its attention mask's span)."""
    ids, mask = data["input_ids"], data["attention_mask"].bool()
    return [r[m].tolist() for r, m in zip(ids, mask, strict=True)]


def trie_order(data: dict[str, Any]) -> list[int]:
    """Row indices in lexicographic token order (stable): shared prefixes adjacent."""
    rows = row_tokens(data)
    return sorted(range(len(rows)), key=rows.__getitem__)


def take_rows(data: dict[str, Any], order: list[int]) -> dict[str, Any]:
    """``data`` with every per-row tensor (first dim = rows) in ``order``."""
    n = data["attention_mask"].shape[0]
    index = torch.as_tensor(order, dtype=torch.long)
    return {
        k: v[index] if torch.is_tensor(v) and v.dim() > 0 and v.shape[0] == n else v
        for k, v in data.items()
    }


def inverse(order: list[int]) -> list[int]:
    """The permutation that undoes ``order``."""
    back = [0] * len(order)
    for new, old in enumerate(order):
        back[old] = new
    return back


def contiguous_minibatches(
    data: dict[str, Any], n: int, slack: float = 0.25
) -> list[list[int]]:
    """``n`` runs of consecutive rows (``n`` capped by the row count) of about
    equal tokens; each cut sits, within ``slack`` of a run's size of its ideal
    place, where a row shares the shortest prefix with the row before it."""
    rows = row_tokens(data)
    n = max(1, min(n, len(rows)))
    lens = [len(r) for r in rows]
    total = sum(lens)
    starts = [0]
    before = [0]
    for k in lens:
        before.append(before[-1] + k)
    for j in range(1, n):
        ideal = total * j / n
        room = total / n * slack
        first = starts[-1] + 1
        last = len(rows) - (n - j)
        cands = [i for i in range(first, last + 1) if abs(before[i] - ideal) <= room]
        if not cands:  # no boundary near: the nearest one
            cands = [min(range(first, last + 1), key=lambda i: abs(before[i] - ideal))]
        best = min(
            cands,
            key=lambda i: (common_prefix(rows[i - 1], rows[i]), abs(before[i] - ideal)),
        )
        starts.append(best)
    starts.append(len(rows))
    return [list(range(a, b)) for a, b in zip(starts, starts[1:], strict=False)]


def dealt_minibatches(rows: int, n: int) -> list[list[int]]:
    """``n`` mini-batches (capped by ``rows``) of every ``n``-th row: rows in trie
    order dealt in turn, so each group (and each run of rows sharing a prefix) is
    in every mini-batch, as AReaL's packed split spreads a group."""
    n = max(1, min(n, rows))
    return [list(range(k, rows, n)) for k in range(n)]


def dealt_runs(groups: list[dict[str, Any]], n: int) -> list[list[int]]:
    """``n`` mini-batches of the groups' rows (each group's rows in trie order,
    the groups one after another, as `concat_batch` joins them): each group is
    cut into ``n`` runs of consecutive rows where neighbours share least
    (`contiguous_minibatches`, within half a run of equal tokens: a turn kept
    whole before the sizes even), and run ``k`` of group ``g`` joins mini-batch
    ``(g + k) % n``. Every group with ``n`` rows or more is in every mini-batch,
    and a run of rows sharing a prefix (a turn's) stays whole when a group has
    at most ``n`` such runs."""
    n = max(1, n)
    out: list[list[int]] = [[] for _ in range(n)]
    start = 0
    for g, group in enumerate(groups):
        for k, run in enumerate(contiguous_minibatches(group, n, slack=0.5)):
            out[(g + k) % n].extend(start + i for i in run)
        start += group["attention_mask"].shape[0]
    return [rows for rows in out if rows]
