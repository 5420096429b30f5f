// What the bare-metal startup code (startup.cc) gives the runner and the PAL on every board: time, a watchdog and
// the stack's high-water mark. The board's own facts (its clock, the memory the arena is in) are in its board.h
// (platforms/<board>/board.h, included here as "board.h": see defs.bzl); its memory map is in its linker script
// and board.yaml.
#pragma once

#include <stdint.h>

#include "board.h"

namespace ember {
namespace board {

// Nanoseconds since reset from SysTick (24-bit, extended in its interrupt), counting at the board's kCpuHz. Under
// QEMU's -icount shift=0 one instruction takes one virtual nanosecond, so this also counts instructions (to one
// SysTick period's grain).
uint64_t now_ns();

// Arms the watchdog: once `limit_ns` pass from now, the SysTick interrupt reports `what` and ends the run with
// kExitWatchdog, whatever the program is doing. 0 disarms it.
void watchdog_arm(uint64_t limit_ns, const char* what);

// The stack (MSP, sized in the board's linker script) is painted with kStackPaint at reset; the high-water mark is
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
