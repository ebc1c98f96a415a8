"""``memagent.prompts=original``: the original MemAgent's templates read from its
source files, never from the network here: each variant extracted, the tokens it
builds, the pins, the cache and the offline message. The key's spellings and the
eval config's handling of it are checked in test_original_prompts_key.py.

The sources below are synthetic: this project's own words in the shape of the
original's files (the same constant names and Python structure; the training
file's final template shows a literal ``\\boxed{{}}``, the eval files' are
formatted, every template ends with a newline). They are given through the
``:DIR`` spelling, the cache, or a stubbed download, with their own sha256
pinned by monkeypatch. ``FILE_*`` are the same templates written into prompts
files by hand, as docs/prompts.md's rules say.
"""

from __future__ import annotations

import hashlib
import io
import urllib.error
from pathlib import Path

import pytest

from memagent_workflow.prompts import PromptFileError, load_prompts
from memagent_workflow.prompts import original_source as osrc

_MEMORY = '''TEMPLATE = """Read the question, your notes so far and the next part of the text. Rewrite the notes so they keep whatever could answer the question.

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

<section>
{chunk}
</section>

Rewritten notes:
"""
'''  # noqa: W291 (the space after <problem> is part of the shape)
_FINAL = r'''{name} = """Answer the question from your notes. {ask}

<problem> 
{{prompt}}
</problem>

<memory>
{{memory}}
</memory>

Final answer:
"""
'''  # noqa: W291
BOXED = r"Write the answer inside \\boxed{{}}."
ANSWER_IS = 'End with "Therefore, the answer is (answer)".'

TRAIN_SOURCE = (
    '"""Stand-in for recurrent/impls/memory.py."""\nfrom typing import List\n\n\n'
    "class MemoryDataset:\n    keys: List[str] = []\n\n"
    + _MEMORY
    + "\n"
    + _FINAL.format(name="TEMPLATE_FINAL_BOXED", ask=BOXED)
    + "\n\nclass MemoryAgent:\n    def __init__(self, chat):\n"
    "        self.t = chat.format(message=TEMPLATE)\n"
)


def eval_source(ask: str) -> str:
    """Stand-in for taskutils/memory_eval/utils/recurrent(_boxed).py."""
    return (
        "from .aio import get_async_client\n\n"
        + _MEMORY
        + "\n"
        + _FINAL.format(name="TEMPLATE_FINAL", ask=ask)
        + '\nNO_MEMORY = "No notes yet"\n\n\ndef query(prompt, memory):\n'
        "    return TEMPLATE_FINAL.format(prompt=prompt, memory=memory)\n"
    )


SOURCES = {
    osrc.TRAIN_FILE: TRAIN_SOURCE,
    osrc.EVAL_BOXED_FILE: eval_source(BOXED),
    osrc.EVAL_ANSWER_IS_FILE: eval_source(ANSWER_IS),
}

# The same templates in prompts files, by hand: {prompt} is {question}, `|`
# keeps the trailing newline, a brace the model must see is doubled once more.
FILE_MEMORY = """memory_update: |
  Read the question, your notes so far and the next part of the text. Rewrite the notes so they keep whatever could answer the question.

  <problem> 
  {question}
  </problem>

  <memory>
  {memory}
  </memory>

  <section>
  {chunk}
  </section>

  Rewritten notes:
"""  # noqa: W291
FILE_FINAL = """final_answer: |
  Answer the question from your notes. ASK

  <problem> 
  {question}
  </problem>

  <memory>
  {memory}
  </memory>

  Final answer:
"""  # noqa: W291
FILES = {  # variant -> the final template's request, as written in the file
    "train": r"Write the answer inside \boxed{{{{}}}}.",  # shows \boxed{{}}
    "eval-boxed": r"Write the answer inside \boxed{{}}.",  # shows \boxed{}
    "eval-answer_is": ANSWER_IS,
}
PROTOCOL = {"train": "boxed", "eval-boxed": "boxed", "eval-answer_is": "answer_is"}


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    """No test reaches the network; the cache is a fresh folder."""

    def refuse(url, timeout=None):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(osrc, "urlopen", refuse)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def source_dir(tmp_path, monkeypatch) -> Path:
    """The synthetic files at their repository paths, their sha256 pinned."""
    root = tmp_path / "original"
    for path, text in SOURCES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    monkeypatch.setattr(
        osrc, "SHA256", {osrc.COMMIT: {p: sha(t) for p, t in SOURCES.items()}}
    )
    return root


def by_hand(tmp_path: Path, variant: str) -> Path:
    path = tmp_path / f"{variant}.yaml"
    path.write_text(FILE_MEMORY + FILE_FINAL.replace("ASK", FILES[variant]))
    return path


# ------------------------------------------------------------ extraction


@pytest.mark.parametrize("variant", list(FILES))
def test_each_variant_is_extracted_as_written_by_hand(source_dir, tmp_path, variant):
    got = load_prompts(f"original-{variant}:{source_dir}", PROTOCOL[variant])
    want = load_prompts(by_hand(tmp_path, variant))
    assert (got.memory_update, got.final_answer) == (
        want.memory_update,
        want.final_answer,
    )
    assert got.memory_update.endswith("Rewritten notes:\n")  # trailing newline kept
    assert got.final_answer.endswith("Final answer:\n")
    assert "<problem> \n{question}\n</problem>" in got.final_answer
    assert got.source.startswith(f"original-{variant} (")


