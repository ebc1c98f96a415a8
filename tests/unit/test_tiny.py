"""The tiny offline Qwen2 model and tokenizer (standin.tiny_model)."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

from standin.build_cache import MARKER_FILE
from standin.tiny_model import build_tiny_model, main


def test_build_is_deterministic(tiny_model_dir, tmp_path):
    again = build_tiny_model(tmp_path / "again", seed=0)
    other = build_tiny_model(tmp_path / "other", seed=1)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (again / name).read_bytes() == (tiny_model_dir / name).read_bytes(), name
    # The tokenizer does not depend on the seed; the weights do.
    assert (other / "tokenizer.json").read_bytes() == (
        again / "tokenizer.json"
    ).read_bytes()
    assert (other / "model.safetensors").read_bytes() != (
        again / "model.safetensors"
    ).read_bytes()


def test_reuse_overwrite_and_refusal(tmp_path):
    out = build_tiny_model(tmp_path / "m", seed=3)
    marker = json.loads((out / MARKER_FILE).read_text())
    assert marker["seed"] == 3
    weights = out / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    assert build_tiny_model(out, seed=3) == out
    assert weights.stat().st_mtime_ns == stamp  # reused, not rebuilt
    build_tiny_model(out, seed=4)  # another seed: rebuilt in place
    assert json.loads((out / MARKER_FILE).read_text())["seed"] == 4
    build_tiny_model(out, seed=4, overwrite=True)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        build_tiny_model(foreign)


def test_cli(tmp_path, capsys):
    main(["--out", str(tmp_path / "cli"), "--seed", "2"])
    assert capsys.readouterr().out.strip() == str(tmp_path / "cli")
    assert json.loads((tmp_path / "cli" / MARKER_FILE).read_text())["seed"] == 2


def test_loads_with_hf_and_areal(tiny_model_dir):
    from areal.utils.hf_utils import load_hf_tokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    gen = GenerationConfig.from_pretrained(tiny_model_dir)
    cfg = model.config
    assert cfg.model_type == "qwen2" and cfg.max_position_embeddings >= 16384
    assert cfg.vocab_size >= len(tok)
    assert tok.eos_token == "<|im_end|>" and cfg.eos_token_id == tok.eos_token_id
    assert tok.pad_token == "<|endoftext|>" and cfg.pad_token_id == tok.pad_token_id
    assert tok.eos_token_id in gen.eos_token_id
    assert tok.convert_tokens_to_ids("<|im_start|>") < len(tok)
    areal_tok = load_hf_tokenizer(str(tiny_model_dir))
    assert areal_tok.eos_token_id == tok.eos_token_id
    assert areal_tok.pad_token_id == tok.pad_token_id
    with torch.no_grad():
        logits = model(torch.tensor([[1, 2, 3]])).logits
    assert logits.shape == (1, 3, cfg.vocab_size)
    assert torch.isfinite(logits).all()


def test_chat_template_and_round_trip(tiny_model_dir):
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    msgs = [{"role": "user", "content": "Where did Alice Smith go in May 1999?"}]
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nYou are a helpful assistant.")
    assert text.endswith(
        "<|im_start|>user\nWhere did Alice Smith go in May 1999?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    for thinking in (False, True):
        assert (
            tok.apply_chat_template(
                msgs,
                tokenize=False,
                add_generation_prompt=True,
                enable_thinking=thinking,
            )
            == text
        )
    no_prompt = tok.apply_chat_template(msgs, tokenize=False)
    assert no_prompt + "<|im_start|>assistant\n" == text
    sys_text = tok.apply_chat_template(
        [{"role": "system", "content": "Be terse."}] + msgs, tokenize=False
    )
    assert sys_text.startswith("<|im_start|>system\nBe terse.<|im_end|>\n")
    assert "helpful" not in sys_text

    ids = tok.encode(text, add_special_tokens=False)
    assert ids[0] == tok.convert_tokens_to_ids("<|im_start|>")
    assert ids.count(tok.eos_token_id) == 2
    assert tok.decode(ids) == text
    for s in ["Document 12: Émile lived in Zürich for 42 years.\n\n  x", "😀 \t tabs"]:
        assert tok.decode(tok.encode(s, add_special_tokens=False)) == s

    out = tok.apply_chat_template(
        msgs + [{"role": "assistant", "content": "Paris"}],
        return_dict=True,
        return_assistant_tokens_mask=True,
    )
    masked = [
        t for t, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m
    ]
    assert tok.decode(masked) == "Paris<|im_end|>"
