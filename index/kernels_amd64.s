#include "textflag.h"
#include "go_asm.h"

// ADDTERM adds the k-th of the eight terms at SP to the score of its
// posting, one of size bytes whose document comes first.
#define ADDTERM(k, size) \
	MOVLQSX (k*size)(SI), R8 \
	VMOVSD (k*8)(SP), X0 \
	VADDSD (DI)(R8*8), X0, X0 \
	VMOVSD X0, (DI)(R8*8)

// TERMARGS loads the BM25 kernels' arguments: scores in DI, the postings
// in SI and their end (n postings of 1<<shift bytes) in CX, the term in BX,
// its qw and k1 (at the offsets given) in Z12 and Z13; Z11 = 0, Z15 = −0.
#define TERMARGS(qw, k1, shift) \
	MOVQ scores+0(FP), DI \
	MOVQ p+8(FP), SI \
	MOVQ n+16(FP), CX \
	MOVQ c+24(FP), BX \
	VBROADCASTSD qw(BX), Z12 \
	VBROADCASTSD k1(BX), Z13 \
	VPXORQ Z11, Z11, Z11 \
	MOVQ $0x8000000000000000, AX \
	VPBROADCASTQ AX, Z15 \
	SHLQ $shift, CX \
	ADDQ SI, CX

// SCORE8 turns the eight weighted frequencies in tf into qw·tf / (k1 + tf),
// or −0 unless tf > 0, as Go does (nothing fused), and adds them to their
// postings' scores one at a time (adding −0 leaves any score as it is, as
// Go's skipping it does). Postings are size bytes.
#define SCORE8(tf, size) \
	VCMPPD $30, Z11, tf, K1 \
	VMULPD Z12, tf, Z4 \
	VADDPD Z13, tf, Z5 \
	VDIVPD Z5, Z4, Z4 \
	VBLENDMPD Z4, Z15, K1, Z4 \
	VMOVUPD Z4, (SP) \
	ADDTERM(0, size) \
	ADDTERM(1, size) \
	ADDTERM(2, size) \
	ADDTERM(3, size) \
	ADDTERM(4, size) \
	ADDTERM(5, size) \
	ADDTERM(6, size) \
	ADDTERM(7, size)

// The scan's kernels: eight int8 columns of 32 documents a pass, against
// the query's int16 components in pairs (q[t] holds the components of
// columns 2t, low half, and 2t+1, high half). Each column pair is widened
// to int16 and interleaved (a document's two values side by side in one
// 32-bit lane), then multiplied by the pair and summed into int32 lanes:
// one VPDPWSSD with AVX-512 VNNI, VPMADDWD and VPADDD with AVX2. Integer
// sums are exact, so both kernels and the Go loop give the same values.
//
// The interleave works within 128-bit lanes, so a group of 32 documents
// keeps its sums in the order groupDoc gives (kernels.go): the low
// interleaves (documents 0-3, 8-11, 16-19, 24-27) first, then the high
// ones.

// DOT8ARGS loads the kernels' arguments: acc in DI, n in CX, the four
// broadcast query pairs in q0-q3, the eight column pointers in DX, SI,
// R8-R12 and BX; AX = 0.
#define DOT8ARGS(q0, q1, q2, q3) \
	MOVQ acc+0(FP), DI \
	MOVQ n+8(FP), CX \
	MOVQ q+16(FP), BX \
	VPBROADCASTD 0(BX), q0 \
	VPBROADCASTD 4(BX), q1 \
	VPBROADCASTD 8(BX), q2 \
	VPBROADCASTD 12(BX), q3 \
	MOVQ c+24(FP), BX \
	MOVQ 0(BX), DX \
	MOVQ 8(BX), SI \
	MOVQ 16(BX), R8 \
	MOVQ 24(BX), R9 \
	MOVQ 32(BX), R10 \
	MOVQ 40(BX), R11 \
	MOVQ 48(BX), R12 \
	MOVQ 56(BX), BX \
	XORQ AX, AX

// PAIR64 adds column pair (a, b) at AX, times the pair in q, to Z0 (low
// interleaves) and Z1 (high).
#define PAIR64(a, b, q) \
	VPMOVSXBW (a)(AX*1), Z4 \
	VPMOVSXBW (b)(AX*1), Z5 \
	VPUNPCKLWD Z5, Z4, Z6 \
	VPUNPCKHWD Z5, Z4, Z7 \
	VPDPWSSD q, Z6, Z0 \
	VPDPWSSD q, Z7, Z1

// func dot8Int16VNNI(acc *int32, n int, q *[4]int32, c *[8]*int8)
// n is a multiple of 32; every column holds at least n values.
TEXT ·dot8Int16VNNI(SB), NOSPLIT, $0-32
	DOT8ARGS(Z12, Z13, Z14, Z15)

vnni:
	CMPQ AX, CX
	JGE  vnnidone
	VMOVDQU32 (DI)(AX*4), Z0
	VMOVDQU32 64(DI)(AX*4), Z1
	PAIR64(DX, SI, Z12)
	PAIR64(R8, R9, Z13)
	PAIR64(R10, R11, Z14)
	PAIR64(R12, BX, Z15)
	VMOVDQU32 Z0, (DI)(AX*4)
	VMOVDQU32 Z1, 64(DI)(AX*4)
	ADDQ $32, AX
	JMP  vnni

