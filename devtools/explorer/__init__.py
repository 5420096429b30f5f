"""Ember programs in Google's Model Explorer (docs/explore.md): the adapter (main.py, graphs.py), the overlays
(overlays.py) and the launcher behind `ember explore` (launch.py)."""
