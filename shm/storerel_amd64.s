#include "textflag.h"

// func markWriting(p *uint64)
TEXT ·markWriting(SB), NOSPLIT, $0-8
	MOVQ	p+0(FP), AX
	MOVQ	$-1, (AX)
	RET

// func storeRelease(p *uint64, v uint64)
TEXT ·storeRelease(SB), NOSPLIT, $0-16
	MOVQ	p+0(FP), AX
	MOVQ	v+8(FP), BX
	MOVQ	BX, (AX)
	RET
