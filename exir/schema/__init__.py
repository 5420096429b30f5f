"""The .pte schema: program.fbs (the wire format) and program.py (the same tables as Python dataclasses)."""
import os

SCHEMA_DIR = os.path.dirname(os.path.abspath(__file__))
PROGRAM_FBS = os.path.join(SCHEMA_DIR, "program.fbs")
