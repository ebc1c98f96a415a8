"""The limits of one request, each refused in OpenAI's error body naming the
limit: a body or document too large (413), too many chunks (413), a question
too long for the service or for the prompts' room (400), a document that is
not text (400).

The document is encoded as ``ask.py`` encodes a file (``encode_stream``: the
same pieces, the same tokens), so a request and ``ask.py`` read the same
chunks.
"""

from __future__ import annotations

import io

import numpy as np

from memagent_workflow.eval.ask import AskRefused, check_question, encode_stream
from memagent_workflow.eval.workflow import MemAgentEvalWorkflow
from memagent_workflow.serve.config import ServeConfig
from memagent_workflow.serve.shapes import ServeError, bad_request

CHARS_PER_TOKEN = (
    16  # a question longer than this per allowed token is refused untokenized
)


def too_large(message: str, param: str | None, code: str) -> ServeError:
    return ServeError(413, message, code=code, param=param)


class Limits:
    """``serve:``'s limits, checked against one workflow's tokenizer and prompts."""

    def __init__(self, cfg: ServeConfig, workflow: MemAgentEvalWorkflow):
        self.cfg = cfg
        self.workflow = workflow

    def body(self, n_bytes: int) -> None:
        """413 past ``serve.max_body_bytes`` (checked while the body arrives)."""
        if n_bytes > self.cfg.max_body_bytes:
            raise too_large(
                f"the request body passes {self.cfg.max_body_bytes} bytes "
                "(serve.max_body_bytes)",
                None,
                "request_too_large",
            )

    def question_length(self, question: str, param: str) -> None:
        """400 for a question too long to tokenize: more than
        ``CHARS_PER_TOKEN`` characters per token of ``serve.max_question_tokens``
        (checked on the event loop before the question is tokenized)."""
        cap = CHARS_PER_TOKEN * self.cfg.max_question_tokens
        if len(question) > cap:
            raise bad_request(
                f"the question has {len(question)} characters, more than "
                f"{CHARS_PER_TOKEN} per token of serve.max_question_tokens="
                f"{self.cfg.max_question_tokens}",
                param,
                "question_too_long",
            )

    def question(self, question: str, param: str) -> None:
        """400 past ``serve.max_question_tokens``, or where the prompts leave
        the question no room (``ask.py``'s check)."""
        n = len(self.workflow.tokenizer.encode(question, add_special_tokens=False))
        if n > self.cfg.max_question_tokens:
            raise bad_request(
                f"the question has {n} tokens, more than "
                f"serve.max_question_tokens={self.cfg.max_question_tokens}",
                param,
                "question_too_long",
            )
        try:
            check_question(self.workflow, question)
        except AskRefused as exc:
            text = str(exc).removeprefix("--question: ")
            raise bad_request(
                f"the question: {text}", param, "question_too_long"
            ) from None

    def encode(self, document: str, param: str) -> np.ndarray:
        """The document's token ids (its bytes were bounded by ``body``)."""
        try:
            return encode_stream(self.workflow.tokenizer, io.StringIO(document), param)
        except AskRefused as exc:
            raise bad_request(str(exc).removeprefix("--document "), param) from None

    def document(self, n_tokens: int, param: str) -> int:
        """The chunks a document of ``n_tokens`` needs; 413 past
        ``serve.max_document_tokens`` or ``serve.max_chunks``."""
        cfg, chunk_tokens = self.cfg, self.workflow.chunk_tokens
        if n_tokens > cfg.max_document_tokens:
            raise too_large(
                f"the document has {n_tokens} tokens, more than "
                f"serve.max_document_tokens={cfg.max_document_tokens}",
                param,
                "document_too_large",
            )
        chunks = -(-n_tokens // chunk_tokens)
        for key, cap in (
            ("serve.max_chunks", cfg.max_chunks),
            ("memagent.max_chunks", self.workflow.max_chunks),
        ):
            if cap is not None and chunks > cap:
                raise too_large(
                    f"the document needs {chunks} chunks of {chunk_tokens} tokens, "
                    f"more than {key}={cap}",
                    param,
                    "too_many_chunks",
                )
        return chunks
