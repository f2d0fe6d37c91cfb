//go:build amd64 && !purego

#include "textflag.h"

// func loadWord(p unsafe.Pointer) uint64
// One 16-byte streaming load of the aligned chunk holding the 8-byte word
// at p (p 8-byte aligned), returned in a register.
TEXT ·loadWord(SB), NOSPLIT, $0-16
	MOVQ     p+0(FP), SI
	MOVQ     SI, AX
	ANDQ     $-16, SI
	MOVNTDQA (SI), X0
	TESTQ    $8, AX
	JNZ      high
	MOVQ     X0, AX
	MOVQ     AX, ret+8(FP)
	RET
high:
	PEXTRQ   $1, X0, AX
	MOVQ     AX, ret+8(FP)
	RET

// func loadPair(p unsafe.Pointer) (lo, hi uint64)
// One 16-byte streaming load of the 16-byte-aligned chunk at p.
TEXT ·loadPair(SB), NOSPLIT, $0-24
	MOVQ     p+0(FP), SI
	MOVNTDQA (SI), X0
	MOVQ     X0, AX
	PEXTRQ   $1, X0, BX
	MOVQ     AX, lo+8(FP)
	MOVQ     BX, hi+16(FP)
	RET
