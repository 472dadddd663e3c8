package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// A buffer of Min bytes or more lies in a mapping the kernel was asked to
// back with huge pages (VmFlags "hg"), wherever transparent huge pages are
// not switched off; whether it then finds free huge pages is the kernel's
// business.
func TestMakeAdvises(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skip("transparent huge pages are off here")
	}
	b := Make[uint64](3 * Min / 8)
	mid := uintptr(unsafe.Pointer(&b[len(b)/2]))
	flags := vmFlags(t, mid)
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Fatalf("the mapping holding the buffer has VmFlags %q, no hg", flags)
	}
}

// vmFlags returns the VmFlags of the mapping of /proc/self/smaps that
// holds address a.
func vmFlags(t *testing.T, a uintptr) string {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= a && a < hi
			continue
		}
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.TrimSpace(flags)
		}
	}
	t.Fatalf("no mapping holds %#x", a)
	return ""
}
