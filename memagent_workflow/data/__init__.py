"""MemAgent QA data: the row schema, training-data conversion, synthetic questions, files."""
