#include "textflag.h"
#include "go_asm.h"

// COLUMN32 adds one int8 column times its broadcast factor x to the 32
// accumulators Y0-Y3: widen 32 bytes at c+AX to int32, convert, multiply-add.
#define COLUMN32(c, x) \
	VPMOVSXBD (c)(AX*1), Y4 \
	VPMOVSXBD 8(c)(AX*1), Y5 \
	VPMOVSXBD 16(c)(AX*1), Y6 \
	VPMOVSXBD 24(c)(AX*1), Y7 \
	VCVTDQ2PS Y4, Y4 \
	VCVTDQ2PS Y5, Y5 \
	VCVTDQ2PS Y6, Y6 \
	VCVTDQ2PS Y7, Y7 \
	VFMADD231PS x, Y4, Y0 \
	VFMADD231PS x, Y5, Y1 \
	VFMADD231PS x, Y6, Y2 \
	VFMADD231PS x, Y7, Y3

// COLUMN64 is COLUMN32 for 64 accumulators in Z0-Z3.
#define COLUMN64(c, x) \
	VPMOVSXBD (c)(AX*1), Z4 \
	VPMOVSXBD 16(c)(AX*1), Z5 \
	VPMOVSXBD 32(c)(AX*1), Z6 \
	VPMOVSXBD 48(c)(AX*1), Z7 \
	VCVTDQ2PS Z4, Z4 \
	VCVTDQ2PS Z5, Z5 \
	VCVTDQ2PS Z6, Z6 \
	VCVTDQ2PS Z7, Z7 \
	VFMADD231PS x, Z4, Z0 \
	VFMADD231PS x, Z5, Z1 \
	VFMADD231PS x, Z6, Z2 \
	VFMADD231PS x, Z7, Z3

// func axpy4Int8FMA(acc []float32, x *[4]float32, c0, c1, c2, c3 *int8)
// acc[i] += x[0]*c0[i] + x[1]*c1[i] + x[2]*c2[i] + x[3]*c3[i] for i < len(acc),
// with fused multiply-adds; each column holds at least len(acc) values.
TEXT ·axpy4Int8FMA(SB), NOSPLIT, $0-64
	MOVQ acc_base+0(FP), DI
	MOVQ acc_len+8(FP), CX
	MOVQ x+24(FP), BX
	VBROADCASTSS 0(BX), Y12
	VBROADCASTSS 4(BX), Y13
	VBROADCASTSS 8(BX), Y14
	VBROADCASTSS 12(BX), Y15
	MOVQ c0+32(FP), R8
	MOVQ c1+40(FP), R9
	MOVQ c2+48(FP), R10
	MOVQ c3+56(FP), R11
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-32, DX

loop32:
	CMPQ AX, DX
	JGE  tail8
	VMOVUPS (DI)(AX*4), Y0
	VMOVUPS 32(DI)(AX*4), Y1
	VMOVUPS 64(DI)(AX*4), Y2
	VMOVUPS 96(DI)(AX*4), Y3
	COLUMN32(R8, Y12)
	COLUMN32(R9, Y13)
	COLUMN32(R10, Y14)
	COLUMN32(R11, Y15)
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	ADDQ $32, AX
	JMP  loop32

tail8:
	MOVQ CX, DX
	ANDQ $-8, DX

loop8:
	CMPQ AX, DX
	JGE  tail1
	VMOVUPS (DI)(AX*4), Y0
	VPMOVSXBD (R8)(AX*1), Y4
	VCVTDQ2PS Y4, Y4
	VFMADD231PS Y12, Y4, Y0
	VPMOVSXBD (R9)(AX*1), Y4
	VCVTDQ2PS Y4, Y4
	VFMADD231PS Y13, Y4, Y0
	VPMOVSXBD (R10)(AX*1), Y4
	VCVTDQ2PS Y4, Y4
	VFMADD231PS Y14, Y4, Y0
	VPMOVSXBD (R11)(AX*1), Y4
	VCVTDQ2PS Y4, Y4
	VFMADD231PS Y15, Y4, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	JMP  loop8

tail1:
	CMPQ AX, CX
	JGE  done
	VMOVSS (DI)(AX*4), X0
	MOVBLSX (R8)(AX*1), BX
	VCVTSI2SSL BX, X4, X4
	VFMADD231SS X12, X4, X0
	MOVBLSX (R9)(AX*1), BX
	VCVTSI2SSL BX, X4, X4
	VFMADD231SS X13, X4, X0
	MOVBLSX (R10)(AX*1), BX
	VCVTSI2SSL BX, X4, X4
	VFMADD231SS X14, X4, X0
	MOVBLSX (R11)(AX*1), BX
	VCVTSI2SSL BX, X4, X4
	VFMADD231SS X15, X4, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ AX
	JMP  tail1

