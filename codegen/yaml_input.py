"""Reading the YAML files people write by hand (kernel manifests, operator selections) with errors that say which
file, which line and entry, what is wrong and what to write instead: never a bare yaml or KeyError traceback.

    data, lines = read_yaml(path, ManifestError)       # lines: top-level list index / mapping key -> line number
    ops = parse_selection(data, path, SelectionError)   # None for include_all_operators: true
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Type

import yaml

from schema import scalar_types

# Top-level keys of ExecuTorch's selected_operators.yaml that Ember reads past (its kernel metadata and build
# features select nothing Ember builds differently).
EXECUTORCH_SELECTION_KEYS = {
    "build_features",
    "custom_classes",
    "et_kernel_metadata",
    "kernel_metadata",
    "include_all_non_op_selectives",
}


def read_yaml(path: str, error: Type[Exception]) -> Tuple[object, Dict[object, int]]:
    """The document at `path` and the line (1-based) of each top-level list item or mapping key, for messages."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise error(f"{path}: cannot read it: {e.strerror or e}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark, context, context_mark = (getattr(e, a, None) for a in ("problem_mark", "context", "context_mark"))
        where = f"{path}:{mark.line + 1}" if mark is not None else path
        problem = getattr(e, "problem", None) or str(e)
        if context and context_mark is not None:
            problem += f", {context} that starts at line {context_mark.line + 1}"
        raise error(
            f"{where}: not valid YAML ({problem}); fix the syntax there (indentation, a missing ':' or "
            f"an unclosed bracket or quote are the usual causes)"
        ) from None
    lines: Dict[object, int] = {}
    if isinstance(node, yaml.SequenceNode):
        lines = {i: item.start_mark.line + 1 for i, item in enumerate(node.value)}
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            lines[key.value] = key.start_mark.line + 1
            # One level down too: a selection's operators are keys of its 'operators' mapping.
            if isinstance(value, yaml.MappingNode):
                for k, _ in value.value:
                    lines.setdefault((key.value, k.value), k.start_mark.line + 1)
    return data, lines


def type_name(v) -> str:
    return "nothing (null)" if v is None else f"{type(v).__name__} {v!r}"


def dtype_list(value, where: str, error: Type[Exception]) -> List[str]:
    """A list of dtype names, or `error` saying what is wrong with it."""
    if not isinstance(value, list):
        raise error(f"{where}: 'dtypes' must be a list of dtype names like [Float, Int], got {type_name(value)}")
    bad = [d for d in value if not isinstance(d, str)]
    if bad:
        raise error(f"{where}: dtypes must be names like Float or Long, got {bad!r}")
    unknown = sorted(set(value) - set(scalar_types.BY_NAME))
    if unknown:
        raise error(f"{where}: unknown dtypes {unknown}; use names from {sorted(scalar_types.BY_NAME)}")
    return value


def parse_selection(
    data, path: str, error: Type[Exception], lines: Optional[Dict[object, int]] = None
) -> Optional[Dict[str, List[str]]]:
    """A selected_operators.yaml document as op -> dtypes (an empty list: every dtype the kernel computes), or
    None when it says include_all_operators: true."""
    lines = lines or {}
    example = "operators:\n  aten::add.out:\n    dtypes: [Float]"
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise error(
            f"{path}: a selection is a mapping with 'operators' (and optionally 'include_all_operators'), "
            f"got {type_name(data)}; for example:\n{example}"
        )
    unknown = sorted(
        set(map(str, data)) - {"operators", "include_all_operators", "backends", "features"} - EXECUTORCH_SELECTION_KEYS
    )
    if unknown:
        raise error(
            f"{path}:{lines.get(unknown[0], '?')}: unknown key {unknown[0]!r}; a selection has 'operators', "
            f"'include_all_operators', 'backends' and 'features'"
        )
    include_all = data.get("include_all_operators", False)
    if not isinstance(include_all, bool):
        raise error(
            f"{path}:{lines.get('include_all_operators', '?')}: include_all_operators must be true or "
            f"false, got {type_name(include_all)}"
        )
    if include_all:
        return None
    operators = data.get("operators") or {}
    if not isinstance(operators, dict):
        raise error(
            f"{path}:{lines.get('operators', '?')}: 'operators' must map operator names to their dtypes, "
            f"got {type_name(operators)}; for example:\n{example}"
        )
    ops: Dict[str, List[str]] = {}
    for op, info in operators.items():
        where = f"{path}:{lines.get(('operators', op), '?')}: operator {op!r}"
        if not isinstance(op, str) or "::" not in op:
            raise error(f"{where}: operator names look like 'aten::add.out' (namespace::name.overload)")
        if info is None:
            ops[op] = []
            continue
        if not isinstance(info, dict):
            raise error(f"{where}: expected a mapping with 'dtypes' (e.g. {{dtypes: [Float]}}), got {type_name(info)}")
        extra = sorted(
            set(map(str, info))
            - {"dtypes", "is_root_operator", "is_used_for_training", "include_all_overloads", "debug_info"}
        )
        if extra:
            raise error(f"{where}: unknown key {extra[0]!r}; each operator takes 'dtypes'")
        ops[op] = dtype_list(info["dtypes"], where, error) if info.get("dtypes") is not None else []
    return ops


def parse_selected_backends(
    data, path: str, error: Type[Exception], lines: Optional[Dict[object, int]] = None
) -> List[str]:
    """The delegate backend ids a selection names (`backends: [EmberPortable]`); empty when it names none."""
    lines = lines or {}
    backends = (data or {}).get("backends") if isinstance(data, dict) else None
    if backends is None:
        return []
    if not isinstance(backends, list) or not all(isinstance(b, str) and b for b in backends):
        raise error(
            f"{path}:{lines.get('backends', '?')}: 'backends' must be a list of backend ids (as a program's "
            f"delegates name them, e.g. [EmberPortable]), got {backends!r}"
        )
    return sorted(set(backends))
