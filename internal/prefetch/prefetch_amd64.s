#include "textflag.h"

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

// func fetchWrite(p unsafe.Pointer, n uintptr)
TEXT ·fetchWrite(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	ADDQ SI, CX // the end
	ANDQ $~63, SI
wloop:
	CMPQ SI, CX
	JAE wdone
	// PREFETCHW (SI), which the assembler does not name: 0F 0D /1.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x0E
	ADDQ $64, SI
	JMP wloop
wdone:
	RET
