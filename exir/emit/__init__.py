"""Emission: a planned MethodGraph becomes an ExecutionPlan of the .pte object model."""

from exir.emit.emitter import ConstantPool, emit_method

__all__ = ["ConstantPool", "emit_method"]
