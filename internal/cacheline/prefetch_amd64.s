#include "textflag.h"

// func Prefetch(p unsafe.Pointer, lines int)
TEXT ·Prefetch(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), AX
	MOVQ lines+8(FP), CX
loop:
	TESTQ CX, CX
	JLE done
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ CX
	JMP loop
done:
	RET
