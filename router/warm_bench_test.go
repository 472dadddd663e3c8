package router_test

// Warm start against library size: what loading a kept index costs (the
// library hash, reading and checking the files, quantising the vectors).
//
//	go test ./router -run '^$' -bench Warm -benchtime 5x
//	SCALE_SIZES=10000 go test ./router -run '^$' -bench Warm -benchtime 5x

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
)

func BenchmarkWarmStart(b *testing.B) {
	for _, size := range scaleSizes() {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			snap, tmp := scaleLibrary(b, size)
			defer os.RemoveAll(tmp)
			warm := b.TempDir()
			opts := func(logs *bytes.Buffer) router.Options {
				o := builtinOptions()
				o.WarmDir = warm
				o.Restore = func(s []byte) (router.Embedder, error) { return embed.RestoreBuiltin(s) }
				o.Logger = slog.New(slog.NewTextHandler(logs, nil))
				return o
			}
			ctx := context.Background()
			var logs bytes.Buffer
			r, err := router.New(ctx, snap, opts(&logs))
			if err != nil {
				b.Fatal(err)
			}
			r.Close() // waits for the kept index to be written
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				logs.Reset()
				r, err := router.New(ctx, snap, opts(&logs))
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if !strings.Contains(logs.String(), "loaded the routing index kept from the last start") {
					b.Fatalf("not a warm start:\n%s", logs.String())
				}
				r.Close()
				b.StartTimer()
			}
		})
	}
}
