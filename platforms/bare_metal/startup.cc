// Reset and exception handling for the bare-metal boards, Armv8.1-M (the AN547's Cortex-M55) and Armv7E-M (the
// AN386's Cortex-M4): the vector table, C/C++ runtime setup (FPU, and MVE where the core has it, on; .data copied,
// .bss zeroed, constructors run), SysTick as clock and watchdog, and fault handlers that report and exit instead
// of spinning: on an emulator or a board in CI, a silent infinite loop is a hang. The stack is painted at reset and
// its high-water mark printed when main returns. The board's clock comes from its board.h, its memory map from its
// linker script.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "platforms/bare_metal/semihosting.h"
#include "platforms/bare_metal/startup.h"

extern "C" {
// From the linker script.
extern uint32_t __stack_top, __stack_limit;
#if __ARM_ARCH < 8
// Armv7-M has no stack limit register: its linker scripts put a guard region right below __stack_limit, and the
// room for the fault report below that (limit_stack).
extern uint32_t __stack_guard;
#endif
extern uint32_t __data_load, __data_start, __data_end, __bss_start, __bss_end;
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);

int main(int argc, char** argv);
}

namespace {

volatile uint32_t* reg(uint32_t address) { return reinterpret_cast<volatile uint32_t*>(address); }

constexpr uint32_t kCpacr = 0xE000ED88;
constexpr uint32_t kSystCsr = 0xE000E010, kSystRvr = 0xE000E014, kSystCvr = 0xE000E018;
constexpr uint32_t kCfsr = 0xE000ED28, kHfsr = 0xE000ED2C, kMmfar = 0xE000ED34, kBfar = 0xE000ED38;
constexpr uint32_t kSfsr = 0xE000EDE4;
constexpr uint32_t kCfsrMmarValid = 1u << 7;
constexpr uint32_t kMpuType = 0xE000ED90, kMpuCtrl = 0xE000ED94, kMpuRnr = 0xE000ED98, kMpuRbar = 0xE000ED9C,
                   kMpuRasr = 0xE000EDA0;
// A SysTick interrupt every millisecond: the watchdog checks its deadline there, so this is its grain (a run of a
// few milliseconds must be stoppable), and each interrupt costs a few dozen instructions per million.
constexpr uint32_t kSysTickReload = ember::board::kCpuHz / 1000 - 1;

volatile uint32_t g_systick_wraps = 0;
volatile uint64_t g_deadline_ticks = 0;
const char* volatile g_watchdog_what = "";

uint64_t ticks() {
  uint32_t wraps, count;
  do {
    wraps = g_systick_wraps;
    count = *reg(kSystCvr);
  } while (wraps != g_systick_wraps);
  return static_cast<uint64_t>(wraps) * (kSysTickReload + 1) + (kSysTickReload - count);
}

// A stack overflow becomes a fault (reported) instead of silently eating whatever lies below the stack.
void limit_stack() {
#if __ARM_ARCH >= 8
  // Armv8-M's stack limit: a push below __stack_limit is a UsageFault.
  __asm__ volatile("msr msplim, %0" ::"r"(&__stack_limit));
#else
  // Armv7-M: MPU region 0 makes the 32 bytes below __stack_limit (__stack_guard) inaccessible, and the default
  // memory map stays for everything else (PRIVDEFENA). The MPU is off in HardFault (HFNMIENA clear), so the fault
  // report can run on the room the linker script leaves below the guard. A core without an MPU goes unguarded.
  if (((*reg(kMpuType) >> 8) & 0xFF) == 0) return;
  *reg(kMpuRnr) = 0;
  *reg(kMpuRbar) = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&__stack_guard));
  constexpr uint32_t kExecuteNever = 1u << 28, kNoAccess = 0u << 24, kNormalMemory = 1u << 19;
  constexpr uint32_t kSize32Bytes = 4u << 1, kRegionEnable = 1u;
  *reg(kMpuRasr) = kExecuteNever | kNoAccess | kNormalMemory | kSize32Bytes | kRegionEnable;
  constexpr uint32_t kPrivilegedDefaultMap = 1u << 2, kMpuEnable = 1u;
  *reg(kMpuCtrl) = kPrivilegedDefaultMap | kMpuEnable;
  __asm__ volatile("dsb\nisb" ::: "memory");
#endif
}