def test_braces_training_shows_them_doubled_eval_single(source_dir):
    """What the model is shown: the training prompt a literal \\boxed{{}} (never
    formatted by the original), the eval prompt \\boxed{} (formatted)."""
    train = load_prompts(f"original:{source_dir}")
    boxed = load_prompts(f"original-eval-boxed:{source_dir}", "boxed")
    assert r"\boxed{{{{}}}}" in train.final_answer
    assert r"\boxed{{}}" in boxed.final_answer
    assert "{{{{" not in boxed.final_answer
    shown = {"question": "Q?", "memory": "M"}
    assert r"inside \boxed{{}}." in train.final_answer.format(**shown)
    assert r"inside \boxed{}." in boxed.final_answer.format(**shown)
    assert boxed.final_answer.format(**shown).endswith("Final answer:\n")


# ------------------------------------------------------------ token for token


@pytest.mark.parametrize("variant", list(FILES))
@pytest.mark.parametrize("tok", ["qwen_tokenizer", "tokenizer"])
def test_original_key_builds_the_tokens_of_the_file_written_by_hand(
    source_dir, tmp_path, request, variant, tok
):
    tokenizer = request.getfixturevalue(tok)
    key = load_prompts(f"original-{variant}:{source_dir}", PROTOCOL[variant])
    hand = load_prompts(by_hand(tmp_path, variant))
    ids = tokenizer.encode("Brenna lies on the Sile? It does. " * 6)
    memory, chunk = ids[:7], ids[5:40]
    build = "tokens" if variant == "train" else "text"
    for question in ["Which river flows through Brenna?", "  {prompt}?  "]:
        a = key.memory_template(tokenizer, question, build).build(memory, chunk)
        b = hand.memory_template(tokenizer, question, build).build(memory, chunk)
        assert a.tolist() == b.tolist()
        a = key.final_template(tokenizer, question, build).build(memory)
        b = hand.final_template(tokenizer, question, build).build(memory)
        assert a.tolist() == b.tolist()


# ------------------------------------------------------------ spellings, choice


def test_a_final_template_asking_another_answer_form_is_refused(source_dir):
    with pytest.raises(PromptFileError, match="original-eval-answer_is"):
        load_prompts(f"original:{source_dir}", "answer_is")
    with pytest.raises(PromptFileError, match="answer_protocol=answer_is"):
        load_prompts(f"original-eval-answer_is:{source_dir}", "boxed")
    load_prompts(f"original-eval-answer_is:{source_dir}")  # None: not checked


# ------------------------------------------------------------ pins, cache, offline


def test_a_file_other_than_the_pinned_one_is_refused(source_dir, monkeypatch):
    monkeypatch.setattr(osrc, "SHA256", {osrc.COMMIT: {osrc.TRAIN_FILE: "0" * 64}})
    with pytest.raises(PromptFileError, match="not the pinned") as exc:
        load_prompts(f"original:{source_dir}")
    assert osrc.source_url(osrc.TRAIN_FILE) in str(exc.value)


def test_an_unpinned_commit_is_read_unchecked(source_dir, tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "memory.py").write_text(TRAIN_SOURCE)  # by file name also works
    texts = load_prompts(f"original@{'e' * 40}:{flat}")
    assert "@eeeeeeeeeeee:" in texts.source


def test_offline_the_message_names_the_url_and_how_to_give_the_file():
    with pytest.raises(PromptFileError) as exc:
        load_prompts("original")
    msg = str(exc.value)
    url = (
        f"https://raw.githubusercontent.com/{osrc.REPO}/{osrc.COMMIT}/{osrc.TRAIN_FILE}"
    )
    assert url in msg and "network disabled" in msg
    assert str(osrc.cache_dir() / "original" / osrc.COMMIT / osrc.TRAIN_FILE) in msg
    assert "memagent.prompts=original-train:DIR" in msg


def test_a_download_is_checked_and_cached(monkeypatch, source_dir):
    fetched: list[str] = []

    def serve(url, timeout=None):
        fetched.append(url)
        path = url.split(f"/{osrc.COMMIT}/", 1)[1]
        return io.BytesIO(SOURCES[path].encode())

    monkeypatch.setattr(osrc, "urlopen", serve)
    first = load_prompts("original-eval-boxed", "boxed")
    assert fetched == [osrc.source_url(osrc.EVAL_BOXED_FILE)]
    cached = osrc.cache_dir() / "original" / osrc.COMMIT / osrc.EVAL_BOXED_FILE
    assert cached.read_text() == SOURCES[osrc.EVAL_BOXED_FILE]
    assert load_prompts("original-eval-boxed", "boxed") == first  # no new fetch
    assert len(fetched) == 1
    # A download that is not the pinned file is refused and not cached.
    monkeypatch.setattr(osrc, "SHA256", {osrc.COMMIT: {osrc.TRAIN_FILE: "1" * 64}})
    with pytest.raises(PromptFileError, match="not the pinned.*give the file: fetch"):
        load_prompts("original")
    assert not (osrc.cache_dir() / "original" / osrc.COMMIT / osrc.TRAIN_FILE).exists()
