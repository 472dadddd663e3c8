// Package hugepage allocates large buffers that the kernel may back with
// huge pages. A warm start reads tens of megabytes of index files; with 4
// KiB pages the first write to each page is a fault, and on some virtual
// machines those faults were most of a warm start's time (docs/performance.md,
// twenty-third look). Where transparent huge pages are "madvise", as on
// Debian and Ubuntu, memory is only given huge pages when asked.
package hugepage

import (
	"io"
	"math"
	"os"
	"unsafe"
)

// Min is the smallest buffer worth advising: below it, no 2 MiB page fits
// inside the buffer.
const Min = 4 << 20

// Make is make([]T, n), advised for huge pages when it takes at least Min
// bytes and the system supports the advice.
func Make[T any](n int) []T {
	s := make([]T, n)
	if size := uintptr(n) * unsafe.Sizeof(*new(T)); n > 0 && size >= Min {
		advise(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), size))
	}
	return s
}

// ReadFile is os.ReadFile into a buffer from Make.
func ReadFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() || info.Size() > math.MaxInt32 {
		return io.ReadAll(f) // a size to trust only for a regular file
	}
	b := Make[byte](int(info.Size()))
	n, err := io.ReadFull(f, b)
	if err == io.ErrUnexpectedEOF || err == nil {
		// Shorter or longer than it was at Stat: written to meanwhile.
		rest, rerr := io.ReadAll(f)
		if rerr != nil {
			return nil, rerr
		}
		return append(b[:n], rest...), nil
	}
	return nil, err
}
