#include "textflag.h"

// func fetchLine(p unsafe.Pointer)
TEXT ·fetchLine(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func fetchStrings(p unsafe.Pointer, n int)
TEXT ·fetchStrings(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE done
loop:
	MOVQ 0(SI), AX // the string's bytes
	MOVQ 8(SI), DX // its length
	TESTQ DX, DX
	JZ next
	PREFETCHT0 (AX)
	PREFETCHT0 -1(AX)(DX*1)
next:
	ADDQ $16, SI
	DECQ CX
	JNZ loop
done:
	RET

// func fetchSpan(p unsafe.Pointer, n uintptr)
TEXT ·fetchSpan(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	LEAQ -1(AX)(CX*1), DX // the last byte
	ANDQ $-64, AX
	ANDQ $-64, DX
span:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, DX
	JLS span
	RET
