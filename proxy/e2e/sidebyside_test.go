package e2e

// The side-by-side cost benchmark (issue 18): the built `router serve`, two
// bare Go httputil.ReverseProxys (Go's default transport, which keeps 2 idle
// upstream connections, and a pooled one, which keeps one per client as the
// router does) and the upstream called directly, measured in one run,
// alternating targets, with a different ~50-word query on every request (no
// ranking-cache hits). Not part of `make test`:
//
//	make bench-compare    (SKILLROUTER_SIDE_BY_SIDE=1 go test -run TestSideBySide -v ./proxy/e2e)
//
// Each target is its own process (a bare proxy is this test binary
// re-executed), so its CPU time (/proc/PID/stat) and RSS (/proc/PID/status)
// are its own; the fake upstream and the load client run in this process.
// Knobs: SKILLROUTER_SBS_SECONDS (per target and round, default 5),
// SKILLROUTER_SBS_ROUNDS (default 3; the table shows medians),
// SKILLROUTER_SBS_CLIENTS (default "1,16,64"), SKILLROUTER_SBS_DELAY_MS
// (the upstream's answer time, default 20), SKILLROUTER_SBS_SKILLS (a
// library size: the real skills first, then the synthetic variants of
// `router bench --scale`; default: the 407 real skills; a list, e.g.
// "10000,407", adds a router per further size as a target of its own) and
// SKILLROUTER_SBS_REPEAT (n > 1 adds the main router once more as a target
// whose clients each send every query n times in a row, as an agent's tool
// loop repeats a user turn's message, so n-1 of n rankings are cached),
// SKILLROUTER_SBS_BASELINE (another router binary, e.g. one built from
// the previous commit: it runs as a fifth target, "baseline routing on",
// for old/new figures alternated in one run), SKILLROUTER_SBS_LOG_LEVEL (the router's, default warn: info writes the
// access log, with routing_ms, to stderr) and SKILLROUTER_SBS_TARGETS (target names to run, e.g.
// "direct,routing on" while taking a profile through
// SKILLROUTER_DEBUG_LISTEN: comma-separated, or semicolon-separated for
// names that hold a comma, "skillrouter, routing on;pooled"; a whole name
// selects that target only, a part every target that contains it;
// default: all).
//
// With a baseline or a second size, the router of the first size (the
// main one) also gets its CPU per request against each of them printed
// round by round.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/bench"
	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/skills"
)

// sbsMainTarget names the router of the first library size, routing on.
const sbsMainTarget = "skillrouter, routing on"

// sbsPooledTarget names the bare proxy whose transport keeps an idle
// upstream connection per client, as the router's does.
const sbsPooledTarget = "bare Go proxy, pooled"

// sbsStartBare starts this test binary as a bare reverse proxy to upstream
// (pool: idle connections kept, 0 for Go's default transport) and returns
// it with its address; the test kills it at cleanup.
func sbsStartBare(t *testing.T, upstream string, pool int) (*exec.Cmd, string) {
	t.Helper()
	bare := exec.Command(os.Args[0], "-test.run", "^$")
	bare.Env = append(os.Environ(), bareProxyEnv+"="+upstream, bareProxyPoolEnv+"="+strconv.Itoa(pool))
	out, _ := bare.StdoutPipe()
	if err := bare.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bare.Process.Kill(); _ = bare.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("bare proxy: %v", err)
	}
	return bare, strings.TrimSpace(addr)
}

// bareProxyEnv makes this test binary a bare reverse proxy to its value
// (the upstream's base URL), listening on the address it prints first.
const bareProxyEnv = "SKILLROUTER_BARE_PROXY_UPSTREAM"

// bareProxyPoolEnv, set to a number, gives the bare proxy a transport that
// keeps that many idle upstream connections; unset, it has Go's default
// transport, which keeps 2 and so opens a connection for most requests
// once more than 2 are in flight.
const bareProxyPoolEnv = "SKILLROUTER_BARE_PROXY_POOL"

func init() {
	up := os.Getenv(bareProxyEnv)
	if up == "" {
		return
	}
	target, err := url.Parse(up)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(ln.Addr().String())
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.URL.Path = target.Path + strings.TrimPrefix(r.In.URL.Path, "/v1")
	}}
	if n, err := strconv.Atoi(os.Getenv(bareProxyPoolEnv)); err == nil && n > 0 {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = n, n
		rp.Transport = tr
	}
	_ = http.Serve(ln, rp)
	os.Exit(0)
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

