package hugepage

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// ReadFile reads what os.ReadFile reads, below and above Min, and Make
// gives zeroed slices of the length asked.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 4095, Min - 1, Min, Min + 3<<20 + 5} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(r.Uint32())
		}
		name := filepath.Join(dir, "f")
		if err := os.WriteFile(name, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(name)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: read %d, %v", n, len(got), err)
		}
		z := Make[uint32](n / 4)
		if len(z) != n/4 || bytes.Count(unsafeBytes(z), []byte{0}) != len(z)*4 {
			t.Fatalf("Make(%d): not %d zeros", n/4, n/4)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
}

func unsafeBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}
