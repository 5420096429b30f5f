"""What `ember export` and `ember bundle` export: a zoo model by name, or a user's model named as FILE.py:NAME or
package.module:NAME, with its example inputs. Loaded as {method: ExportedProgram}, {method: inputs}, module."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys

from ember.cli.errors import CliError

DTYPES = ("float32", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool")


def add_model_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "model",
        help="a zoo model name (`ember export --list`), FILE.py:NAME or package.module:NAME, where NAME is an "
        "nn.Module instance or class, or a function returning a module or (module, example_inputs)",
    )
    ap.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="D0,D1,...",
        help="an example input's shape (random values; repeat per input, in order); default: the model's own",
    )
    ap.add_argument("--dtype", default="float32", choices=DTYPES, help="dtype of the --shape inputs")
    ap.add_argument(
        "--example-inputs",
        metavar="NAME|FILE.pt",
        help="a function or tuple in the model's file/module giving the example inputs, or a torch.save'd tuple",
    )


def zoo_registries():
    """{name: export_methods function} of every zoo model the zoo's own export command takes."""
    try:
        from zoo import control_flow, dynamic
        from zoo.models import ZOO, export_methods
    except ImportError:  # an installed wheel carries no zoo: models are FILE.py:NAME or module:NAME there
        return {}

    return {
        **{n: export_methods for n in ZOO},
        **{n: control_flow.export_methods for n in control_flow.MODELS},
        **{n: dynamic.export_methods for n in dynamic.MODELS},
    }


def list_zoo() -> str:
    try:
        from zoo.models import ZOO
    except ImportError:
        raise CliError("the model zoo comes with a repository checkout; this installation has none") from None

    return "\n".join(f"{name:24s} {e.description}" for name, e in ZOO.items())


def _import_namespace(where: str):
    """The module named by `where`: a .py file path, or a dotted module name."""
    if where.endswith(".py") or os.sep in where:
        if not os.path.isfile(where):
            raise CliError(f"{where}: no such file")
        spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(where))[0], where)
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))  # its own sibling imports
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as e:
        raise CliError(f"cannot import module '{where}': {e}") from None


def _attribute(namespace, name: str, where: str):
    if not hasattr(namespace, name):
        raise CliError(f"{where} has no '{name}'")
    return getattr(namespace, name)


def _parse_shape(text: str):
    try:
        dims = [int(d) for d in text.replace("x", ",").split(",") if d.strip()]
    except ValueError:
        raise CliError(f"--shape {text}: not a comma-separated list of integers") from None
    if not dims or any(d <= 0 for d in dims):
        raise CliError(f"--shape {text}: dimensions must be positive integers")
    return dims


def _random_inputs(shapes, dtype_name):
    import torch

    dtype = getattr(torch, dtype_name)
    g = torch.Generator().manual_seed(0)
    out = []
    for text in shapes:
        dims = _parse_shape(text)
        if dtype.is_floating_point:
            out.append(torch.randn(dims, generator=g).to(dtype))
        elif dtype == torch.bool:
            out.append(torch.randint(0, 2, dims, generator=g).bool())
        else:
            out.append(torch.randint(0, 16, dims, generator=g).to(dtype))
    return tuple(out)


def _as_tuple(inputs, what):
    import torch

    if isinstance(inputs, torch.Tensor):
        return (inputs,)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs)
    raise CliError(f"{what}: example inputs must be a tensor or a tuple of them, got {type(inputs).__name__}")


def _user_model(spec: str, args):
    import torch

    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise CliError(f"'{spec}' is neither a zoo model (`ember export --list`) nor FILE.py:NAME or module:NAME")
    namespace = _import_namespace(where)
    obj = _attribute(namespace, name, where)
    inputs = None
    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        obj = obj()
    elif callable(obj) and not isinstance(obj, torch.nn.Module):
        obj = obj()
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], torch.nn.Module):
        obj, inputs = obj[0], _as_tuple(obj[1], spec)
    if not isinstance(obj, torch.nn.Module):
        raise CliError(f"{spec} gave a {type(obj).__name__}, not an nn.Module (or a (module, inputs) pair)")
    if args.example_inputs:
        if args.example_inputs.endswith(".pt"):
            if not os.path.isfile(args.example_inputs):
                raise CliError(f"{args.example_inputs}: no such file")
            inputs = _as_tuple(torch.load(args.example_inputs), args.example_inputs)
        else:
            given = _attribute(namespace, args.example_inputs, where)
            inputs = _as_tuple(given() if callable(given) else given, f"{where}:{args.example_inputs}")
    if args.shape:
        inputs = _random_inputs(args.shape, args.dtype)
    if inputs is None and hasattr(obj, "example_inputs"):
        given = obj.example_inputs
        inputs = _as_tuple(given() if callable(given) else given, f"{spec}.example_inputs")
    if inputs is None:
        raise CliError(f"{spec}: no example inputs; give --shape D0,D1,... per input, or --example-inputs NAME")
    return obj.eval(), inputs


def load(args):
    """({method: ExportedProgram}, {method: example inputs}, module) for args.model."""
    import torch

    registries = zoo_registries() if ":" not in args.model else {}
    if args.model in registries:
        if args.shape or args.example_inputs:
            raise CliError(f"{args.model} is a zoo model with its own inputs; --shape/--example-inputs are for yours")
        return registries[args.model](args.model)
    module, inputs = _user_model(args.model, args)
    try:
        ep = torch.export.export(module, inputs)
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CliError(f"torch.export could not capture {args.model} with the example inputs: {first}") from None
    return {"forward": ep}, {"forward": inputs}, module
