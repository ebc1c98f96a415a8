"""bench/tree_bench.py at toy sizes (``--smoke``): one run puts packed, tree in the
paper's order and tree with the section first side by side, in tokens at both
micro-batch sizes and in one PPO update's wall time, counted by the actor."""

from __future__ import annotations

from bench.tree_bench import MODES, main


def test_the_three_modes_side_by_side(tmp_path):
    result = main(["--smoke", "--out", str(tmp_path / "tree.json")])
    assert (tmp_path / "tree.json").is_file()
    for table in (result["tokens"], result["wall"]):
        sizes = sorted({r["max_tokens_per_mb"] for r in table})
        assert (
            len(sizes) == 2 or len(set(sizes)) == 1
        )  # the smoke's two may round alike
        for size in sizes:
            at = [r for r in table if r["max_tokens_per_mb"] == size]
            rows = {r["mode"]: r for r in at if r.get("padding") in (None, "block")}
            assert set(rows) == set(MODES)
            # the section first shares the section: fewer tokens than packed
            assert rows["tree+section_first"]["computed"] < rows["packed"]["computed"]
    assert all(r["step_s"] > 0 and r["rows"] > 0 for r in result["wall"])
    for r in result["tokens"]:  # padding only adds: the tries hold no more
        assert r["trie_tokens"] <= r["computed"] <= r["computed_maximum"]
        assert r["trie_tokens"] < r["rows"] or r["mode"] == "packed"
        # padded to the block: less than a block a trie over what the tries hold
        assert r["computed"] - r["trie_tokens"] < 128 * max(r["tries"], 1)
    # the actor's own count of the update: the block's padding no more than the maximum's
    for size in {r["max_tokens_per_mb"] for r in result["wall"]}:
        tree = [
            r for r in result["wall"] if r["max_tokens_per_mb"] == size and r["padding"]
        ]
        by = {(r["mode"], r["padding"]): r["computed"] for r in tree}
        for mode in MODES[1:]:
            assert by[mode, "block"] <= by[mode, "maximum"]
            assert by[mode, "block"] % 128 == 0
    cuts = {(r["order"], r["ppo_n_minibatches"], r["cut"]): r for r in result["cuts"]}
    for order, n, _ in cuts:  # whole groups share most, dealt rows least
        share = {
            c: cuts[order, n, c]["tries_of_packed"] for c in ("groups", "runs", "dealt")
        }
        assert share["groups"] <= share["runs"] <= share["dealt"] <= 1, (
            order,
            n,
            share,
        )
    assert (
        cuts["section_first", 2, "runs"]["tries_of_packed"]
        < cuts["section_first", 2, "dealt"]["tries_of_packed"]
    )
