"""RULER task generation with the real Qwen2.5 vocabulary: each task at 8K tokens
holds its needles, its gold follows from the context, its length is within 2%
of the target, and the same seed gives the same bytes; bad inputs are refused."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from examples import prepare_eval_data as cli
from memagent_workflow.eval.ruler import haystack
from memagent_workflow.eval.ruler.fit import TOLERANCE, FitError
from memagent_workflow.eval.ruler.generate import Generator, generate
from memagent_workflow.eval.ruler.tasks import NEEDLE, PAPER_TASKS, TASKS
from memagent_workflow.eval.sets import load_eval_file
from standin.ruler_haystacks import hotpot, prose, squad


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("haystacks")
    paths = {
        "essay": root / "essays.json",
        "squad": root / "dev-v2.0.json",
        "hotpot": root / "hotpot_dev.json",
        "short": root / "short.txt",
    }
    paths["essay"].write_text(json.dumps({"text": prose(1500)}))
    paths["squad"].write_text(json.dumps(squad()))
    paths["hotpot"].write_text(json.dumps(hotpot()))
    paths["short"].write_text(prose(30, seed=1))
    return paths


@pytest.fixture(scope="module")
def generator(qwen_tokenizer, files) -> Generator:
    hays = [haystack.read_file(files[k]) for k in ("essay", "squad", "hotpot")]
    return Generator(qwen_tokenizer, seed=7, haystacks=hays)


def needles_of(context: str, kind: str) -> dict[str, list[str]]:
    """key -> values of every needle sentence in the context."""
    pattern = re.escape(NEEDLE).replace(r"\{kind\}", re.escape(kind))
    pattern = pattern.replace(r"\{key\}", r"(\S+)").replace(r"\{value\}", r"(\S+)")
    found: dict[str, list[str]] = {}
    for key, value in re.findall(pattern.replace(r"\.$", ""), context):
        found.setdefault(key, []).append(value.rstrip("."))
    return found


def gold_from_context(sample: dict) -> list[str]:
    """The answer, worked out from the context alone (not from the generator)."""
    task = TASKS[sample["task"]]
    ctx = sample["context"]
    if task.family == "niah":
        table = needles_of(ctx, task.params["value_type"])
        return [v for k in sample["keys"] for v in table[k]]
    if task.family == "vt":
        value = re.search(r"assigned the value (\d+)", sample["question"]).group(1)
        assigned = dict(re.findall(r"VAR ([A-Z]{5}) = (\S+(?: [A-Z]{5})?)", ctx))
        names = {n for n, v in assigned.items() if v == value}
        grew = True
        while grew:
            new = {
                n
                for n, v in assigned.items()
                if v.startswith("VAR ") and v[4:] in names
            }
            grew = bool(new - names)
            names |= new
        return sorted(names)
    if task.family == "fwe":
        counts = Counter(w for w in ctx.split() if w != "...")
        top = counts.most_common(4)
        assert top[2][1] > top[3][1]  # the three are unambiguous
        return [w for w, _ in top[:3]]
    raise AssertionError(task.family)


@pytest.mark.parametrize("task", [*PAPER_TASKS, "qa_2"])
def test_each_task_at_8k_tokens_holds_its_gold_and_length(
    task, generator, qwen_tokenizer
):
    for index in range(2):
        s = generator.sample(task, 8192, index)
        # the length, recounted here: question + context + reserved answer tokens
        q = len(qwen_tokenizer.encode(s["question"], add_special_tokens=False))
        c = len(qwen_tokenizer.encode(s["context"], add_special_tokens=False))
        assert s["length"] == q + c + TASKS[task].tokens_to_generate
        assert (1 - TOLERANCE) * 8192 <= s["length"] <= 8192
        for answer in s["answers"]:
            assert answer in s["context"]
        if TASKS[task].family == "qa":
            continue  # the answer sits in its gold paragraph (checked above)
        assert sorted(gold_from_context(s)) == sorted(s["answers"])


@pytest.mark.parametrize("task", ["niah_multivalue", "niah_multikey_2", "vt", "qa_1"])
def test_each_sample_carries_its_evidence_as_the_context_holds_it(task, generator):
    s = generator.sample(task, 2048, 1)
    assert s["evidence"] and all(e in s["context"] for e in s["evidence"])
    t = TASKS[task]
    if t.family == "niah":  # the asked keys' needles, and no other
        kind = t.params["value_type"]
        want = [NEEDLE.format(kind=kind, key=k, value=v) for k in s["keys"]
                for v in needles_of(s["context"], kind)[k]]  # fmt: skip
        assert sorted(s["evidence"]) == sorted(want)
    elif t.family == "vt":  # the asked chain: every name the answer lists
        assert [e.split()[1] for e in s["evidence"]] == s["answers"]
    else:  # the gold paragraph, which holds the answer
        assert any(a in e for e in s["evidence"] for a in s["answers"])


def test_needle_haystack_never_repeats_an_asked_key(generator):
    for task in ("niah_multikey_2", "niah_multikey_3"):
        s = generator.sample(task, 8192, 0)
        kind = TASKS[task].params["value_type"]
        table = needles_of(s["context"], kind)
        assert len(table) > 100  # a haystack of distractor needles
        assert [len(table[k]) for k in s["keys"]] == [1]


def test_same_seed_same_bytes_other_seed_other_bytes(qwen_tokenizer, files, tmp_path):
    hays = [haystack.read_file(files["essay"])]
    runs = {}
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        tasks, out = ["niah_multivalue", "fwe"], tmp_path / name
        generate(qwen_tokenizer, tasks, [2048], out, seed, 3, hays)
        runs[name] = {p.name: p.read_bytes() for p in (tmp_path / name).iterdir()}
    assert runs["a"] == runs["b"] and set(runs["a"]) == {
        "eval_niah_multivalue_2048.json",
        "eval_fwe_2048.json",
    }
    assert all(runs["a"][k] != runs["c"][k] for k in runs["a"])
    samples = load_eval_file(tmp_path / "a" / "eval_fwe_2048.json")  # the eval schema
    assert [s["id"] for s in samples] == ["fwe_2048_0", "fwe_2048_1", "fwe_2048_2"]


def test_haystack_too_short_is_refused_unless_repeated(qwen_tokenizer, files):
    short = [haystack.read_file(files["short"])]
    gen = Generator(qwen_tokenizer, seed=0, haystacks=short)
    with pytest.raises(FitError, match=r"short\.txt is too short.*--repeat-haystack"):
        gen.sample("niah_single_2", 8192, 0)
    gen = Generator(qwen_tokenizer, seed=0, haystacks=short, repeat_haystack=True)
    assert gen.sample("niah_single_2", 8192, 0)["length"] >= 0.98 * 8192


def test_qa_pool_too_small_is_refused(qwen_tokenizer, tmp_path):
    path = tmp_path / "tiny_squad.json"
    path.write_text(json.dumps(squad(n_articles=2)))
    gen = Generator(qwen_tokenizer, seed=0, haystacks=[haystack.read_file(path)])
    with pytest.raises(FitError, match=r"tiny_squad\.json is too short"):
        gen.sample("qa_1", 8192, 0)


def run_cli(args: list[str], capsys) -> tuple[int, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.fixture(scope="module")
def tokenizer_dir(qwen_tokenizer, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("qwen_tok")
    qwen_tokenizer.save_pretrained(path)
    return path


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--ruler", "niah_single_9"], "unknown RULER task 'niah_single_9'"),
        (["--ruler", "vt", "--lengths", "120"], "vt at length 120: the needles"),
        (["--ruler", "niah_single_2"], "task niah_single_2 needs the essay haystack"),
        (["--ruler", "qa_1"], "task qa_1 needs the squad haystack"),
        (
            ["--ruler", "vt", "--haystack", "missing.json"],
            "--haystack missing.json: no such",
        ),
    ],
)
def test_cli_bad_input_names_the_problem_and_writes_nothing(
    extra, message, tokenizer_dir, tmp_path, capsys
):
    out = tmp_path / "out"
    args = ["--tokenizer", str(tokenizer_dir), "--output", str(out), "--samples", "1"]
    if "--lengths" not in extra:
        args += ["--lengths", "1024"]
    code, text = run_cli(extra + args, capsys)
    assert code == 2 and message in text
    assert not out.exists() or not any(out.iterdir())


def test_cli_writes_every_task_file(tokenizer_dir, files, tmp_path, capsys):
    out = tmp_path / "out"
    code, text = run_cli(
        [
            "--ruler",
            "ruler,qa_2",
            "--lengths",
            "2048",
            "--tokenizer",
            str(tokenizer_dir),
            "--output",
            str(out),
            "--samples",
            "1",
            "--seed",
            "5",
            "--haystack",
            str(files["essay"]),
            "--haystack",
            str(files["squad"]),
            "--haystack",
            str(files["hotpot"]),
        ],
        capsys,
    )
    assert code == 0, text
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"eval_{t}_2048.json" for t in [*PAPER_TASKS, "qa_2"])
    for path in out.iterdir():
        (s,) = load_eval_file(path)
        raw = json.loads(path.read_text())[0]
        assert raw["metric"] == TASKS[raw["task"]].metric
        assert 0.98 * 2048 <= raw["length"] <= 2048 and s["answers"] == raw["answers"]


def test_hf_dataset_reads_a_local_dataset_folder(tmp_path):
    folder = tmp_path / "essays"
    folder.mkdir()
    rows = [{"text": prose(20, seed=i)} for i in range(3)]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    hay = haystack.read_hf_dataset(str(folder))
    assert hay.kind == "essay" and len(hay.sentences) == 60
    with pytest.raises(haystack.HaystackError, match="no split 'test'"):
        haystack.read_hf_dataset(f"{folder}:test")