done:
	VZEROUPPER
	RET

// func exactRows8AVX2(rows *float32, off *[8]int32, idx *int32, val *float32, m int, out *[8]float32)
// out[r] = the float32 sum over k < m, in order, of val[k]*rows[off[r]+idx[k]]
// rounded before it is added: Prepared.Exact's bits for eight rows at once,
// a lane each (multiply, then add; never fused).
TEXT ·exactRows8AVX2(SB), NOSPLIT, $0-48
	MOVQ rows+0(FP), SI
	MOVQ off+8(FP), BX
	MOVQ idx+16(FP), R8
	MOVQ val+24(FP), R9
	MOVQ m+32(FP), CX
	MOVQ out+40(FP), DI
	VMOVDQU (BX), Y6
	VXORPS Y0, Y0, Y0
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VPBROADCASTD (R8)(AX*4), Y1
	VPADDD Y6, Y1, Y1
	VPCMPEQD Y3, Y3, Y3
	VGATHERDPS Y3, (SI)(Y1*4), Y4
	VBROADCASTSS (R9)(AX*4), Y5
	VMULPS Y5, Y4, Y4
	VADDPS Y4, Y0, Y0
	INCQ AX
	JMP  loop

done:
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET


// func axpy4Int8AVX512(acc []float32, x *[4]float32, c0, c1, c2, c3 *int8)
// axpy4Int8FMA sixty-four accumulators at a time in 512-bit registers;
// len(acc) is a multiple of 64.
TEXT ·axpy4Int8AVX512(SB), NOSPLIT, $0-64
	MOVQ acc_base+0(FP), DI
	MOVQ acc_len+8(FP), CX
	MOVQ x+24(FP), BX
	VBROADCASTSS 0(BX), Z12
	VBROADCASTSS 4(BX), Z13
	VBROADCASTSS 8(BX), Z14
	VBROADCASTSS 12(BX), Z15
	MOVQ c0+32(FP), R8
	MOVQ c1+40(FP), R9
	MOVQ c2+48(FP), R10
	MOVQ c3+56(FP), R11
	XORQ AX, AX

loop64:
	CMPQ AX, CX
	JGE  done
	VMOVUPS (DI)(AX*4), Z0
	VMOVUPS 64(DI)(AX*4), Z1
	VMOVUPS 128(DI)(AX*4), Z2
	VMOVUPS 192(DI)(AX*4), Z3
	COLUMN64(R8, Z12)
	COLUMN64(R9, Z13)
	COLUMN64(R10, Z14)
	COLUMN64(R11, Z15)
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	ADDQ $64, AX
	JMP  loop64

done:
	VZEROUPPER
	RET

// func addBodyAVX512(scores *float64, body *bodyPosting, n int, c *bodyTerm)
// addBodyGo for n postings, n a multiple of 8, eight a pass: each lane
// computes tf = wb·tf, then qw·tf / (k1 + tf) where tf > 0, as Go does
// (multiply, add, divide; nothing fused), and the lanes' scores are
// gathered, added to and scattered back under the tf > 0 mask.
TEXT ·addBodyAVX512(SB), NOSPLIT, $0-32
	MOVQ scores+0(FP), DI
	MOVQ body+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ c+24(FP), BX
	VBROADCASTSD bodyTerm_wb(BX), Z10
	VBROADCASTSD bodyTerm_qw(BX), Z12
	VBROADCASTSD bodyTerm_k1(BX), Z13
	VPXORQ Z11, Z11, Z11
	SHLQ $3, CX
	ADDQ SI, CX              // the end of the postings (8 bytes each)

loop8:
	CMPQ SI, CX
	JAE  done
	VMOVDQU64 (SI), Z0       // eight {doc int32, tf float32}
	VPMOVQD Z0, Y1           // the documents
	VPSRLQ $32, Z0, Z2
	VPMOVQD Z2, Y2           // the frequencies
	VCVTPS2PD Y2, Z3
	VMULPD Z10, Z3, Z3       // tf = wb·tf
	VCMPPD $30, Z11, Z3, K1  // tf > 0 (ordered: not NaN)
	VMULPD Z12, Z3, Z4
	VADDPD Z13, Z3, Z5
	VDIVPD Z5, Z4, Z4        // qw·tf / (k1 + tf)
	KMOVW K1, K2             // a gather clears its mask
	VGATHERDPD (DI)(Y1*8), K2, Z6
	VADDPD Z4, Z6, Z6
	VSCATTERDPD Z6, K1, (DI)(Y1*8)
	ADDQ $64, SI
	JMP  loop8

done:
	VZEROUPPER
	RET
