package bench

import (
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress reports routed queries.
type Progress interface {
	Describe(what string)
	Add(n int)
	Finish()
}

// NewProgress returns a progress bar drawn on f when f is a terminal, and nil
// otherwise: redirected output and CI logs stay free of control codes.
func NewProgress(f *os.File, total int) Progress {
	if f == nil || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &bar{b: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("queries"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

type bar struct{ b *progressbar.ProgressBar }

func (p *bar) Describe(what string) { p.b.Describe(what) }
func (p *bar) Add(n int)            { _ = p.b.Add(n) }
func (p *bar) Finish()              { _ = p.b.Finish() }
