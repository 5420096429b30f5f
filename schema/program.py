"""program.fbs as Python dataclasses: one class per table, field names and order as in the schema.

ScalarType is the contract's (schema/scalar_types.yaml), as the generated scalar_type.fbs has it.

Union-valued fields (EValue.val, Instruction.instr_args) hold an instance of one member class; its class name
is the union tag on the wire.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import List, Optional, Union

from schema.scalar_types import ScalarType


class TensorShapeDynamism(enum.IntEnum):
    STATIC = 0
    DYNAMIC_BOUND = 1
    DYNAMIC_UNBOUND = 2


class TensorDataLocation(enum.IntEnum):
    SEGMENT = 0
    EXTERNAL = 1


class DataLocation(enum.IntEnum):
    INLINE = 0
    SEGMENT = 1


class DeviceType(enum.IntEnum):
    CPU = 0
    CUDA = 1


@dataclass
class ContainerMetadata:
    encoded_inp_str: str = ""
    encoded_out_str: str = ""


@dataclass
class Null:
    pass


@dataclass
class Int:
    int_val: int = 0


@dataclass
class Bool:
    bool_val: bool = False


@dataclass
class Double:
    double_val: float = 0.0


@dataclass
class String:
    string_val: str = ""


@dataclass
class IntList:
    items: List[int] = field(default_factory=list)


@dataclass
class DoubleList:
    items: List[float] = field(default_factory=list)


@dataclass
class BoolList:
    items: List[bool] = field(default_factory=list)


@dataclass
class TensorList:
    items: List[int] = field(default_factory=list)


@dataclass
class OptionalTensorList:
    items: List[int] = field(default_factory=list)


@dataclass
class AllocationDetails:
    memory_id: int = 0
    memory_offset_low: int = 0
    memory_offset_high: int = 0

    @staticmethod
    def from_offset(memory_id: int, offset: int) -> "AllocationDetails":
        if not 0 <= offset < 1 << 64:
            raise ValueError(f"offset {offset} does not fit in 64 bits")
        return AllocationDetails(memory_id, offset & 0xFFFFFFFF, offset >> 32)

    @property
    def offset(self) -> int:
        return self.memory_offset_high << 32 | self.memory_offset_low


@dataclass
class ExtraTensorInfo:
    mutable_data_segments_idx: int = 0
    fully_qualified_name: Optional[str] = None
    location: TensorDataLocation = TensorDataLocation.SEGMENT


@dataclass
class Tensor:
    scalar_type: ScalarType = ScalarType.FLOAT
    storage_offset: int = 0
    sizes: List[int] = field(default_factory=list)
    dim_order: List[int] = field(default_factory=list)
    requires_grad: bool = False
    data_buffer_idx: int = 0
    allocation_info: Optional[AllocationDetails] = None
    layout: int = 0
    shape_dynamism: TensorShapeDynamism = TensorShapeDynamism.STATIC
    extra_tensor_info: Optional[ExtraTensorInfo] = None


KernelTypes = Union[
    Null, Int, Bool, Double, Tensor, String, IntList, DoubleList, BoolList, TensorList, OptionalTensorList
]
KERNEL_TYPES = (Null, Int, Bool, Double, Tensor, String, IntList, DoubleList, BoolList, TensorList, OptionalTensorList)


@dataclass
class EValue:
    val: KernelTypes = field(default_factory=Null)


@dataclass
class Operator:
    name: str = ""
    overload: str = ""


@dataclass
class KernelCall:
    op_index: int = 0
    args: List[int] = field(default_factory=list)


@dataclass
class DelegateCall:
    delegate_index: int = 0
    args: List[int] = field(default_factory=list)


@dataclass
class MoveCall:
    move_from: int = 0
    move_to: int = 0


@dataclass
class JumpFalseCall:
    cond_value_index: int = 0
    destination_instruction: int = 0


@dataclass
class FreeCall:
    value_index: int = 0


InstructionArguments = Union[KernelCall, DelegateCall, MoveCall, JumpFalseCall, FreeCall]
INSTRUCTION_TYPES = (KernelCall, DelegateCall, MoveCall, JumpFalseCall, FreeCall)


@dataclass
class Instruction:
    instr_args: InstructionArguments = field(default_factory=KernelCall)


@dataclass
class Frame:
    filename: str = ""
    lineno: int = 0
    name: str = ""
    context: str = ""


@dataclass
class FrameList:
    items: List[Frame] = field(default_factory=list)


@dataclass
class BackendDelegateDataReference:
    location: DataLocation = DataLocation.INLINE
    index: int = 0


@dataclass
class CompileSpec:
    key: str = ""
    value: bytes = b""


@dataclass
class BackendDelegate:
    id: str = ""
    processed: Optional[BackendDelegateDataReference] = None
    compile_specs: List[CompileSpec] = field(default_factory=list)


@dataclass
class Chain:
    inputs: List[int] = field(default_factory=list)
    outputs: List[int] = field(default_factory=list)
    instructions: List[Instruction] = field(default_factory=list)
    stacktrace: Optional[List[FrameList]] = None


@dataclass
class NonConstBufferDevice:
    buffer_idx: int = 0
    device_type: DeviceType = DeviceType.CPU
    device_index: int = 0


@dataclass
class ExecutionPlan:
    name: str = ""
    container_meta_type: Optional[ContainerMetadata] = None
    values: List[EValue] = field(default_factory=list)
    inputs: List[int] = field(default_factory=list)
    outputs: List[int] = field(default_factory=list)
    chains: List[Chain] = field(default_factory=list)
    operators: List[Operator] = field(default_factory=list)
    delegates: List[BackendDelegate] = field(default_factory=list)
    non_const_buffer_sizes: List[int] = field(default_factory=list)
    non_const_buffer_device: Optional[List[NonConstBufferDevice]] = None


@dataclass
class Buffer:
    storage: bytes = b""


@dataclass
class BackendDelegateInlineData:
    data: bytes = b""


@dataclass
class DataSegment:
    offset: int = 0
    size: int = 0


@dataclass
class SubsegmentOffsets:
    segment_index: int = 0
    offsets: List[int] = field(default_factory=list)


@dataclass
class NamedData:
    key: str = ""
    segment_index: int = 0


@dataclass
class Program:
    version: int = 0
    execution_plan: List[ExecutionPlan] = field(default_factory=list)
    constant_buffer: List[Buffer] = field(default_factory=list)
    backend_delegate_data: List[BackendDelegateInlineData] = field(default_factory=list)
    segments: List[DataSegment] = field(default_factory=list)
    constant_segment: Optional[SubsegmentOffsets] = None
    mutable_data_segments: Optional[List[SubsegmentOffsets]] = None
    named_data: Optional[List[NamedData]] = None