// sbsTarget is one server under test.
type sbsTarget struct {
	name   string
	base   string // URL including /v1
	pid    int    // 0: this process (no CPU or RSS of its own)
	header map[string]string
	repeat int // requests each client sends with one query before the next (0: 1)
}

// procCPU is the process's user+system CPU time.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// procSwitches is the number of times the process's threads have given up
// a core, waiting (voluntary) or preempted: each is a sleep and a wake-up.
// It tells how many hand-offs a request costs, which is what one client
// pays for most (its threads sleep between requests).
func procSwitches(pid int) (waits, preempted int64) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		for _, l := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(l, ":")
			c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "voluntary_ctxt_switches":
				waits += c
			case "nonvoluntary_ctxt_switches":
				preempted += c
			}
		}
	}
	return waits, preempted
}

// procRSS is the process's resident set in MB.
func procRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// sbsQueries makes a different ~50-word query for every request from the
// words of the upstream queries.
func sbsQueries(t *testing.T, dir string) func(i int64) string {
	qs, err := bench.LoadQueries(filepath.Join(dir, "upstream-queries", "queries.jsonl"))
	if err != nil {
		t.Skip(err)
	}
	var words []string
	for _, q := range qs {
		words = append(words, strings.Fields(q.Text)...)
	}
	return func(i int64) string {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		w := make([]string, 50)
		for k := range w {
			w[k] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
}

// sbsResult is one target's figures in one round.
type sbsResult struct {
	p50, p99 time.Duration
	n        int
	rps      float64
	cpu      time.Duration // per request
	waits    float64       // voluntary context switches per request
	preempts float64       // involuntary ones
	rss      float64
}

func TestSideBySide(t *testing.T) {
	if os.Getenv("SKILLROUTER_SIDE_BY_SIDE") != "1" {
		t.Skip("set SKILLROUTER_SIDE_BY_SIDE=1 (make bench-compare)")
	}
	dir := filepath.Join("..", "..", "..", "shared", "bench")
	if _, err := os.Stat(filepath.Join(dir, "skills")); err != nil {
		t.Skipf("benchmark data not found at %s", dir)
	}
	seconds := time.Duration(envInt("SKILLROUTER_SBS_SECONDS", 5)) * time.Second
	rounds := envInt("SKILLROUTER_SBS_ROUNDS", 3)
	delay := time.Duration(envInt("SKILLROUTER_SBS_DELAY_MS", 20)) * time.Millisecond
	var clients []int
	for _, c := range strings.Split(envOr("SKILLROUTER_SBS_CLIENTS", "1,16,64"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(c)); err == nil && n > 0 {
			clients = append(clients, n)
		}
	}
	query := sbsQueries(t, dir)
	// Library sizes: the first is the main router's; each other one gets a
	// router of its own as one more target, so that costs at two sizes
	// alternate in the same rounds.
	var sizes []int
	for _, f := range strings.Split(os.Getenv("SKILLROUTER_SBS_SKILLS"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			sizes = append(sizes, n)
		}
	}
	library := func(n int) string {
		if n == 0 {
			return filepath.Join(dir, "skills")
		}
		return sbsScaleLibrary(t, dir, n)
	}
	nSkills := 407
	if len(sizes) > 0 {
		nSkills = sizes[0]
	} else {
		sizes = []int{0}
	}
	skillsDir := library(sizes[0])

	up := fakeai.New()
	defer up.Close()
	up.Handle("/v1/chat/completions", fakeai.DelayFromHeader(fakeai.Reply(fakeai.Turn{Content: "ok"})))
	up.StopRecording()

	// The bare proxies: this binary again, with Go's default transport and
	// with one that keeps an idle connection for every client.
	bare, addr := sbsStartBare(t, up.BaseURL(), 0)
	pooled, pooledAddr := sbsStartBare(t, up.BaseURL(), 256)
	// The router: the built binary, its own process.
	bin := filepath.Join(t.TempDir(), "router")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/router").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	rt, routerAddr := sbsStartRouter(t, bin, skillsDir, up.BaseURL())
	readyRSS := procRSS(rt.Process.Pid)

	var baseline []sbsTarget
	if bin := os.Getenv("SKILLROUTER_SBS_BASELINE"); bin != "" {
		bp, addr := sbsStartRouter(t, bin, skillsDir, up.BaseURL())
		baseline = append(baseline, sbsTarget{name: "baseline routing on", base: "http://" + addr + "/v1", pid: bp.Process.Pid})
	}
	targets := []sbsTarget{
		{name: "direct", base: up.BaseURL()},
		{name: "bare Go proxy", base: "http://" + addr + "/v1", pid: bare.Process.Pid},
		{name: sbsPooledTarget, base: "http://" + pooledAddr + "/v1", pid: pooled.Process.Pid},
		{name: "skillrouter, routing off", base: "http://" + routerAddr + "/v1", pid: rt.Process.Pid, header: map[string]string{"X-Skillrouter-Disable": "true"}},
		{name: sbsMainTarget, base: "http://" + routerAddr + "/v1", pid: rt.Process.Pid},
	}
	if n := envInt("SKILLROUTER_SBS_REPEAT", 0); n > 1 {
		// An agent's tool loop: every round of a user turn repeats its user
		// message, so only the first round of each misses the ranking cache.
		targets = append(targets, sbsTarget{name: fmt.Sprintf("routing on, %d requests per query", n), base: "http://" + routerAddr + "/v1", pid: rt.Process.Pid, repeat: n})
		for _, b := range baseline {
			baseline = append(baseline, sbsTarget{name: fmt.Sprintf("%s, %d requests per query", b.name, n), base: b.base, pid: b.pid, repeat: n})
		}
	}
	targets = append(targets, baseline...)
	for _, n := range sizes[1:] {
		p, addr := sbsStartRouter(t, bin, library(n), up.BaseURL())
		targets = append(targets, sbsTarget{name: fmt.Sprintf("routing on, %d skills", n), base: "http://" + addr + "/v1", pid: p.Process.Pid})
	}
	if only := os.Getenv("SKILLROUTER_SBS_TARGETS"); only != "" {
		keep := sbsSelect(targets, only)
		if len(keep) == 0 || keep[0].name != "direct" {
			keep = append([]sbsTarget{targets[0]}, keep...) // the added latency is measured against it
		}
		targets = keep
	}
	var seq atomic.Int64
	run := func(tg sbsTarget, conc int) sbsResult {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc + 4}}
		defer client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), seconds)
		defer cancel()
		cpu0 := procCPU(tg.pid)
		w0, p0 := procSwitches(tg.pid)
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		start := time.Now()
		for range conc {
			wg.Go(func() {
				var mine []time.Duration
				var q int64
				for n := 0; ctx.Err() == nil && len(mine) < 1_000_000; n++ {
					if n%max(tg.repeat, 1) == 0 {
						q = seq.Add(1)
					}
					body, _ := json.Marshal(map[string]any{"model": "bench", "messages": []any{
						map[string]string{"role": "system", "content": "You are a helpful coding assistant."},
						map[string]string{"role": "user", "content": query(q)}}})
					req, _ := http.NewRequest(http.MethodPost, tg.base+"/chat/completions", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set(fakeai.DelayHeader, strconv.FormatInt(delay.Microseconds(), 10))
					for k, v := range tg.header {
						req.Header.Set(k, v)
					}
					t0 := time.Now()
					resp, err := client.Do(req)
					if err != nil {
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 200 {
						mine = append(mine, time.Since(t0))
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		el := time.Since(start)
		res := sbsResult{n: len(lat), rps: float64(len(lat)) / el.Seconds()}
		res.p50, res.p99 = percentiles(lat)
		if tg.pid != 0 && len(lat) > 0 {
			res.cpu = (procCPU(tg.pid) - cpu0) / time.Duration(len(lat))
			w1, p1 := procSwitches(tg.pid)
			res.waits, res.preempts = float64(w1-w0)/float64(len(lat)), float64(p1-p0)/float64(len(lat))
			res.rss = procRSS(tg.pid)
		}
		return res
	}
	// Alternate targets within each round, so drift hits them all alike.
	all := map[string][]sbsResult{}
	key := func(tg string, c int) string { return fmt.Sprintf("%s|%d", tg, c) }
	for r := 0; r < rounds; r++ {
		for _, c := range clients {
			for i := range targets {
				tg := targets[(i+r)%len(targets)]
				all[key(tg.name, c)] = append(all[key(tg.name, c)], run(tg, c))
			}
		}
	}
	med := func(rs []sbsResult, f func(sbsResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	msf := func(d time.Duration) float64 { return float64(d) / 1e6 }
	var b strings.Builder
	fmt.Fprintf(&b, "\nside by side: %d skills, upstream answers in %v, %v per target and round, median of %d rounds; router RSS after ready %.0f MB\n",
		nSkills, delay, seconds, rounds, readyRSS)
	fmt.Fprintf(&b, "| clients | target | added p50 / p99 | CPU per request | switches per request: waits / preempted | requests/s | RSS | CPU vs bare (default / pooled) | requests/s vs bare (default / pooled) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range clients {
		d := all[key("direct", c)]
		dp50, dp99 := med(d, func(r sbsResult) float64 { return msf(r.p50) }), med(d, func(r sbsResult) float64 { return msf(r.p99) })
		type ref struct{ cpu, rps float64 }
		var refs []ref // the bare proxies: Go's default transport, pooled
		for _, name := range []string{"bare Go proxy", sbsPooledTarget} {
			rs := all[key(name, c)]
			if len(rs) == 0 {
				rs = []sbsResult{{}} // not run
			}
			refs = append(refs, ref{med(rs, func(r sbsResult) float64 { return msf(r.cpu) }), med(rs, func(r sbsResult) float64 { return r.rps })})
		}
		for _, tg := range targets[1:] {
			rs := all[key(tg.name, c)]
			cpu := med(rs, func(r sbsResult) float64 { return msf(r.cpu) })
			rps := med(rs, func(r sbsResult) float64 { return r.rps })
			var cpus, rpss []string
			for _, rf := range refs {
				if rf.cpu > 0 && rf.rps > 0 {
					cpus, rpss = append(cpus, fmt.Sprintf("%.1f×", cpu/rf.cpu)), append(rpss, fmt.Sprintf("%.0f%%", 100*rps/rf.rps))
				} else {
					cpus, rpss = append(cpus, "–"), append(rpss, "–")
				}
			}
			vsCPU, vsRPS := strings.Join(cpus, " / "), strings.Join(rpss, " / ")
			fmt.Fprintf(&b, "| %d | %s | %+.2f / %+.2f ms | %.3f ms | %.1f / %.1f | %.0f (direct %.0f) | %.0f MB | %s | %s |\n", c, tg.name,
				med(rs, func(r sbsResult) float64 { return msf(r.p50) })-dp50, med(rs, func(r sbsResult) float64 { return msf(r.p99) })-dp99,
				cpu, med(rs, func(r sbsResult) float64 { return r.waits }), med(rs, func(r sbsResult) float64 { return r.preempts }), rps, med(d, func(r sbsResult) float64 { return r.rps }), med(rs, func(r sbsResult) float64 { return r.rss }),
				vsCPU, vsRPS)
		}
	}
	// Ratios of CPU per request round by round: the targets of a round run
	// back to back, so they share the machine's state (other load, cache
	// and frequency) more than runs minutes apart do.
	mainOf := map[int]string{} // the main router's target by requests per query
	for _, tg := range targets {
		if tg.pid == rt.Process.Pid && tg.header == nil {
			mainOf[max(tg.repeat, 1)] = tg.name
		}
	}
	for _, tg := range targets {
		main := mainOf[max(tg.repeat, 1)]
		if main == "" || tg.name == main || tg.pid == rt.Process.Pid || !strings.Contains(tg.name, "routing on") {
			continue
		}
		for _, c := range clients {
			num, den := all[key(main, c)], all[key(tg.name, c)]
			var ratios []float64
			var each []string
			for i := range min(len(num), len(den)) {
				if num[i].cpu <= 0 || den[i].cpu <= 0 {
					each = append(each, "–") // no request succeeded in the round
					continue
				}
				r := float64(num[i].cpu) / float64(den[i].cpu)
				ratios = append(ratios, r)
				each = append(each, fmt.Sprintf("%.3f×", r))
			}
			if len(ratios) == 0 {
				continue
			}
			slices.Sort(ratios)
			fmt.Fprintf(&b, "CPU per request of %q (%d skills) against %q, %d clients, round by round: %s; median %.3f×\n",
				main, nSkills, tg.name, c, strings.Join(each, ", "), ratios[len(ratios)/2])
		}
	}
	t.Log(b.String())
}

// sbsStartRouter starts `bin serve` on the skills and upstream and waits
// until it is ready; the test kills it at its end.
func sbsStartRouter(t *testing.T, bin, skillsDir, upstream string) (*exec.Cmd, string) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	routerAddr := ln.Addr().String()
	ln.Close()
	rt := exec.Command(bin, "serve", "--skills", skillsDir, "--upstream", upstream,
		"--listen", routerAddr, "--log-level", envOr("SKILLROUTER_SBS_LOG_LEVEL", "warn"))
	rt.Stderr = os.Stderr
	// A routing-index folder of its own: every run starts cold.
	rt.Env = append(os.Environ(), "SKILLROUTER_ROUTING_INDEX_DIR="+t.TempDir())
	start := time.Now()
	if err := rt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Process.Kill(); _ = rt.Wait() })
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + routerAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				t.Logf("%s: ready in %.1f s (cold start), RSS %.0f MB", bin, time.Since(start).Seconds(), procRSS(rt.Process.Pid))
				return rt, routerAddr
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("router not ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sbsScaleLibrary writes the scale library of n skills (as `router bench
// --scale` builds it) into a temporary folder and returns it.
func sbsScaleLibrary(t *testing.T, dir string, n int) string {
	real := skills.Load(context.Background(), []string{filepath.Join(dir, "skills")}, skills.Options{})
	qs, err := bench.LoadQueries(filepath.Join(dir, "upstream-queries", "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := bench.WriteLibrary(out, bench.ScaleLibrary(bench.ScaleOrder(real.Skills(), bench.ExpectedIDs(qs), 1), n, 1)); err != nil {
		t.Fatal(err)
	}
	return out
}

// sbsSelect keeps the targets SKILLROUTER_SBS_TARGETS names, in their
// order: entries separated by commas, or by semicolons when there is one
// (names such as "skillrouter, routing on" hold a comma); an entry that is
// a target's whole name selects that target only, any other every target
// whose name contains it.
func sbsSelect(targets []sbsTarget, only string) []sbsTarget {
	sep := ","
	if strings.Contains(only, ";") {
		sep = ";"
	}
	var entries []string
	for _, e := range strings.Split(only, sep) {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, e)
		}
	}
	whole := func(e string) bool {
		return slices.ContainsFunc(targets, func(t sbsTarget) bool { return t.name == e })
	}
	var keep []sbsTarget
	for _, tg := range targets {
		if slices.ContainsFunc(entries, func(e string) bool {
			return tg.name == e || (!whole(e) && strings.Contains(tg.name, e))
		}) {
			keep = append(keep, tg)
		}
	}
	return keep
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// TestSBSSelect: SKILLROUTER_SBS_TARGETS picks targets by part of a name,
// or by a whole name holding a comma when the entries are separated by
// semicolons.
func TestSBSSelect(t *testing.T) {
	targets := []sbsTarget{{name: "direct"}, {name: "bare Go proxy"}, {name: sbsPooledTarget},
		{name: "skillrouter, routing off"}, {name: sbsMainTarget}, {name: "baseline routing on"}}
	names := func(ts []sbsTarget) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.name)
		}
		return strings.Join(out, "|")
	}
	for only, want := range map[string]string{
		"routing on":                          sbsMainTarget + "|baseline routing on",
		"pooled,bare":                         "bare Go proxy|" + sbsPooledTarget,
		sbsMainTarget + ";pooled":             sbsPooledTarget + "|" + sbsMainTarget,
		sbsMainTarget:                         "skillrouter, routing off|" + sbsMainTarget + "|baseline routing on", // split at its comma: "skillrouter" and "routing on"
		" direct ; skillrouter, routing off ": "direct|skillrouter, routing off",
	} {
		if got := names(sbsSelect(targets, only)); got != want {
			t.Errorf("%q: %s, want %s", only, got, want)
		}
	}
}
