package reliability

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// scenarioTimeouts (repro 1): with the open-file limit at 256, hundreds
// of idle keep-alive sockets and bodies trickled one byte at a time neither
// exhaust the descriptors nor keep /metrics and chat from answering:
// over the connection cap new sockets get 503 at once, slow bodies 408 at
// the body timeout, idle sockets are closed at the idle timeout.
func scenarioTimeouts(t *testing.T) {
	up := upstream(t)
	p := startProxy(t, baseConfig(up, examples())+"server:\n  read_header_timeout: 2s\n  body_timeout: 2s\n  idle_timeout: 2s\n", 256)
	capN := 0
	for _, l := range p.logLines("server.max_connections lowered to fit the open-file limit (raise it with ulimit -n)") {
		capN = int(l["max_connections"].(float64))
	}
	idleN, slowN := pick(150, 300), pick(150, 300)
	type end struct {
		status int
		at     time.Duration // since the attack started
	}
	var mu sync.Mutex
	var idleEnds, slowEnds []end
	var wg sync.WaitGroup
	start := time.Now()
	var maxFDs atomic.Int64
	stopSampling := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, fds := p.usage(); int64(fds) > maxFDs.Load() {
				maxFDs.Store(int64(fds))
			}
		}
	}()
	openIdle := func() {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+p.addr+"\r\n\r\n")
			br := bufio.NewReader(c)
			status := 0
			if resp, err := http.ReadResponse(br, nil); err == nil {
				io.Copy(io.Discard, resp.Body)
				status = resp.StatusCode
			}
			_, _ = br.ReadByte() // then idle until the server closes
			mu.Lock()
			idleEnds = append(idleEnds, end{status, time.Since(start)})
			mu.Unlock()
		}()
	}
	openSlow := func() {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: "+p.addr+"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
			go func() { // one byte every 500 ms, until the server gives up
				for range 60 {
					time.Sleep(500 * time.Millisecond)
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}()
			status := 0
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				status = resp.StatusCode
			}
			mu.Lock()
			slowEnds = append(slowEnds, end{status, time.Since(start)})
			mu.Unlock()
		}()
	}
	for i := 0; i < max(idleN, slowN); i++ { // interleaved: both kinds get in
		if i < idleN {
			openIdle()
		}
		if i < slowN {
			openSlow()
		}
	}
	// Meanwhile a well-behaved client retries what it is refused, as SDKs do.
	client := newClient(1)
	var served, refused, failed int
	var worst time.Duration
	for time.Since(start) < pick(6*time.Second, 12*time.Second) {
		for _, path := range []string{"/metrics", "/v1/chat/completions"} {
			t0 := time.Now()
			for {
				var resp *http.Response
				var err error
				if path == "/metrics" {
					resp, err = client.Get(p.url(path))
				} else {
					resp, err = client.Do(apis[0].request("http://"+p.addr, apis[0].body("write a commit message", false), nil))
				}
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				switch {
				case err == nil && resp.StatusCode == 200:
					served++
				case time.Since(t0) > 15*time.Second:
					failed++
				case err != nil || resp.StatusCode == 503:
					// Refused (503, or closed unanswered while many are refused):
					// retried, as the SDKs do.
					refused++
					time.Sleep(200 * time.Millisecond)
					continue
				default:
					failed++
				}
				break
			}
			worst = max(worst, time.Since(t0))
		}
		time.Sleep(100 * time.Millisecond)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("attack sockets still open after 30 s")
	}
	close(stopSampling)
	count := func(ends []end, status int) (n int, last time.Duration) {
		for _, e := range ends {
			if e.status == status {
				n++
				last = max(last, e.at)
			}
		}
		return n, last
	}
	slow408, slowLast := count(slowEnds, 408)
	slow503, _ := count(slowEnds, 503)
	slow0, _ := count(slowEnds, 0) // refused unanswered (more than maxRefusing at once)
	idleOK, idleLast := count(idleEnds, 200)
	idle503, _ := count(idleEnds, 503)
	idle0, _ := count(idleEnds, 0)
	slow503, idle503 = slow503+slow0, idle503+idle0
	if strings.Contains(p.logs.String(), "too many open files") {
		t.Error("the proxy ran out of file descriptors")
	}
	if slow408+slow503 != slowN || idleOK+idle503 != idleN {
		statuses := func(ends []end) map[int]int {
			m := map[int]int{}
			for _, e := range ends {
				m[e.status]++
			}
			return m
		}
		t.Errorf("slow bodies: %d × 408, %d × 503 of %d; idle: %d served, %d × 503 of %d; statuses (0: no answer) slow %v idle %v",
			slow408, slow503, slowN, idleOK, idle503, idleN, statuses(slowEnds), statuses(idleEnds))
	}
	if failed > 0 || served == 0 {
		t.Errorf("well-behaved client: %d served, %d refused, %d failed", served, refused, failed)
	}
	if len(p.logLines("connection limit reached: new connections are answered 503 and closed (server.max_connections)")) == 0 {
		t.Error("no log line for the connection limit")
	}
	report(t, "timeouts and connection cap", "1", "ulimit -n 256 (cap lowered to %d), %d idle keep-alive + %d slow-body sockets: slow bodies 408 by %s, idle closed by %s, %d refused at once (503, or closed unanswered: %d); max %d fds, no EMFILE; client: %d served, %d refusals retried, %d failed, worst wait %s",
		capN, idleN, slowN, secs(slowLast), secs(idleLast), slow503+idle503, slow0+idle0, maxFDs.Load(), served, refused, failed, secs(worst))
}

