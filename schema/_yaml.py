"""Reading the contract's YAML files, with errors that name the file and the entry at fault."""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable

import yaml

SCHEMA_DIR = os.path.dirname(os.path.abspath(__file__))


class ContractError(ValueError):
    """A contract file is malformed, or a name is not in it; the message says which and where."""


def load(filename: str) -> Any:
    path = os.path.join(SCHEMA_DIR, filename)
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except OSError as e:
        raise ContractError(f"cannot read the contract file {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ContractError(f"{path} is not valid YAML: {e}") from None


def load_list(filename: str) -> list:
    entries = load(filename)
    if not isinstance(entries, list):
        raise ContractError(f"schema/{filename}: expected a list of entries, got {type(entries).__name__}")
    return entries


def entry(value: Any, where: str, required: Iterable[str], optional: Iterable[str] = ()) -> Dict[str, Any]:
    """`value` as a mapping holding every `required` key and nothing outside `required` + `optional`."""
    required, optional = tuple(required), tuple(optional)
    if not isinstance(value, dict):
        raise ContractError(f"{where}: expected a mapping with keys {', '.join(required)}, got {value!r}")
    missing = [k for k in required if k not in value]
    if missing:
        raise ContractError(f"{where}: missing {', '.join(missing)}")
    unknown = sorted(set(value) - set(required) - set(optional))
    if unknown:
        raise ContractError(f"{where}: unknown keys {', '.join(unknown)} (known: {', '.join(required + optional)})")
    return value
