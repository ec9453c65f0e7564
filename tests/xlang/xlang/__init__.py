"""tests/xlang: histories, holders and scenarios of the whole-system test (run.py)."""
