// What the runner needs to know about the MPS3 AN547 board (Corstone-300: Cortex-M55 in the SSE-300) beyond
// the memory map, which lives in mps3_an547.ld and board.yaml.
#pragma once

#include <stdint.h>

namespace ember {
namespace board {

// The core and SysTick run on MAINCLK: 32 MHz on the FPGA image and in QEMU's model of it.
constexpr uint32_t kCpuHz = 32000000;

// Nanoseconds since reset from SysTick (24-bit, extended in its interrupt). Under QEMU's -icount shift=0 one
// instruction takes one virtual nanosecond, so this also counts instructions (to SysTick's 31.25 ns grain).
uint64_t now_ns();

// Arms the watchdog: once `limit_ns` pass from now, the SysTick interrupt reports `what` and ends the run with
// kExitWatchdog, whatever the program is doing. 0 disarms it.
void watchdog_arm(uint64_t limit_ns, const char* what);

// The stack (MSP, in DTCM, sized in mps3_an547.ld) is painted with kStackPaint at reset; the high-water mark is
// how many bytes from its top were ever written (the first unpainted word from the bottom up), interrupts and
// fault reports included.
constexpr uint32_t kStackPaint = 0xC0FFEE55u;
uint32_t stack_region_bytes();
uint32_t stack_high_water_bytes();

// Exit statuses the board's handlers use (the runner's own are 0-6, as on Linux).
constexpr int kExitWatchdog = 7;
constexpr int kExitFault = 8;

}  // namespace board
}  // namespace ember
