//go:build amd64 && !purego

#include "textflag.h"

// ONES sets Z27 to ones in every lane (the step from one shard's number
// to the next). AX is scratch.
#define ONES \
	MOVQ         $1, AX \
	VPBROADCASTQ AX, Z27

// HASHCONSTS sets what HASH8 needs besides the seed: the multipliers in
// Z30 and Z29, the number of shards (R8) in Z28; and ONES.
#define HASHCONSTS \
	MOVQ         $0xbf58476d1ce4e5b9, AX \
	VPBROADCASTQ AX, Z30 \
	MOVQ         $0x94d049bb133111eb, AX \
	VPBROADCASTQ AX, Z29 \
	VPBROADCASTQ R8, Z28 \
	ONES

// HASH8 sets Z1 to the shards of the eight keys in Z0 (Shard8 in vector
// multiplies): Z31 holds the seed, Z30 and Z29 the two multipliers, Z28
// the number of shards; Z2 is scratch.
#define HASH8 \
	VPXORQ   Z31, Z0, Z1 \
	VPSRLQ   $30, Z1, Z2 \
	VPXORQ   Z2, Z1, Z1 \
	VPMULLQ  Z30, Z1, Z1 \
	VPSRLQ   $27, Z1, Z2 \
	VPXORQ   Z2, Z1, Z1 \
	VPMULLQ  Z29, Z1, Z1 \
	VPSRLQ   $31, Z1, Z2 \
	VPXORQ   Z2, Z1, Z1 \
	VPSRLQ   $32, Z1, Z1 \
	VPMULUDQ Z28, Z1, Z1 \
	VPSRLQ   $32, Z1, Z1

// HASHSTEP loads eight keys from SI into Z0, their shards into Z1, stores
// the eight shard bytes at DI, and starts the walk over the shards: Z3
// (the shard in every lane) and R11 at zero.
#define HASHSTEP \
	VMOVDQU64 (SI), Z0 \
	HASH8 \
	VPMOVQB   Z1, X2 \
	VMOVQ     X2, (DI) \
	VPXORQ    Z3, Z3, Z3 \
	XORQ      R11, R11

// func count8Vec(keys *uint64, blocks int, sid *uint8, seed uint64, nd int, cnt *int)
//
// Eight keys a step: their shards, the eight shard bytes stored at once,
// and for every shard the number of them added to its count.
TEXT ·count8Vec(SB), NOSPLIT, $0-48
	MOVQ         keys+0(FP), SI
	MOVQ         blocks+8(FP), CX
	MOVQ         sid+16(FP), DI
	VPBROADCASTQ seed+24(FP), Z31
	MOVQ         nd+32(FP), R8
	MOVQ         cnt+40(FP), R10
	HASHCONSTS
	TESTQ        CX, CX
	JZ           cdone

cblock:
	HASHSTEP

cshard:
	VPCMPEQQ Z3, Z1, K1
	KMOVB    K1, AX
	POPCNTL  AX, AX
	ADDQ     AX, (R10)(R11*8)
	VPADDQ   Z27, Z3, Z3
	INCQ     R11
	CMPQ     R11, R8
	JB       cshard
	ADDQ     $64, SI
	ADDQ     $8, DI
	DECQ     CX
	JNZ      cblock

cdone:
	VZEROUPPER
	RET

// func route8Vec(keys *uint64, blocks int, sid *uint8, seed uint64, nd int, dst *unsafe.Pointer, cur *int, limit *int) bool
//
// count8Vec and place8Vec in one pass: eight keys a step, their shards
// and shard bytes, each shard's keys written at its cursor. It stops, with
// false, at the first step that would take a cursor past its limit.
TEXT ·route8Vec(SB), NOSPLIT, $0-65
	MOVQ         keys+0(FP), SI
	MOVQ         blocks+8(FP), CX
	MOVQ         sid+16(FP), DI
	VPBROADCASTQ seed+24(FP), Z31
	MOVQ         nd+32(FP), R8
	MOVQ         dst+40(FP), R9
	MOVQ         cur+48(FP), R10
	MOVQ         limit+56(FP), R12
	HASHCONSTS
	TESTQ        CX, CX
	JZ           rdone

rblock:
	HASHSTEP

rshard:
	VPCMPEQQ    Z3, Z1, K1
	KMOVB       K1, AX
	POPCNTL     AX, AX
	JZ          rnext
	MOVQ        (R10)(R11*8), BX
	LEAQ        (BX)(AX*1), R13
	CMPQ        R13, (R12)(R11*8)
	JA          rfull
	MOVL        $0xff, DX
	BZHIL       AX, DX, DX
	KMOVB       DX, K2
	VPCOMPRESSQ Z0, K1, Z4
	MOVQ        (R9)(R11*8), DX
	LEAQ        (DX)(BX*8), DX
	VMOVDQU64   Z4, K2, (DX)
	MOVQ        R13, (R10)(R11*8)

