// Exception entry stubs: one per architectural vector (0-31). The CPU pushes
// an error code for some vectors; the others push 0 so that every frame has
// the same shape, then the vector, and all meet in ExceptionCommon.
    .text

.macro STUB vector, has_error
    .globl ExceptionStub\vector
ExceptionStub\vector:
    .if \has_error == 0
    pushq $0
    .endif
    pushq $\vector
    jmp ExceptionCommon
.endm

STUB 0, 0
STUB 1, 0
STUB 2, 0
STUB 3, 0
STUB 4, 0
STUB 5, 0
STUB 6, 0
STUB 7, 0
STUB 8, 1
STUB 9, 0
STUB 10, 1
STUB 11, 1
STUB 12, 1
STUB 13, 1
STUB 14, 1
STUB 15, 0
STUB 16, 0
STUB 17, 1
STUB 18, 0
STUB 19, 0
STUB 20, 0
STUB 21, 1
STUB 22, 0
STUB 23, 0
STUB 24, 0
STUB 25, 0
STUB 26, 0
STUB 27, 0
STUB 28, 0
STUB 29, 1
STUB 30, 1
STUB 31, 0

// Frame: vector, error code, rip, cs, rflags, rsp, ss. The handler runs on
// this vCPU's own exception stack (IST 1), never returns, and reports:
// ReportException(vector, error, rip, cr2, rsp).
ExceptionCommon:
    movq 0(%rsp), %rdi
    movq 8(%rsp), %rsi
    movq 16(%rsp), %rdx
    movq %cr2, %rcx
    movq 40(%rsp), %r8
    andq $-16, %rsp
    call ReportException
1:  hlt
    jmp 1b

// The stub addresses, in vector order, for the IDT builder.
    .section .rodata
    .globl kExceptionStubs
    .balign 8
kExceptionStubs:
    .irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    .quad ExceptionStub\v
    .endr

    .section .note.GNU-stack, "", @progbits
