"""The stand-in's prefix-cache books (standin/prefix_cache.py)."""

from standin.prefix_cache import PrefixCache


def test_the_longest_served_prefix_is_cached_per_adapter_and_bounded():
    cache = PrefixCache(max_entries=12)
    assert cache.serve([1, 2, 3, 4]) == 0
    assert cache.serve([1, 2, 3, 9]) == 3
    assert cache.serve([1, 2]) == 1  # SGLang computes the last token anyway
    assert cache.serve([1, 2, 3, 4], adapter="a") == 0  # another adapter's cache
    assert cache.serve([5, 6, 7, 8, 9, 10]) == 0  # past 12 entries: emptied
    assert cache.serve([1, 2, 3, 4]) == 0
    cache.clear()
    assert cache.serve([5, 6]) == 0