rnext:
	VPADDQ Z27, Z3, Z3
	INCQ   R11
	CMPQ   R11, R8
	JB     rshard
	ADDQ   $64, SI
	ADDQ   $8, DI
	DECQ   CX
	JNZ    rblock

rdone:
	MOVB $1, ret+64(FP)
	VZEROUPPER
	RET

rfull:
	MOVB $0, ret+64(FP)
	VZEROUPPER
	RET

// func place8Vec(keys *uint64, blocks int, sid *uint8, nd int, dst *unsafe.Pointer, cur *int)
//
// Eight keys a step: for every shard, the keys of the step that go to it
// packed to the front of a register (VPCOMPRESSQ) and written with a store
// masked to their number, so nothing past the shard's cursor is touched.
// A shard with none of the step's keys is skipped: a masked load or store
// with an empty mask costs hundreds of cycles on some CPUs (a batch whose
// keys all went to one shard ran 50 times slower without the skip).
TEXT ·place8Vec(SB), NOSPLIT, $0-48
	MOVQ         keys+0(FP), SI
	MOVQ         blocks+8(FP), CX
	MOVQ         sid+16(FP), DI
	MOVQ         nd+24(FP), R8
	MOVQ         dst+32(FP), R9
	MOVQ         cur+40(FP), R10
	ONES
	TESTQ        CX, CX
	JZ           pdone

pblock:
	VMOVDQU64 (SI), Z0
	VPMOVZXBQ (DI), Z1
	VPXORQ    Z3, Z3, Z3
	XORQ      R11, R11

pshard:
	VPCMPEQQ    Z3, Z1, K1
	KMOVB       K1, AX
	POPCNTL     AX, AX
	JZ          pnext
	MOVL        $0xff, DX
	BZHIL       AX, DX, DX
	KMOVB       DX, K2
	VPCOMPRESSQ Z0, K1, Z4
	MOVQ        (R10)(R11*8), BX
	MOVQ        (R9)(R11*8), DX
	LEAQ        (DX)(BX*8), DX
	VMOVDQU64   Z4, K2, (DX)
	ADDQ        AX, BX
	MOVQ        BX, (R10)(R11*8)

pnext:
	VPADDQ Z27, Z3, Z3
	INCQ   R11
	CMPQ   R11, R8
	JB     pshard
	ADDQ        $64, SI
	ADDQ        $8, DI
	DECQ        CX
	JNZ         pblock

pdone:
	VZEROUPPER
	RET

// func gather8Vec(sid *uint8, blocks int, nd int, src *unsafe.Pointer, cur *int, out *uint64, fsrc *unsafe.Pointer, fout *bool)
//
// Eight answers a step: for every shard, as many slots as the step has
// keys of that shard read with a load masked to their number (nothing past
// them is read) and spread into those keys' lanes (VPEXPANDQ); found bytes
// likewise, widened to lanes and narrowed back. Shards with none of the
// step's keys are skipped, as in place8Vec.
TEXT ·gather8Vec(SB), NOSPLIT, $0-64
	MOVQ         sid+0(FP), DI
	MOVQ         blocks+8(FP), CX
	MOVQ         nd+16(FP), R8
	MOVQ         src+24(FP), R9
	MOVQ         cur+32(FP), R10
	MOVQ         out+40(FP), SI
	MOVQ         fsrc+48(FP), R12
	MOVQ         fout+56(FP), R13
	ONES
	TESTQ        CX, CX
	JZ           gdone

gblock:
	VPMOVZXBQ (DI), Z1
	VPXORQ    Z3, Z3, Z3
	VPXORQ    Z6, Z6, Z6
	VPXORQ    Z7, Z7, Z7
	XORQ      R11, R11

gshard:
	VPCMPEQQ    Z3, Z1, K1
	KMOVB       K1, AX
	POPCNTL     AX, AX
	JZ          gnext
	MOVL        $0xff, DX
	BZHIL       AX, DX, DX
	KMOVB       DX, K2
	MOVQ        (R10)(R11*8), BX
	MOVQ        (R9)(R11*8), DX
	VMOVDQU64.Z (DX)(BX*8), K2, Z4
	VPEXPANDQ   Z4, K1, Z6
	TESTQ       R12, R12
	JZ          gcur
	MOVQ        (R12)(R11*8), DX
	VMOVDQU8.Z  (DX)(BX*1), K2, X5
	VPMOVZXBQ   X5, Z5
	VPEXPANDQ   Z5, K1, Z7

gcur:
	ADDQ AX, BX
	MOVQ BX, (R10)(R11*8)

gnext:
	VPADDQ    Z27, Z3, Z3
	INCQ      R11
	CMPQ      R11, R8
	JB        gshard
	VMOVDQU64 Z6, (SI)
	TESTQ     R12, R12
	JZ        gstep
	VPMOVQB   Z7, X7
	VMOVQ     X7, (R13)
	ADDQ      $8, R13

gstep:
	ADDQ $8, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  gblock

gdone:
	VZEROUPPER
	RET
