"""Ember's Python runtime API: `ember.runtime` loads .pte programs and runs them on the C++ runtime."""
