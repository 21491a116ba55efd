// vCPU entry. The VMM sets rsp to the vCPU's stack, rdi to the vCPU index
// and rsi to the BootInfo address; interrupts are off and never enabled.
    .section .text.entry, "ax"
    .globl _start
_start:
    andq $-16, %rsp
    call RuntimeEntry
1:  hlt
    jmp 1b
    .section .note.GNU-stack, "", @progbits
