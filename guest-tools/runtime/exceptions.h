// Guest exception handling: every payload gets an IDT whose handlers report
// the exception (vector, rip, faulting address, error code, rsp) to the VMM,
// which stops the VM with that message. Without it any exception escalates
// to a triple fault, which says nothing about where or why.
#ifndef NUMAVM_GUEST_TOOLS_RUNTIME_EXCEPTIONS_H_
#define NUMAVM_GUEST_TOOLS_RUNTIME_EXCEPTIONS_H_

#include <stdint.h>

namespace guest {

// Loads this vCPU's GDT (with its own TSS), TSS and the shared IDT. The
// handlers run on a per-vCPU stack of their own (IST), so a broken rsp is
// reported as well.
void InstallExceptionHandlers(uint32_t vcpu);

}  // namespace guest

#endif  // NUMAVM_GUEST_TOOLS_RUNTIME_EXCEPTIONS_H_