vnnidone:
	VZEROUPPER
	RET

// PAIR32 is PAIR64 with AVX2: Y0 and Y1 take the low interleaves of
// documents 0-15 and 16-31, Y2 and Y3 the high ones.
#define PAIR32(a, b, q) \
	VPMOVSXBW (a)(AX*1), Y4 \
	VPMOVSXBW (b)(AX*1), Y5 \
	VPMOVSXBW 16(a)(AX*1), Y6 \
	VPMOVSXBW 16(b)(AX*1), Y7 \
	VPUNPCKLWD Y5, Y4, Y8 \
	VPUNPCKHWD Y5, Y4, Y9 \
	VPUNPCKLWD Y7, Y6, Y10 \
	VPUNPCKHWD Y7, Y6, Y11 \
	VPMADDWD q, Y8, Y8 \
	VPMADDWD q, Y9, Y9 \
	VPMADDWD q, Y10, Y10 \
	VPMADDWD q, Y11, Y11 \
	VPADDD Y8, Y0, Y0 \
	VPADDD Y10, Y1, Y1 \
	VPADDD Y9, Y2, Y2 \
	VPADDD Y11, Y3, Y3

// func dot8Int16AVX2(acc *int32, n int, q *[4]int32, c *[8]*int8)
// dot8Int16VNNI without AVX-512, in the same order.
TEXT ·dot8Int16AVX2(SB), NOSPLIT, $0-32
	DOT8ARGS(Y12, Y13, Y14, Y15)

avx2:
	CMPQ AX, CX
	JGE  avx2done
	VMOVDQU (DI)(AX*4), Y0
	VMOVDQU 32(DI)(AX*4), Y1
	VMOVDQU 64(DI)(AX*4), Y2
	VMOVDQU 96(DI)(AX*4), Y3
	PAIR32(DX, SI, Y12)
	PAIR32(R8, R9, Y13)
	PAIR32(R10, R11, Y14)
	PAIR32(R12, BX, Y15)
	VMOVDQU Y0, (DI)(AX*4)
	VMOVDQU Y1, 32(DI)(AX*4)
	VMOVDQU Y2, 64(DI)(AX*4)
	VMOVDQU Y3, 96(DI)(AX*4)
	ADDQ $32, AX
	JMP  avx2

avx2done:
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


// func addBodyAVX512(scores *float64, p *bodyPosting, n int, c *bodyTerm)
// addBodyGo for n postings, n a multiple of 8, eight a pass: each lane
// computes tf = wb·tf, then SCORE8.
// Scalar additions beat a gather and a scatter, which on AMD's Zen 4 cost
// more than the division.
TEXT ·addBodyAVX512(SB), NOSPLIT, $64-32
	TERMARGS(bodyTerm_qw, bodyTerm_k1, 3)
	VBROADCASTSD bodyTerm_wb(BX), Z10

ab8:
	CMPQ SI, CX
	JAE  abdone              // eight {doc int32, tf float32} a pass
	VMOVDQU64 (SI), Z1
	VPSRLQ $32, Z1, Z2
	VPMOVQD Z2, Y2
	VCVTPS2PD Y2, Z3
	VMULPD Z10, Z3, Z3
	SCORE8(Z3, 8)
	ADDQ $64, SI
	JMP  ab8

abdone:
	VZEROUPPER
	RET

// func addFullAVX512(scores *float64, p *posting, n int, c *fullTerm)
// addFullGo for n postings, n a multiple of 8, eight a pass: the three
// frequencies are picked into lanes (fullLanes), each lane computes
// tf = w0·tf0 + w1·tf1 + w2·tf2 (each product and sum rounded), then
// SCORE8.
TEXT ·addFullAVX512(SB), NOSPLIT, $64-32
	TERMARGS(fullTerm_qw, fullTerm_k1, 4)
	VBROADCASTSD fullTerm_w0(BX), Z16
	VBROADCASTSD fullTerm_w1(BX), Z17
	VBROADCASTSD fullTerm_w2(BX), Z18
	VMOVDQU32 ·fullLanes+0(SB), Z20
	VMOVDQU32 ·fullLanes+64(SB), Z21
	VMOVDQU32 ·fullLanes+128(SB), Z22

af8:
	CMPQ SI, CX
	JAE  afdone              // eight {doc int32, tf [3]float32} a pass
	VMOVDQU32 (SI), Z1
	VMOVDQU32 64(SI), Z2
	VMOVDQA64 Z1, Z3
	VPERMT2D Z2, Z20, Z3     // tf0s
	VMOVDQA64 Z1, Z4
	VPERMT2D Z2, Z21, Z4     // tf1s
	VMOVDQA64 Z1, Z5
	VPERMT2D Z2, Z22, Z5     // tf2s
	VCVTPS2PD Y3, Z6
	VCVTPS2PD Y4, Z7
	VCVTPS2PD Y5, Z8
	VMULPD Z16, Z6, Z6
	VMULPD Z17, Z7, Z7
	VMULPD Z18, Z8, Z8
	VADDPD Z7, Z6, Z6
	VADDPD Z8, Z6, Z3
	SCORE8(Z3, 16)
	ADDQ $128, SI
	JMP  af8

afdone:
	VZEROUPPER
	RET
