// The MPS2 AN386 board (a Cortex-M4 on the MPS2 FPGA) as the shared bare-metal code needs it beyond the memory
// map, which lives in mps2_an386.ld and board.yaml.
#pragma once

#include <stdint.h>

namespace ember {
namespace board {

// The core and SysTick (processor clock source) run on SYSCLK: 25 MHz on the FPGA image and in QEMU's model of it.
constexpr uint32_t kCpuHz = 25000000;

}  // namespace board
}  // namespace ember

// Where the linker script puts the stack, data and the method allocator's arena: a string literal, which the
// runner splices into its report lines.
#define EMBER_BOARD_ARENA_MEMORY "SSRAM23"
