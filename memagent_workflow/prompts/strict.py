"""A prompts file's JSON or YAML, parsed strictly: a key given twice is refused.

Both ``json.loads`` and ``yaml.safe_load`` keep the last of two equal keys, so a
file that gives ``memory_update`` twice would silently lose the first template.
"""

from __future__ import annotations

import json
from typing import Any

import yaml


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if twice := sorted({k for k in keys if keys.count(k) > 1}):
        raise ValueError(f"key(s) {twice} given twice")
    return dict(pairs)


def strict_json(text: str) -> Any:
    """``json.loads``, refusing a key given twice (a ``ValueError``)."""
    return json.loads(text, object_pairs_hook=_unique_keys)


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.safe_load``'s loader, refusing a key given twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor`: merged keys may be overridden
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            try:
                first = lines.get(key)
            except TypeError:  # unhashable: SafeLoader refuses it below
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    problem=f"key {key!r} given twice (lines {first} and {line})",
                    problem_mark=key_node.start_mark,
                )
            lines[key] = line
        return super().construct_mapping(node, deep)


def strict_yaml(text: str) -> Any:
    """``yaml.safe_load``, refusing a key given twice (a ``yaml.YAMLError``)."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: no tags run
