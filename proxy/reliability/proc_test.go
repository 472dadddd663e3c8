package reliability

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/internal/syncbuf"
)

// The suite runs the built binary, as an operator does: `router serve`
// with a configuration file, in front of the fake upstream, measured from
// outside (its log, /metrics, /proc).

var (
	buildOnce sync.Once
	buildDir  string
	binary    string
	buildErr  error
)

// TestMain removes the built binary after the run: each build is ~46 MB,
// and a shared machine's temporary folder would keep one per run.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// routerBinary builds cmd/router once per test run.
func routerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "skillrouter-reliability-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		binary = filepath.Join(dir, "router")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/skillrouter/skillrouter/cmd/router").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// proc is one `router serve` process.
type proc struct {
	t     *testing.T
	cmd   *exec.Cmd
	addr  string
	logs  *syncbuf.Buffer
	done  chan struct{}
	state *os.ProcessState
}

// startProxy runs `router serve` with the YAML configuration cfg (listen
// and log settings added), with the open-file limit nofile when > 0, and
// waits until it is ready.
func startProxy(t *testing.T, cfg string, nofile int) *proc {
	t.Helper()
	bin := routerBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg = "listen: " + addr + "\nlog:\n  format: json\n  level: info\n" + cfg
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	if nofile > 0 {
		cmd = exec.Command("bash", "-c", `ulimit -n `+strconv.Itoa(nofile)+` && exec "$0" "$@"`, bin, "serve", "--config", path)
	} else {
		cmd = exec.Command(bin, "serve", "--config", path)
	}
	p := &proc{t: t, cmd: cmd, addr: addr, logs: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	cmd.Env = append(os.Environ(), "SKILLROUTER_EMBEDDER_CACHE_DIR=-")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(p.logs.String(), "skillrouter proxy ready") {
		select {
		case <-p.done:
			t.Fatalf("router serve exited: %v\n%s", p.state, p.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("router serve not ready in 60 s:\n%s", p.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

func (p *proc) url(path string) string { return "http://" + p.addr + path }

func (p *proc) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

// wait waits for the process to exit (at most d) and says whether it did.
func (p *proc) wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// logLines returns the JSON log lines whose msg is msg.
func (p *proc) logLines(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(p.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// metrics fetches /metrics (from addr when given) as "name{labels}" -> value.
func (p *proc) metrics(hdr map[string]string) map[string]float64 {
	req, _ := http.NewRequest("GET", p.url("/metrics"), nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// sum adds the series of name whose labels contain every want.
func sum(m map[string]float64, name string, want ...string) float64 {
	var s float64
	for k, v := range m {
		if !strings.HasPrefix(k, name+"{") && k != name {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(k, w)
		}
		if ok {
			s += v
		}
	}
	return s
}

// usage is the process's resident memory (MiB) and open file descriptors.
func (p *proc) usage() (rssMiB float64, fds int) {
	pid := p.cmd.Process.Pid
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.Atoi(strings.Fields(v)[0])
				rssMiB = float64(kb) / 1024
			}
		}
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		fds = len(ents)
	}
	return rssMiB, fds
}

// readAll reads a response body, tolerating a connection that breaks.
func readAll(r io.Reader) string {
	b, _ := io.ReadAll(r)
	return string(b)
}
