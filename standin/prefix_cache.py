"""The stand-in's count of prefix-cache hits, reported as SGLang reports them.

SGLang's radix cache keeps the KV of prompts it served; a request whose prompt
starts with one of them computes only the rest, and ``meta_info.cached_tokens``
says how many prompt tokens it found cached. The stand-in computes every prompt
whole (it is a CPU imitation), but keeps the same books: `PrefixCache` records
every prompt's prefixes (per LoRA adapter, as SGLang's cache is keyed) and
answers how long the longest recorded one is. New weights empty it, as they do
SGLang's (``/flush_cache`` too). A group's episodes read the same section at the
same turn, so their requests to one server hit each other's prefixes.
"""

from __future__ import annotations

import threading


class PrefixCache:
    """Hashes of every served prompt prefix; emptied past ``max_entries``."""

    def __init__(self, max_entries: int = 4_000_000):
        self.max_entries = max_entries
        self._seen: set[int] = set()
        self._lock = threading.Lock()

    def serve(self, ids: list[int], adapter: str | None = None) -> int:
        """Prompt tokens of ``ids`` already cached; ``ids``' prefixes recorded.
        (SGLang computes at least the last prompt token: at most len - 1.)"""
        h = hash(("prefix-cache", adapter))
        hashes = []
        for tok in ids:
            h = hash((h, tok))
            hashes.append(h)
        with self._lock:
            cached = 0
            for i, x in enumerate(hashes):
                if x not in self._seen:
                    break
                cached = i + 1
            if len(self._seen) + len(hashes) > self.max_entries:
                self._seen.clear()
            self._seen.update(hashes)
        return min(cached, max(len(ids) - 1, 0))

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()
