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

// func countLE512(keys *uint64, n int, ko, flip uint64) int
// How many of keys[1:n] (of a 64-word array) satisfy keys[i]^flip <= ko:
// eight compares into mask registers, joined into one 64-bit mask, then a
// population count. Few general registers are written, so a lookup that
// walks several index nodes this way stays short for the core.
TEXT ·countLE512(SB), NOSPLIT, $0-40
	MOVQ         keys+0(FP), AX
	MOVQ         n+8(FP), CX
	VPBROADCASTQ ko+16(FP), Z8
	VPBROADCASTQ flip+24(FP), Z9
	VPXORQ       0(AX), Z9, Z0
	VPXORQ       64(AX), Z9, Z1
	VPXORQ       128(AX), Z9, Z2
	VPXORQ       192(AX), Z9, Z3
	VPXORQ       256(AX), Z9, Z4
	VPXORQ       320(AX), Z9, Z5
	VPXORQ       384(AX), Z9, Z6
	VPXORQ       448(AX), Z9, Z7
	VPCMPUQ      $2, Z8, Z0, K0
	VPCMPUQ      $2, Z8, Z1, K1
	VPCMPUQ      $2, Z8, Z2, K2
	VPCMPUQ      $2, Z8, Z3, K3
	VPCMPUQ      $2, Z8, Z4, K4
	VPCMPUQ      $2, Z8, Z5, K5
	VPCMPUQ      $2, Z8, Z6, K6
	VPCMPUQ      $2, Z8, Z7, K7
	KUNPCKBW     K0, K1, K0
	KUNPCKBW     K2, K3, K2
	KUNPCKBW     K4, K5, K4
	KUNPCKBW     K6, K7, K6
	KUNPCKWD     K0, K2, K0
	KUNPCKWD     K4, K6, K4
	KUNPCKDQ     K0, K4, K0
	KMOVQ        K0, DX
	MOVQ         $-1, R8
	BZHIQ        CX, R8, R8
	ANDQ         $-2, R8
	ANDQ         R8, DX
	POPCNTQ      DX, AX
	MOVQ         AX, ret+32(FP)
	VZEROUPPER
	RET
