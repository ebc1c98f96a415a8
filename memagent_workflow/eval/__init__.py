"""RULER-HQA evaluation: config, eval sets and their building, pre-run checks,
the eval workflow, results on disk, and the report."""
