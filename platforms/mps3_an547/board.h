// The MPS3 AN547 board (Corstone-300: Cortex-M55 in the SSE-300) as the shared bare-metal code needs it beyond
// the memory map, which lives in mps3_an547.ld and board.yaml.
#pragma once

#include <stdint.h>

namespace ember {
namespace board {

// The core and SysTick run on MAINCLK: 32 MHz on the FPGA image and in QEMU's model of it.
constexpr uint32_t kCpuHz = 32000000;

}  // namespace board
}  // namespace ember

// Where the linker script puts the stack, data and the method allocator's arena: a string literal, which the
// runner splices into its report lines.
#define EMBER_BOARD_ARENA_MEMORY "DTCM"