// For fault reports, before anything else may be broken: no heap, a fixed buffer.
void report(const char* format, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  char line[200];
  const int n = snprintf(line, sizeof(line), format, static_cast<unsigned long>(a), static_cast<unsigned long>(b),
                         static_cast<unsigned long>(c), static_cast<unsigned long>(d));
  if (n > 0) ember::semihosting::write_stdout(line, static_cast<size_t>(n) < sizeof(line) ? n : sizeof(line) - 1);
}

}  // namespace

namespace ember {
namespace board {

namespace {
// Nanoseconds per tick as the reduced fraction kNsNumerator / kNsDenominator: 1e9 / 32 MHz is 125 / 4, 1e9 / 25 MHz
// is 40 / 1, so the conversion is a multiply and a shift, not the 64-bit division (a library call of about a
// hundred instructions) that would otherwise land inside every traced instruction's measured time.
constexpr uint64_t gcd(uint64_t a, uint64_t b) { return b == 0 ? a : gcd(b, a % b); }
constexpr uint64_t kNsNumerator = 1000000000ull / gcd(1000000000ull, kCpuHz);
constexpr uint64_t kNsDenominator = kCpuHz / gcd(1000000000ull, kCpuHz);
}  // namespace

uint64_t now_ns() { return ticks() * kNsNumerator / kNsDenominator; }

void watchdog_arm(uint64_t limit_ns, const char* what) {
  g_watchdog_what = what;
  g_deadline_ticks = limit_ns ? ticks() + limit_ns * kCpuHz / 1000000000ull : 0;
}

uint32_t stack_region_bytes() {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&__stack_top) - reinterpret_cast<uintptr_t>(&__stack_limit));
}

uint32_t stack_high_water_bytes() {
  const uint32_t* p = &__stack_limit;
  while (p < &__stack_top && *p == kStackPaint) ++p;
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&__stack_top) - reinterpret_cast<uintptr_t>(p));
}

}  // namespace board
}  // namespace ember

