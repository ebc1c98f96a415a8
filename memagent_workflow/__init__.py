"""MemAgent on AReaL: what a GPU run imports.

The algorithm sits at the top: ``workflow`` (the episode loop, read top-down),
``prompts``, ``chunking``, ``context``, ``reward``, ``advantage``, ``rows`` and
``config``. ``data/`` holds the row schema and data preparation, ``eval/`` the
RULER-HQA evaluation. The CPU stand-in for SGLang lives outside this package.
"""
