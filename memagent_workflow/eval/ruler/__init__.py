"""RULER's synthetic tasks (niah, vt, fwe, qa): generation, fitting and scoring."""