extern "C" {

// Called with the stacked exception frame (r0-r3, r12, lr, pc, xpsr), so the report names the faulting pc.
void ember_fault_report(const uint32_t* frame, uint32_t exc_return) {
  const uint32_t ipsr = [] {
    uint32_t v;
    __asm__ volatile("mrs %0, ipsr" : "=r"(v));
    return v;
  }();
  static const char* const kNames[] = {"?",         "reset",    "NMI",        "HardFault",
                                       "MemManage", "BusFault", "UsageFault", "SecureFault"};
  const uint32_t n = ipsr & 0x1FF;
  char name[40];
  snprintf(name, sizeof(name), "%s", n < 8 ? kNames[n] : "unexpected interrupt");
  ember::semihosting::print("\nfault: ");
  ember::semihosting::print(name);
  report(" (exception %lu) at pc 0x%08lx, lr 0x%08lx, EXC_RETURN 0x%08lx\n", n, frame[6], frame[5], exc_return);
  report("fault: CFSR 0x%08lx HFSR 0x%08lx MMFAR 0x%08lx BFAR 0x%08lx\n", *reg(kCfsr), *reg(kHfsr), *reg(kMmfar),
         *reg(kBfar));
#if __ARM_ARCH >= 8
  // The Security Extension's fault status (Armv8-M).
  report("fault: SFSR 0x%08lx; stopping with exit status %lu%.0lu%.0lu\n", *reg(kSfsr), ember::board::kExitFault, 0, 0);
#else
  // A data access in the MPU's stack guard (MMFAR valid): the stack overflowed. The stacked frame above is then
  // missing too, since pushing it is what faulted.
  const uint32_t mmfar = *reg(kMmfar);
  if ((*reg(kCfsr) & kCfsrMmarValid) != 0 && mmfar >= reinterpret_cast<uintptr_t>(&__stack_guard) &&
      mmfar < reinterpret_cast<uintptr_t>(&__stack_limit)) {
    report("fault: the stack overflowed its %lu bytes (an access at 0x%08lx, below its limit)%.0lu%.0lu\n",
           ember::board::stack_region_bytes(), mmfar, 0, 0);
  }
  report("fault: stopping with exit status %lu%.0lu%.0lu%.0lu\n", ember::board::kExitFault, 0, 0, 0);
#endif
  ember::semihosting::exit(ember::board::kExitFault);
}

// Finds the stack the exception frame was pushed on (MSP or PSP) and reports from there.
__attribute__((naked)) void fault_handler(void) {
  __asm__ volatile(
      "tst lr, #4\n"
      "ite eq\n"
      "mrseq r0, msp\n"
      "mrsne r0, psp\n"
      "mov r1, lr\n"
      "b ember_fault_report\n");
}

void systick_handler(void) {
  g_systick_wraps = g_systick_wraps + 1;
  const uint64_t deadline = g_deadline_ticks;
  if (deadline != 0 && ticks() >= deadline) {
    ember::semihosting::print("\nwatchdog: ");
    ember::semihosting::print(g_watchdog_what);
    ember::semihosting::print(" took longer than its limit; stopping the run\n");
    ember::semihosting::exit(ember::board::kExitWatchdog);
  }
}

void reset_handler(void) {
  limit_stack();
  // Paint the stack below this frame, so the deepest word ever written shows after the run (stack_high_water).
  // Volatile stores: a memset call would push its own frame into the words being painted.
  uint32_t* sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  for (volatile uint32_t* p = &__stack_limit; p < sp - 16; ++p) *p = ember::board::kStackPaint;
  // The FPU (and MVE, on the M55) is coprocessors 10 and 11: full access, before any floating-point instruction.
  *reg(kCpacr) |= 0xFu << 20;
  __asm__ volatile("dsb\nisb" ::: "memory");

  memcpy(&__data_start, &__data_load,
         reinterpret_cast<uintptr_t>(&__data_end) - reinterpret_cast<uintptr_t>(&__data_start));
  memset(&__bss_start, 0, reinterpret_cast<uintptr_t>(&__bss_end) - reinterpret_cast<uintptr_t>(&__bss_start));
  for (void (**init)(void) = __init_array_start; init != __init_array_end; ++init) (*init)();

  *reg(kSystRvr) = kSysTickReload;
  *reg(kSystCvr) = 0;
  *reg(kSystCsr) = 0x7;  // processor clock, interrupt on wrap, enabled

  // argv from the host's command line (QEMU: -semihosting-config arg=...), split at spaces.
  static char command_line[1024];
  static char* argv[33];
  int argc = 0;
  if (ember::semihosting::command_line(command_line, sizeof(command_line))) {
    for (char* p = command_line; *p != '\0' && argc < 32;) {
      while (*p == ' ') *p++ = '\0';
      if (*p == '\0') break;
      argv[argc++] = p;
      while (*p != '\0' && *p != ' ') ++p;
    }
  }
  static char program_name[] = "runner";
  if (argc == 0) argv[argc++] = program_name;
  argv[argc] = nullptr;
  const int status = main(argc, argv);
  report("stack: %lu bytes used of %lu (high-water mark of the painted stack)%.0lu%.0lu\n",
         ember::board::stack_high_water_bytes(), ember::board::stack_region_bytes(), 0, 0);
  ember::semihosting::exit(status);
}

// Vectors 0-15 are the core's; the boards' peripheral interrupts are not used, so the table stops there and
// VTOR never points into code for them (an unexpected one still lands in fault_handler via HardFault).
__attribute__((section(".vectors"), used)) void (*const g_vectors[16])(void) = {
    reinterpret_cast<void (*)(void)>(&__stack_top),
    reset_handler,
    fault_handler,  // NMI
    fault_handler,  // HardFault
    fault_handler,  // MemManage
    fault_handler,  // BusFault
    fault_handler,  // UsageFault
    fault_handler,  // SecureFault (Armv8-M; reserved on Armv7-M)
    nullptr,
    nullptr,
    nullptr,
    fault_handler,  // SVCall: nothing here issues SVC
    fault_handler,  // DebugMonitor
    nullptr,
    fault_handler,  // PendSV
    systick_handler,
};

// The runtime has pure virtual classes; a call through one would be a bug, so it faults loudly.
void __cxa_pure_virtual(void) { __builtin_trap(); }

}  // extern "C"

extern "C" {

// There is no heap: neither the runtime nor the runner allocates. newlib keeps references to malloc in a few
// functions the link may pull in (e.g. its stdio), and they get a clean ENOMEM from here instead of memory.
void* _sbrk(ptrdiff_t) {
  errno = ENOMEM;
  return reinterpret_cast<void*>(-1);
}

}  // extern "C"