// benchLibrary is the 1,267-skill bench library when it is here (read in
// place, the extra part copied so it can be edited), else a copy of the
// example library; it returns the roots and an editable root.
func benchLibrary(t *testing.T) (roots []string, editable string) {
	t.Helper()
	tmp := t.TempDir()
	bench := filepath.Join("..", "..", "..", "shared", "bench")
	if _, err := os.Stat(filepath.Join(bench, "skills-extra")); err == nil {
		editable = filepath.Join(tmp, "extra")
		if out, err := exec.Command("cp", "-r", filepath.Join(bench, "skills-extra"), editable).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		abs, _ := filepath.Abs(filepath.Join(bench, "skills"))
		return []string{abs, editable}, editable
	}
	editable = filepath.Join(tmp, "lib")
	if err := os.CopyFS(editable, os.DirFS(examples())); err != nil {
		t.Fatal(err)
	}
	return []string{editable}, editable
}

// scenarioReload (repro 4): the library changes every few seconds under
// load at 16 connections: no request fails, latency stays near the
// no-change run, a rebuild embeds only the changed skill, and a deleted
// skill is never selected after the reload that saw it gone.
func scenarioReload(t *testing.T) {
	up := upstream(t)
	roots, editable := benchLibrary(t)
	cfg := "upstream:\n  url: " + up.BaseURL() + "\nwatch: true\nskills:\n"
	for _, r := range roots {
		cfg += "  - " + r + "\n"
	}
	p := startProxy(t, cfg, 0)
	// The probe skill: its own words, so a request for them selects it.
	probe := filepath.Join(editable, "zz-reliability-probe")
	writeProbe := func(rev int) {
		os.MkdirAll(probe, 0o755)
		body := fmt.Sprintf("---\nname: zz-reliability-probe\ndescription: Quokka telemetry for the reliability suite, revision %d. Use when asked about quokka telemetry.\n---\nQuokka telemetry steps.\n", rev)
		if err := os.WriteFile(filepath.Join(probe, "SKILL.md"), []byte(body), 0o644); err != nil {
			t.Error(err) // also called from the changer goroutine: no Fatal
		}
	}
	writeProbe(0)
	reload := func() {
		resp, err := http.Post(p.url("/v1/skills/reload"), "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	reload()
	const conns = 16
	client := newClient(conns)
	questions := []string{"write a git commit message for my staged changes", "my sql query is slow", "profile this csv file",
		"review this api design", "harden this dockerfile"}
	send := func(ctx context.Context, w, n int) call {
		req := apis[0].request("http://"+p.addr, apis[0].body(questions[n%len(questions)], false), nil).WithContext(ctx)
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return call{err: err.Error(), latency: time.Since(t0)}
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return call{status: resp.StatusCode, latency: time.Since(t0)}
	}
	d := pick(5*time.Second, 60*time.Second)
	every := pick(1*time.Second, 5*time.Second)
	quiet := load(conns, d, 1_000_000, send)
	// The same load while a skill changes every few seconds (the watcher
	// reloads; nothing is asked of it).
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for rev := 1; ; rev++ {
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
			writeProbe(rev)
		}
	}()
	busy := load(conns, d, 1_000_000, send)
	close(stop)
	<-stopped // no change may land after the deletion below
	bad := func(c call) bool { return c.status != 200 }
	failed := quiet.count(bad) + busy.count(bad)
	if failed > 0 {
		t.Errorf("%d requests failed during reloads", failed)
	}
	p99q, p99b := quiet.percentile(0.99, nil), busy.percentile(0.99, nil)
	// What the rebuilds did, from the log.
	var builds, embedded, reused int
	var took []time.Duration
	for _, l := range p.logLines("routing index built") {
		if l["changed"] == nil || l["changed"].(float64) == 0 || l["changed"].(float64) > 5 {
			continue
		}
		if l["settled"] == true {
			// A refit: edits since the last fit passed a tenth of the
			// library (two edits of the examples' 11 skills, when
			// ../shared/bench is absent), and every skill is embedded anew
			// by design (router.refreshDrift).
			continue
		}
		builds++
		embedded = max(embedded, int(l["embedded"].(float64)))
		reused = int(l["reused"].(float64))
		if v, ok := l["took_ms"].(float64); ok { // durations are milliseconds in JSON logs
			took = append(took, time.Duration(v*float64(time.Millisecond)))
		}
	}
	slices.Sort(took)
	if builds == 0 || embedded > 2 {
		t.Errorf("%d incremental rebuilds, up to %d skills embedded each", builds, embedded)
	}
	// A deleted skill: once the library the proxy serves no longer lists
	// it, no request may select it.
	if err := os.RemoveAll(probe); err != nil {
		t.Fatal(err)
	}
	selectedAfter, asked := 0, 0
	gone := false
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && asked < 200 {
		if !gone {
			resp, err := client.Get(p.url("/v1/skills"))
			if err == nil {
				b := readAll(resp.Body)
				resp.Body.Close()
				gone = !strings.Contains(b, "zz-reliability-probe")
			}
			continue
		}
		asked++
		resp, err := client.Do(apis[0].request("http://"+p.addr, apis[0].body("quokka telemetry for the reliability suite", false), nil))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if strings.Contains(resp.Header.Get("X-Skillrouter-Selected"), "zz-reliability-probe") {
			selectedAfter++
		}
		if asked >= 20 {
			break
		}
	}
	if !gone || selectedAfter > 0 {
		t.Errorf("deleted skill: gone from the library %v, selected %d times after", gone, selectedAfter)
	}
	tookMed := time.Duration(0)
	if len(took) > 0 {
		tookMed = took[len(took)/2]
	}
	report(t, "incremental reload under load", "4", "%d skills, 16 conns, %s per run: p99 %s without changes, %s with a change every %s (×%.2f); %d failed of %d; %d rebuilds: ≤%d embedded, %d reused, median %s; deleted skill selected %d times in %d requests after its reload",
		reused+embedded, secs(d), ms(p99q), ms(p99b), secs(every), float64(p99b)/float64(max(p99q, 1)), failed, len(quiet.calls)+len(busy.calls),
		builds, embedded, reused, ms(tookMed), selectedAfter, asked)
}

// scenarioSoak: a mixed load of the three APIs, streamed and not, with
// upstream faults, at 16 connections: no unexpected status or socket
// error; memory, goroutines and descriptors flat.
func scenarioSoak(t *testing.T) {
	up := upstream(t)
	p := startProxy(t, baseConfig(up, examples(), "header_timeout: 3s", "idle_timeout: 3s"), 0)
	const conns = 16
	client := newClient(conns)
	// kinds: the request and the status it must get.
	type kind struct {
		fault  string
		stream bool
		want   int
	}
	kinds := []kind{{"", false, 200}, {"", true, 200}, {"", false, 200}, {"", true, 200}, {"", false, 200}, {"", true, 200},
		{"500", false, 500}, {"429", true, 429}, {"cut-stream:3", true, 200}, {"malformed:3", true, 200},
		{"cut-body", false, 502}, {"hang", true, 504}, {"slow:20ms", true, 200}, {"stray:1", true, 200}}
	send := func(ctx context.Context, w, n int) call {
		k := kinds[n%len(kinds)]
		a := apis[(n/len(kinds))%len(apis)]
		hdr := map[string]string{}
		if k.fault != "" {
			hdr[fakeai.FaultHeader] = k.fault
		}
		req := a.request("http://"+p.addr, a.body("write a git commit message", k.stream), hdr).WithContext(ctx)
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return call{kind: fmt.Sprint(k.want), err: err.Error(), latency: time.Since(t0)}
		}
		b := readAll(resp.Body)
		resp.Body.Close()
		c := call{kind: fmt.Sprint(k.want), status: resp.StatusCode, latency: time.Since(t0), body: b}
		if k.fault == "" && k.stream && a.api == "chat" && !strings.HasSuffix(b, "data: [DONE]\n\n") {
			c.err = "stream not complete"
		}
		return c
	}
	sample := func() (float64, int, float64) {
		rss, fds := p.usage()
		return rss, fds, sum(p.metrics(nil), "go_goroutines")
	}
	// Warm up, then measure from there.
	load(conns, 2*time.Second, 1_000_000, send)
	time.Sleep(1500 * time.Millisecond) // idle connections of the warm-up close
	rss0, fd0, g0 := sample()
	d := pick(8*time.Second, 10*time.Minute)
	var peakRSS float64
	var peakFD int
	var peakG float64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			rss, fd, g := sample()
			peakRSS, peakFD, peakG = max(peakRSS, rss), max(peakFD, fd), max(peakG, g)
		}
	}()
	res := load(conns, d, 10_000_000, send)
	close(stop)
	<-sampled // the peaks are read below
	client.CloseIdleConnections()
	// Upstream and client connections wind down (idle ones close after
	// their timeouts): wait until back at the start's level, 15 s at most.
	rss1, fd1, g1 := sample()
	for deadline := time.Now().Add(15 * time.Second); (fd1 > fd0+8 || g1 > g0+16) && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		rss1, fd1, g1 = sample()
	}
	unexpected := res.count(func(c call) bool { return fmt.Sprint(c.status) != c.kind || c.err != "" })
	if unexpected > 0 {
		for _, c := range res.calls {
			if fmt.Sprint(c.status) != c.kind || c.err != "" {
				t.Errorf("unexpected: want %s got %d %s %.200s", c.kind, c.status, c.err, c.body)
				break
			}
		}
	}
	if fd1 > fd0+8 || g1 > g0+16 {
		t.Errorf("not flat: fds %d → %d, goroutines %v → %v", fd0, fd1, g0, g1)
	}
	report(t, "soak", "all", "%s at 16 conns, 3 APIs, streamed and not, %d of every %d requests with an upstream fault (500, 429, body cut, stream cut, malformed event, stray lines, hang, slow tokens): %d requests (%.0f/s), %d unexpected statuses or socket errors; p50 %s, p99 %s (requests answered 200, slow-token streams included); RSS %.0f → %.0f MiB (peak %.0f), goroutines %v → %v (peak %v), fds %d → %d (peak %d)",
		secs(d), 8, len(kinds), len(res.calls), float64(len(res.calls))/res.elapsed.Seconds(), unexpected,
		ms(res.percentile(0.5, func(c call) bool { return c.kind == "200" })), ms(res.percentile(0.99, func(c call) bool { return c.kind == "200" })),
		rss0, rss1, peakRSS, g0, g1, peakG, fd0, fd1, peakFD)
}
