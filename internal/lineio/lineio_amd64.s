//go:build amd64 && !purego

#include "textflag.h"

// Register use: DI destination, SI source, CX line count, AX BX DX R8 for
// gathered addresses. R14 (g) and R15 are left alone. Host-side buffers are
// read and written with unaligned moves; the VRAM side uses the streaming
// instructions, which need alignment (checked in Go).

// ---- avx512: one Z register per line --------------------------------------

// func load512(dst *[64]byte, src unsafe.Pointer)
TEXT ·load512(SB), NOSPLIT, $0-16
	MOVQ      dst+0(FP), DI
	MOVQ      src+8(FP), SI
	VMOVNTDQA (SI), Z0
	VMOVDQU64 Z0, (DI)
	VZEROUPPER
	RET

// func loadFloor512(dst *[64]byte, p unsafe.Pointer)
TEXT ·loadFloor512(SB), NOSPLIT, $0-16
	MOVQ      dst+0(FP), DI
	MOVQ      p+8(FP), SI
	ANDQ      $-64, SI
	VMOVNTDQA (SI), Z0
	VMOVDQU64 Z0, (DI)
	VZEROUPPER
	RET

// func store512(dst unsafe.Pointer, src *[64]byte)
TEXT ·store512(SB), NOSPLIT, $0-16
	MOVQ      dst+0(FP), DI
	MOVQ      src+8(FP), SI
	VMOVDQU64 (SI), Z0
	VMOVNTDQ  Z0, (DI)
	VZEROUPPER
	RET

// func loadLines512(dst *byte, src unsafe.Pointer, n int)
TEXT ·loadLines512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $4
	JB   ll512one

ll512four:
	VMOVNTDQA 0(SI), Z0
	VMOVNTDQA 64(SI), Z1
	VMOVNTDQA 128(SI), Z2
	VMOVNTDQA 192(SI), Z3
	VMOVDQU64 Z0, 0(DI)
	VMOVDQU64 Z1, 64(DI)
	VMOVDQU64 Z2, 128(DI)
	VMOVDQU64 Z3, 192(DI)
	ADDQ      $256, SI
	ADDQ      $256, DI
	SUBQ      $4, CX
	CMPQ      CX, $4
	JAE       ll512four

ll512one:
	TESTQ CX, CX
	JZ    ll512done

ll512loop:
	VMOVNTDQA (SI), Z0
	VMOVDQU64 Z0, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       ll512loop

ll512done:
	VZEROUPPER
	RET

// func storeLines512(dst unsafe.Pointer, src *byte, n int)
TEXT ·storeLines512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $4
	JB   sl512one

