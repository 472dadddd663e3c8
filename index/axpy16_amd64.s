#include "textflag.h"

// func axpyInt16AVX2(acc []float32, x float32, col []int16)
// acc[i] += x * float32(col[i]) for i < len(acc); len(col) >= len(acc).
TEXT ·axpyInt16AVX2(SB), NOSPLIT, $0-56
	MOVQ acc_base+0(FP), DI
	MOVQ acc_len+8(FP), CX
	VBROADCASTSS x+24(FP), Y0
	MOVQ col_base+32(FP), SI
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-32, DX

loop32:
	CMPQ AX, DX
	JGE  tail8
	VPMOVSXWD (SI)(AX*2), Y1
	VPMOVSXWD 16(SI)(AX*2), Y2
	VPMOVSXWD 32(SI)(AX*2), Y3
	VPMOVSXWD 48(SI)(AX*2), Y4
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y4, Y4
	VMULPS    Y0, Y1, Y1
	VMULPS    Y0, Y2, Y2
	VMULPS    Y0, Y3, Y3
	VMULPS    Y0, Y4, Y4
	VADDPS    (DI)(AX*4), Y1, Y1
	VADDPS    32(DI)(AX*4), Y2, Y2
	VADDPS    64(DI)(AX*4), Y3, Y3
	VADDPS    96(DI)(AX*4), Y4, Y4
	VMOVUPS   Y1, (DI)(AX*4)
	VMOVUPS   Y2, 32(DI)(AX*4)
	VMOVUPS   Y3, 64(DI)(AX*4)
	VMOVUPS   Y4, 96(DI)(AX*4)
	ADDQ      $32, AX
	JMP       loop32

tail8:
	MOVQ CX, DX
	ANDQ $-8, DX

loop8:
	CMPQ      AX, DX
	JGE       tail1
	VPMOVSXWD (SI)(AX*2), Y1
	VCVTDQ2PS Y1, Y1
	VMULPS    Y0, Y1, Y1
	VADDPS    (DI)(AX*4), Y1, Y1
	VMOVUPS   Y1, (DI)(AX*4)
	ADDQ      $8, AX
	JMP       loop8

tail1:
	CMPQ     AX, CX
	JGE      done
	MOVWLSX  (SI)(AX*2), BX
	VCVTSI2SSL BX, X1, X1
	VMULSS   X0, X1, X1
	VADDSS   (DI)(AX*4), X1, X1
	VMOVSS   X1, (DI)(AX*4)
	INCQ     AX
	JMP      tail1

done:
	VZEROUPPER
	RET
