package hugepage

import (
	"syscall"
	"unsafe"
)

// hugeSize is the size of a huge page on the platforms Go runs Linux on
// with transparent huge pages (x86-64, arm64 with 4 KiB pages).
const hugeSize = 2 << 20

// advise asks for huge pages over the whole huge pages inside b, before
// anything is written there. The Go heap hands out a fresh large buffer
// untouched, so its pages are faulted in as huge pages; memory it reuses is
// already mapped and keeps its pages (the advice then changes nothing). A
// kernel without the advice, or with huge pages off, refuses it or ignores
// it: either way b is an ordinary buffer.
func advise(b []byte) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + hugeSize - 1) &^ (hugeSize - 1)
	hi := (start + uintptr(len(b))) &^ (hugeSize - 1)
	if lo >= hi {
		return
	}
	_ = syscall.Madvise(b[lo-start:hi-start], syscall.MADV_HUGEPAGE)
}