sl512four:
	VMOVDQU64 0(SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	VMOVDQU64 192(SI), Z3
	VMOVNTDQ  Z0, 0(DI)
	VMOVNTDQ  Z1, 64(DI)
	VMOVNTDQ  Z2, 128(DI)
	VMOVNTDQ  Z3, 192(DI)
	ADDQ      $256, SI
	ADDQ      $256, DI
	SUBQ      $4, CX
	CMPQ      CX, $4
	JAE       sl512four

sl512one:
	TESTQ CX, CX
	JZ    sl512done

sl512loop:
	VMOVDQU64 (SI), Z0
	VMOVNTDQ  Z0, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       sl512loop

sl512done:
	VZEROUPPER
	RET

// func gather512(dst *byte, srcs *unsafe.Pointer, n int)
TEXT ·gather512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ srcs+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $4
	JB   g512one

g512four:
	MOVQ      0(SI), AX
	MOVQ      8(SI), BX
	MOVQ      16(SI), DX
	MOVQ      24(SI), R8
	VMOVNTDQA (AX), Z0
	VMOVNTDQA (BX), Z1
	VMOVNTDQA (DX), Z2
	VMOVNTDQA (R8), Z3
	VMOVDQU64 Z0, 0(DI)
	VMOVDQU64 Z1, 64(DI)
	VMOVDQU64 Z2, 128(DI)
	VMOVDQU64 Z3, 192(DI)
	ADDQ      $32, SI
	ADDQ      $256, DI
	SUBQ      $4, CX
	CMPQ      CX, $4
	JAE       g512four

g512one:
	TESTQ CX, CX
	JZ    g512done

g512loop:
	MOVQ      (SI), AX
	VMOVNTDQA (AX), Z0
	VMOVDQU64 Z0, (DI)
	ADDQ      $8, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       g512loop

g512done:
	VZEROUPPER
	RET

// func scatter512(dsts *unsafe.Pointer, src *byte, n int)
TEXT ·scatter512(SB), NOSPLIT, $0-24
	MOVQ dsts+0(FP), SI
	MOVQ src+8(FP), DI
	MOVQ n+16(FP), CX
	CMPQ CX, $4
	JB   s512one

s512four:
	MOVQ      0(SI), AX
	MOVQ      8(SI), BX
	MOVQ      16(SI), DX
	MOVQ      24(SI), R8
	VMOVDQU64 0(DI), Z0
	VMOVDQU64 64(DI), Z1
	VMOVDQU64 128(DI), Z2
	VMOVDQU64 192(DI), Z3
	VMOVNTDQ  Z0, (AX)
	VMOVNTDQ  Z1, (BX)
	VMOVNTDQ  Z2, (DX)
	VMOVNTDQ  Z3, (R8)
	ADDQ      $32, SI
	ADDQ      $256, DI
	SUBQ      $4, CX
	CMPQ      CX, $4
	JAE       s512four

s512one:
	TESTQ CX, CX
	JZ    s512done

s512loop:
	MOVQ      (SI), AX
	VMOVDQU64 (DI), Z0
	VMOVNTDQ  Z0, (AX)
	ADDQ      $8, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       s512loop

s512done:
	VZEROUPPER
	RET

// func copyLines512(dst, src unsafe.Pointer, n int)
TEXT ·copyLines512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $4
	JB   cl512one

cl512four:
	VMOVNTDQA 0(SI), Z0
	VMOVNTDQA 64(SI), Z1
	VMOVNTDQA 128(SI), Z2
	VMOVNTDQA 192(SI), Z3
	VMOVNTDQ  Z0, 0(DI)
	VMOVNTDQ  Z1, 64(DI)
	VMOVNTDQ  Z2, 128(DI)
	VMOVNTDQ  Z3, 192(DI)
	ADDQ      $256, SI
	ADDQ      $256, DI
	SUBQ      $4, CX
	CMPQ      CX, $4
	JAE       cl512four

cl512one:
	TESTQ CX, CX
	JZ    cl512done

cl512loop:
	VMOVNTDQA (SI), Z0
	VMOVNTDQ  Z0, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       cl512loop

cl512done:
	VZEROUPPER
	RET

// ---- avx2: two Y registers per line ----------------------------------------

// func load256(dst *[64]byte, src unsafe.Pointer)
TEXT ·load256(SB), NOSPLIT, $0-16
	MOVQ      dst+0(FP), DI
	MOVQ      src+8(FP), SI
	VMOVNTDQA 0(SI), Y0
	VMOVNTDQA 32(SI), Y1
	VMOVDQU   Y0, 0(DI)
	VMOVDQU   Y1, 32(DI)
	VZEROUPPER
	RET

// func loadFloor256(dst *[64]byte, p unsafe.Pointer)
TEXT ·loadFloor256(SB), NOSPLIT, $0-16
	MOVQ      dst+0(FP), DI
	MOVQ      p+8(FP), SI
	ANDQ      $-64, SI
	VMOVNTDQA 0(SI), Y0
	VMOVNTDQA 32(SI), Y1
	VMOVDQU   Y0, 0(DI)
	VMOVDQU   Y1, 32(DI)
	VZEROUPPER
	RET

// func store256(dst unsafe.Pointer, src *[64]byte)
TEXT ·store256(SB), NOSPLIT, $0-16
	MOVQ     dst+0(FP), DI
	MOVQ     src+8(FP), SI
	VMOVDQU  0(SI), Y0
	VMOVDQU  32(SI), Y1
	VMOVNTDQ Y0, 0(DI)
	VMOVNTDQ Y1, 32(DI)
	VZEROUPPER
	RET

// func loadLines256(dst *byte, src unsafe.Pointer, n int)
TEXT ·loadLines256(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $4
	JB   ll256one

ll256four:
	VMOVNTDQA 0(SI), Y0
	VMOVNTDQA 32(SI), Y1
	VMOVNTDQA 64(SI), Y2
	VMOVNTDQA 96(SI), Y3
	VMOVNTDQA 128(SI), Y4
	VMOVNTDQA 160(SI), Y5
	VMOVNTDQA 192(SI), Y6
	VMOVNTDQA 224(SI), Y7
	VMOVDQU   Y0, 0(DI)
	VMOVDQU   Y1, 32(DI)
	VMOVDQU   Y2, 64(DI)
	VMOVDQU   Y3, 96(DI)
	VMOVDQU   Y4, 128(DI)
	VMOVDQU   Y5, 160(DI)
	VMOVDQU   Y6, 192(DI)
	VMOVDQU   Y7, 224(DI)
	ADDQ      $256, SI
	ADDQ      $256, DI
	SUBQ      $4, CX
	CMPQ      CX, $4
	JAE       ll256four

ll256one:
	TESTQ CX, CX
	JZ    ll256done

ll256loop:
	VMOVNTDQA 0(SI), Y0
	VMOVNTDQA 32(SI), Y1
	VMOVDQU   Y0, 0(DI)
	VMOVDQU   Y1, 32(DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       ll256loop

ll256done:
	VZEROUPPER
	RET

// func storeLines256(dst unsafe.Pointer, src *byte, n int)
TEXT ·storeLines256(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $4
	JB   sl256one

sl256four:
	VMOVDQU  0(SI), Y0
	VMOVDQU  32(SI), Y1
	VMOVDQU  64(SI), Y2
	VMOVDQU  96(SI), Y3
	VMOVDQU  128(SI), Y4
	VMOVDQU  160(SI), Y5
	VMOVDQU  192(SI), Y6
	VMOVDQU  224(SI), Y7
	VMOVNTDQ Y0, 0(DI)
	VMOVNTDQ Y1, 32(DI)
	VMOVNTDQ Y2, 64(DI)
	VMOVNTDQ Y3, 96(DI)
	VMOVNTDQ Y4, 128(DI)
	VMOVNTDQ Y5, 160(DI)
	VMOVNTDQ Y6, 192(DI)
	VMOVNTDQ Y7, 224(DI)
	ADDQ     $256, SI
	ADDQ     $256, DI
	SUBQ     $4, CX
	CMPQ     CX, $4
	JAE      sl256four

sl256one:
	TESTQ CX, CX
	JZ    sl256done

sl256loop:
	VMOVDQU  0(SI), Y0
	VMOVDQU  32(SI), Y1
	VMOVNTDQ Y0, 0(DI)
	VMOVNTDQ Y1, 32(DI)
	ADDQ     $64, SI
	ADDQ     $64, DI
	DECQ     CX
	JNZ      sl256loop

sl256done:
	VZEROUPPER
	RET

// func gather256(dst *byte, srcs *unsafe.Pointer, n int)
TEXT ·gather256(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ srcs+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $4
	JB   g256one

g256four:
	MOVQ      0(SI), AX
	MOVQ      8(SI), BX
	MOVQ      16(SI), DX
	MOVQ      24(SI), R8
	VMOVNTDQA 0(AX), Y0
	VMOVNTDQA 0(BX), Y2
	VMOVNTDQA 0(DX), Y4
	VMOVNTDQA 0(R8), Y6
	VMOVNTDQA 32(AX), Y1
	VMOVNTDQA 32(BX), Y3
	VMOVNTDQA 32(DX), Y5
	VMOVNTDQA 32(R8), Y7
	VMOVDQU   Y0, 0(DI)
	VMOVDQU   Y1, 32(DI)
	VMOVDQU   Y2, 64(DI)
	VMOVDQU   Y3, 96(DI)
	VMOVDQU   Y4, 128(DI)
	VMOVDQU   Y5, 160(DI)
	VMOVDQU   Y6, 192(DI)
	VMOVDQU   Y7, 224(DI)
	ADDQ      $32, SI
	ADDQ      $256, DI
	SUBQ      $4, CX
	CMPQ      CX, $4
	JAE       g256four

g256one:
	TESTQ CX, CX
	JZ    g256done

g256loop:
	MOVQ      (SI), AX
	VMOVNTDQA 0(AX), Y0
	VMOVNTDQA 32(AX), Y1
	VMOVDQU   Y0, 0(DI)
	VMOVDQU   Y1, 32(DI)
	ADDQ      $8, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       g256loop

g256done:
	VZEROUPPER
	RET

// func scatter256(dsts *unsafe.Pointer, src *byte, n int)
TEXT ·scatter256(SB), NOSPLIT, $0-24
	MOVQ dsts+0(FP), SI
	MOVQ src+8(FP), DI
	MOVQ n+16(FP), CX
	TESTQ CX, CX
	JZ   s256done

s256loop:
	MOVQ     (SI), AX
	VMOVDQU  0(DI), Y0
	VMOVDQU  32(DI), Y1
	VMOVNTDQ Y0, 0(AX)
	VMOVNTDQ Y1, 32(AX)
	ADDQ     $8, SI
	ADDQ     $64, DI
	DECQ     CX
	JNZ      s256loop

s256done:
	VZEROUPPER
	RET

// func copyLines256(dst, src unsafe.Pointer, n int)
TEXT ·copyLines256(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $4
	JB   cl256one

cl256four:
	VMOVNTDQA 0(SI), Y0
	VMOVNTDQA 32(SI), Y1
	VMOVNTDQA 64(SI), Y2
	VMOVNTDQA 96(SI), Y3
	VMOVNTDQA 128(SI), Y4
	VMOVNTDQA 160(SI), Y5
	VMOVNTDQA 192(SI), Y6
	VMOVNTDQA 224(SI), Y7
	VMOVNTDQ  Y0, 0(DI)
	VMOVNTDQ  Y1, 32(DI)
	VMOVNTDQ  Y2, 64(DI)
	VMOVNTDQ  Y3, 96(DI)
	VMOVNTDQ  Y4, 128(DI)
	VMOVNTDQ  Y5, 160(DI)
	VMOVNTDQ  Y6, 192(DI)
	VMOVNTDQ  Y7, 224(DI)
	ADDQ      $256, SI
	ADDQ      $256, DI
	SUBQ      $4, CX
	CMPQ      CX, $4
	JAE       cl256four

cl256one:
	TESTQ CX, CX
	JZ    cl256done

cl256loop:
	VMOVNTDQA 0(SI), Y0
	VMOVNTDQA 32(SI), Y1
	VMOVNTDQ  Y0, 0(DI)
	VMOVNTDQ  Y1, 32(DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       cl256loop

cl256done:
	VZEROUPPER
	RET

// ---- sse41: four X registers per line ----------------------------------------
// Two lines per iteration: eight X registers, X15 (the zero register of
// Go's internal ABI) untouched.

// func load128(dst *[64]byte, src unsafe.Pointer)
TEXT ·load128(SB), NOSPLIT, $0-16
	MOVQ     dst+0(FP), DI
	MOVQ     src+8(FP), SI
	MOVNTDQA 0(SI), X0
	MOVNTDQA 16(SI), X1
	MOVNTDQA 32(SI), X2
	MOVNTDQA 48(SI), X3
	MOVOU    X0, 0(DI)
	MOVOU    X1, 16(DI)
	MOVOU    X2, 32(DI)
	MOVOU    X3, 48(DI)
	RET

// func loadFloor128(dst *[64]byte, p unsafe.Pointer)
TEXT ·loadFloor128(SB), NOSPLIT, $0-16
	MOVQ     dst+0(FP), DI
	MOVQ     p+8(FP), SI
	ANDQ     $-64, SI
	MOVNTDQA 0(SI), X0
	MOVNTDQA 16(SI), X1
	MOVNTDQA 32(SI), X2
	MOVNTDQA 48(SI), X3
	MOVOU    X0, 0(DI)
	MOVOU    X1, 16(DI)
	MOVOU    X2, 32(DI)
	MOVOU    X3, 48(DI)
	RET

// func store128(dst unsafe.Pointer, src *[64]byte)
TEXT ·store128(SB), NOSPLIT, $0-16
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVOU  0(SI), X0
	MOVOU  16(SI), X1
	MOVOU  32(SI), X2
	MOVOU  48(SI), X3
	MOVNTO X0, 0(DI)
	MOVNTO X1, 16(DI)
	MOVNTO X2, 32(DI)
	MOVNTO X3, 48(DI)
	RET

// func loadLines128(dst *byte, src unsafe.Pointer, n int)
TEXT ·loadLines128(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $2
	JB   ll128one

ll128two:
	MOVNTDQA 0(SI), X0
	MOVNTDQA 64(SI), X4
	MOVNTDQA 16(SI), X1
	MOVNTDQA 80(SI), X5
	MOVNTDQA 32(SI), X2
	MOVNTDQA 96(SI), X6
	MOVNTDQA 48(SI), X3
	MOVNTDQA 112(SI), X7
	MOVOU    X0, 0(DI)
	MOVOU    X1, 16(DI)
	MOVOU    X2, 32(DI)
	MOVOU    X3, 48(DI)
	MOVOU    X4, 64(DI)
	MOVOU    X5, 80(DI)
	MOVOU    X6, 96(DI)
	MOVOU    X7, 112(DI)
	ADDQ     $128, SI
	ADDQ     $128, DI
	SUBQ     $2, CX
	CMPQ     CX, $2
	JAE      ll128two

ll128one:
	TESTQ CX, CX
	JZ    ll128done
	MOVNTDQA 0(SI), X0
	MOVNTDQA 16(SI), X1
	MOVNTDQA 32(SI), X2
	MOVNTDQA 48(SI), X3
	MOVOU    X0, 0(DI)
	MOVOU    X1, 16(DI)
	MOVOU    X2, 32(DI)
	MOVOU    X3, 48(DI)

ll128done:
	RET

// func storeLines128(dst unsafe.Pointer, src *byte, n int)
TEXT ·storeLines128(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	TESTQ CX, CX
	JZ   sl128done

sl128loop:
	MOVOU  0(SI), X0
	MOVOU  16(SI), X1
	MOVOU  32(SI), X2
	MOVOU  48(SI), X3
	MOVNTO X0, 0(DI)
	MOVNTO X1, 16(DI)
	MOVNTO X2, 32(DI)
	MOVNTO X3, 48(DI)
	ADDQ   $64, SI
	ADDQ   $64, DI
	DECQ   CX
	JNZ    sl128loop

sl128done:
	RET

// func gather128(dst *byte, srcs *unsafe.Pointer, n int)
// Two lines at a time: with 16-byte loads, eight registers hold two lines.
TEXT ·gather128(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ srcs+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $2
	JB   g128one

g128two:
	MOVQ     0(SI), AX
	MOVQ     8(SI), BX
	MOVNTDQA 0(AX), X0
	MOVNTDQA 0(BX), X4
	MOVNTDQA 16(AX), X1
	MOVNTDQA 16(BX), X5
	MOVNTDQA 32(AX), X2
	MOVNTDQA 32(BX), X6
	MOVNTDQA 48(AX), X3
	MOVNTDQA 48(BX), X7
	MOVOU    X0, 0(DI)
	MOVOU    X1, 16(DI)
	MOVOU    X2, 32(DI)
	MOVOU    X3, 48(DI)
	MOVOU    X4, 64(DI)
	MOVOU    X5, 80(DI)
	MOVOU    X6, 96(DI)
	MOVOU    X7, 112(DI)
	ADDQ     $16, SI
	ADDQ     $128, DI
	SUBQ     $2, CX
	CMPQ     CX, $2
	JAE      g128two

g128one:
	TESTQ CX, CX
	JZ    g128done
	MOVQ     (SI), AX
	MOVNTDQA 0(AX), X0
	MOVNTDQA 16(AX), X1
	MOVNTDQA 32(AX), X2
	MOVNTDQA 48(AX), X3
	MOVOU    X0, 0(DI)
	MOVOU    X1, 16(DI)
	MOVOU    X2, 32(DI)
	MOVOU    X3, 48(DI)

g128done:
	RET

// func scatter128(dsts *unsafe.Pointer, src *byte, n int)
TEXT ·scatter128(SB), NOSPLIT, $0-24
	MOVQ dsts+0(FP), SI
	MOVQ src+8(FP), DI
	MOVQ n+16(FP), CX
	TESTQ CX, CX
	JZ   s128done

s128loop:
	MOVQ   (SI), AX
	MOVOU  0(DI), X0
	MOVOU  16(DI), X1
	MOVOU  32(DI), X2
	MOVOU  48(DI), X3
	MOVNTO X0, 0(AX)
	MOVNTO X1, 16(AX)
	MOVNTO X2, 32(AX)
	MOVNTO X3, 48(AX)
	ADDQ   $8, SI
	ADDQ   $64, DI
	DECQ   CX
	JNZ    s128loop

s128done:
	RET

// func copyLines128(dst, src unsafe.Pointer, n int)
TEXT ·copyLines128(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	TESTQ CX, CX
	JZ   cl128done

cl128loop:
	MOVNTDQA 0(SI), X0
	MOVNTDQA 16(SI), X1
	MOVNTDQA 32(SI), X2
	MOVNTDQA 48(SI), X3
	MOVNTO   X0, 0(DI)
	MOVNTO   X1, 16(DI)
	MOVNTO   X2, 32(DI)
	MOVNTO   X3, 48(DI)
	ADDQ     $64, SI
	ADDQ     $64, DI
	DECQ     CX
	JNZ      cl128loop

cl128done:
	RET

// ---- fences ------------------------------------------------------------------

// func sfence()
TEXT ·sfence(SB), NOSPLIT, $0-0
	SFENCE
	RET

// func mfence()
TEXT ·mfence(SB), NOSPLIT, $0-0
	MFENCE
	RET
