"""Lowering: an edge ExportedProgram becomes a MethodGraph, Ember's flat, out-variant form of one method.

The stages run in this order, each in its own file:
  lower.py         FX graph + graph signature -> MethodGraph (constants, inputs, buffers, calls)
  fold.py          calls whose tensor inputs are all constants are evaluated now, becoming constants
  out_variants.py  functional ATen overloads -> their out= overloads; views -> *_copy ops
"""

from exir.lowering.ir import Call, MethodGraph, Role, TensorValue
from exir.lowering.lower import lower_method

__all__ = ["Call", "MethodGraph", "Role", "TensorValue", "lower_method"]
