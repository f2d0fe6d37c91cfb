//go:build amd64 && !race && !purego

#include "textflag.h"

// func StoreRelease(p *uint64, v uint64)
TEXT ·StoreRelease(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
