"""Ember's delegate backends, one folder each (ahead-of-time half in Python, runtime half in C++, tests)."""
