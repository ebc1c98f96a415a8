"""The real-engine smoke: vLLM 0.19.1's CPU build under AReaL 1.0.4 (smoke.py)."""
