"""The training rewards, and how a final answer is read from a response.

Two answer protocols, picked by ``memagent.answer_protocol`` (the same key in
training and eval configs): ``boxed`` (the final answer in ``\\boxed{}``, as
the released models were trained) and ``answer_is`` ("Therefore, the answer is
...", what the original evaluation script asked for). ``extract_answer`` reads
an answer as the original evaluation does (``taskutils/memory_eval/ruler_hqa.py``
with ``utils/__init__.py``), quirks included; training logs its metrics on it
and the ``answer_is`` rewards score it. The evaluation's per-sample scores are
in ``eval/scoring.py``.

Two built-in training rewards, picked by ``memagent.reward``:

- ``original`` (default): the verifier the released MemAgent models were
  trained with (verl's HotpotQA reward): only the last 300 characters of the
  response count, lower-cased; the answer is the last ``\\boxed{}`` (or the
  ``\\boxed answer`` space form up to the next ``$``); it must equal a gold
  answer after removing spaces and a few LaTeX tokens. Articles and
  punctuation are kept, so ``The Beatles`` is not ``Beatles``.
- ``squad``: the last complete ``\\boxed{}`` anywhere in the response, exact
  match after SQuAD normalisation (case, articles, punctuation, spaces): more
  lenient than the original.

Both read only the text after a final response's last ``</think>`` when
something follows it (``answer_text``, as the evaluation does), so a think
block never scores. With ``answer_protocol=answer_is`` both read the answer
``extract_answer`` finds instead of a box. Any other ``memagent.reward`` is an
import string (``package.module.function``) of a function
``(response, golds) -> float``, given the final response as generated,
whatever the protocol.

The SQuAD-normalised metrics (``sub_em``, ``exact_match``, ``f1``) logged
during training and scored by the eval: ``reward/squad.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from areal.utils.dynamic_import import import_from_string

from memagent_workflow.reward.squad import exact_match, gold_list

RewardFn = Callable[[str, list[str]], float]

_BOX = "\\boxed{"

# ------------------------------------------------------------------ the box


def last_box(text: str, *, original: bool = False) -> str | None:
    """Content of the last ``\\boxed{...}`` in ``text`` (nested braces ok), or None.

    ``original=False``: the last complete box; when the last one is
    unterminated an earlier complete one counts. ``original=True``: the box as
    the original verifier and evaluation read it. A ``\\boxed `` followed by a
    space wins wherever it is: the answer is what follows its last occurrence,
    up to the next ``$``. Otherwise only the last ``\\boxed`` is brace-matched
    and must read ``\\boxed{...}`` (``\\boxedx{..}``: None); unterminated, it
    gives None. (The original also finds an ``\\fbox{...}`` when there is no
    ``\\boxed``, but never accepts it as an answer, so it is not looked for.)
    """
    if original and "\\boxed " in text:
        return text.rsplit("\\boxed ", 1)[1].split("$", 1)[0]
    start = text.rfind("\\boxed" if original else _BOX)
    while start != -1:
        depth = 0
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    box = text[start : i + 1]
                    if not box.startswith(_BOX):  # only when original
                        return None
                    return box[len(_BOX) : -1]
        if original:
            return None
        start = text.rfind(_BOX, 0, start)
    return None


# ------------------------------------------------------------ the protocols

PROTOCOLS = ("boxed", "answer_is")
_ANSWER_IS = "the answer is"
# Two DeepSeek chat special tokens the original deletes from an extracted answer
# (full-width bars, U+2581 in the second).
_DEEPSEEK_TOKENS = (
    "<\uff5cAssistant\uff5c>",
    "<\uff5cend\u2581of\u2581sentence\uff5c>",
)


def check_protocol(protocol: str) -> str:
    """``protocol`` if it is one of ``PROTOCOLS``; a clear error otherwise."""
    if protocol not in PROTOCOLS:
        raise ValueError(
            f"memagent.answer_protocol={protocol!r}: choose one of {list(PROTOCOLS)}"
        )
    return protocol


def after_think(text: str) -> str:
    """The original's ``extract_solution`` (its env FORCE_THINK unset, the
    default): the text after the last ``</think>``, stripped; the text itself
    when it has no ``</think>``."""
    if "</think>" not in text:
        return text
    return text.split("</think>")[-1].strip()


def answer_text(response: str) -> str:
    """The part of a final response its answer is read from, by the training
    rewards and by evaluation alike: the text after the last ``</think>``
    (stripped), so a think block (a Qwen3 that thinks although asked not to)
    never scores; the response as it is when it has no ``</think>``, or when
    nothing follows its last one (the original evaluation's fallback)."""
    return after_think(response) or response


def _answer_is(text: str) -> str | None:
    """The original ``extract_answer``: the text after the last "the answer is"."""
    text = text.replace("*", "")  # markdown bold/italics: every '*' goes
    if _ANSWER_IS not in text:  # case-sensitive: "The answer is" does not match
        return None
    ans = text.rsplit(_ANSWER_IS, 1)[-1].strip()  # the LAST occurrence
    for token in _DEEPSEEK_TOKENS:
        ans = ans.replace(token, "")
    # Surrounding white space, then dots ("Paris." -> "Paris"), then space again.
    return ans.strip().strip(".").strip()


def _original_box(text: str) -> str | None:
    # The original eval's ``extract_boxed_answer`` reads the whole text (no
    # 300-character window, no lower-casing) as the verifier does; where its
    # asserts would stop the script (``\\fbox{..}``, ``\\boxedx{..}``): None.
    return last_box(text, original=True)


_EXTRACTORS: dict[str, Callable[[str], str | None]] = {
    "boxed": _original_box,
    "answer_is": _answer_is,
}


def extract_answer(response: str, protocol: str) -> str | None:
    """The answer the original evaluation reads from a final-turn ``response``.

    As ``ruler_hqa.py`` does: the response is stripped; the text after its last
    ``</think>`` is searched, or the whole stripped response when nothing
    follows that tag; then ``answer_is`` takes the text after the last "the
    answer is" and ``boxed`` the last box. None when nothing is found.
    """
    extract = _EXTRACTORS[check_protocol(protocol)]
    return extract(answer_text(response.strip()))


# ------------------------------------------------------- the original verifier

ORIGINAL_WINDOW = 300  # characters at the end of the response the original reads
# The MATH-style clean-up the original applies to both sides, in its order;
# spaces are removed last.
_ORIGINAL_EDITS = (
    ("\n", ""),
    ("\\!", ""),
    ("\\\\", "\\"),
    ("tfrac", "frac"),
    ("dfrac", "frac"),
    ("\\left", ""),
    ("\\right", ""),
    ("^{\\circ}", ""),
    ("^\\circ", ""),
    ("\\$", ""),
    ("\\%", ""),
    (" .", " 0."),
    ("{.", "{0."),
)


def original_normalize(s: str) -> str:
    """The original verifier's string clean-up: LaTeX tokens out, spaces out."""
    for old, new in _ORIGINAL_EDITS:
        s = s.replace(old, new)
    return s.replace(" ", "")


def _original_equal(answer: str, golds: str | list[str]) -> float:
    """The original verifier's comparison: case folded, ``original_normalize``d."""
    answer = original_normalize(answer.lower())
    return float(any(answer == original_normalize(g.lower()) for g in gold_list(golds)))


# ------------------------------------------------------- training rewards


def original_reward(response: str, golds: str | list[str]) -> float:
    """The original MemAgent training verifier (verl's HotpotQA reward).

    1.0 iff the boxed answer in the last 300 characters of ``response``'s
    ``answer_text``, lower-cased and cleaned by ``original_normalize``, equals
    a gold answer treated the same way; else 0.0. (A response without
    ``</think>``, all the original's models wrote, is read whole, as there.)
    """
    text = answer_text(response)
    answer = last_box(text[-ORIGINAL_WINDOW:].lower(), original=True)
    return 0.0 if answer is None else _original_equal(answer, golds)


def squad_reward(response: str, golds: str | Iterable[str]) -> float:
    """1.0 iff the last complete boxed answer of ``response``'s ``answer_text``
    exact-matches a gold after SQuAD normalisation (case, articles, punctuation
    and spaces ignored)."""
    boxed = last_box(answer_text(response))
    return 0.0 if boxed is None else exact_match(boxed, golds)


def answer_is_reward(response: str, golds: str | list[str]) -> float:
    """``original`` for ``answer_is``: the original verifier's comparison (case
    folded, LaTeX tokens and spaces removed, any gold) on the answer
    ``extract_answer(response, "answer_is")`` finds; none found scores 0."""
    answer = extract_answer(response, "answer_is")
    return _original_equal(answer, golds) if answer else 0.0


def answer_is_squad_reward(response: str, golds: str | list[str]) -> float:
    """``squad`` for ``answer_is``: SQuAD exact match of the extracted answer."""
    answer = extract_answer(response, "answer_is")
    return exact_match(answer, golds) if answer else 0.0


#: The built-in rewards by ``memagent.reward``, then by answer protocol.
REWARDS: dict[str, dict[str, RewardFn]] = {
    "original": {"boxed": original_reward, "answer_is": answer_is_reward},
    "squad": {"boxed": squad_reward, "answer_is": answer_is_squad_reward},
}


def reward_function(name: str, protocol: str = "boxed") -> RewardFn:
    """The training reward ``name`` (``memagent.reward``) for ``protocol``
    (``memagent.answer_protocol``): a built-in name, or the import string of a
    function ``(response, golds) -> float``."""
    check_protocol(protocol)
    if name in REWARDS:
        return REWARDS[name][protocol]
    key = f"memagent.reward={name!r}"
    if not isinstance(name, str) or "." not in name:
        raise ValueError(
            f"{key}: choose one of {sorted(REWARDS)} or give the import string "
            "of a function (response, golds) -> float, e.g. 'my_pkg.rewards.score'"
        )
    try:
        fn = import_from_string(name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(f"{key} does not resolve: {exc}") from None
    if not callable(fn):
        raise ValueError(
            f"{key} names a {type(fn).__name__}, not a function "
            "(response, golds) -> float"
        )
    return fn
