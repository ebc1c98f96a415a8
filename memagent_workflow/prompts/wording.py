"""The built-in wording of the two MemAgent prompts: the project's own, and its
only copy. ``str.format`` templates (slots and loading: ``prompts/__init__.py``).
"""

from __future__ import annotations

MEMORY_UPDATE_PROMPT = """\
You are reading a long document one section at a time and can keep only a \
short memory between sections. Below are a question, your memory of the \
sections read so far, and the next section. Write the new memory: keep every \
fact from the old memory and from the section that may help answer the \
question, and drop the rest. Write only the new memory.

<question>
{question}
</question>

<memory>
{memory}
</memory>

<section>
{chunk}
</section>

New memory:"""

# How a prompt asks for the answer, per memagent.answer_protocol: in
# ``\boxed{}``, or after "the answer is" (case-sensitive, as the original reads
# it). In template form (braces doubled); the eval baselines ask the same way.
ANSWER_ASKS = {
    "boxed": "You may reason briefly first; put the final answer, and nothing "
    "else, inside \\boxed{{}}, e.g. \\boxed{{Paris}}.",
    "answer_is": "You may reason briefly first; end your response with "
    '"Therefore, the answer is (your answer)".',
}

_FINAL_OPENING = (
    "You have read a long document section by section and kept notes in a "
    "memory. Answer the question using only this memory. "
)
_FINAL_SLOTS = """

<question>
{question}
</question>

<memory>
{memory}
</memory>

Answer:"""

FINAL_PROMPTS = {p: _FINAL_OPENING + a + _FINAL_SLOTS for p, a in ANSWER_ASKS.items()}
FINAL_ANSWER_PROMPT = FINAL_PROMPTS["boxed"]
