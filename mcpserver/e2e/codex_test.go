package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/internal/codexhome"
	"github.com/skillrouter/skillrouter/internal/npmcache"
	"github.com/skillrouter/skillrouter/internal/procgroup"
)

// codexNodeDir pins Codex CLI: the proxy's real-client tests install it
// from this lockfile, and the MCP host test uses the same install.
const codexNodeDir = "../../proxy/e2e/testdata/node"

// codexBin installs (once per machine) and returns Codex CLI, or skips.
func codexBin(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed: skipping the MCP end-to-end tests with Node clients", bin)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	modules, err := npmcache.Ensure(ctx, codexNodeDir)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(modules, ".bin", "codex")
}

// TestCodex runs Codex CLI as the MCP host, with the router over stdio
// (`command`, `router mcp`) and over streamable HTTP (`url`, /mcp on
// `router serve`), against a fake Responses server that calls the server's
// tools in turn and checks what came back. Codex runs traced when strace
// works here, and its traffic (and the stdio server's) must stay on loopback.
func TestCodex(t *testing.T) {
	codex := codexBin(t)
	cases := []struct {
		name   string
		server func(t *testing.T, skills string) string // the [mcp_servers.skills] keys
	}{
		{"stdio", func(t *testing.T, skills string) string {
			return fmt.Sprintf("command = %q\nargs = [\"mcp\", \"--skills\", %q, \"--log-level\", \"warn\"]\nenv = { SKILLROUTER_EMBEDDER_CACHE_DIR = %q }",
				routerBin, skills, os.Getenv("SKILLROUTER_EMBEDDER_CACHE_DIR"))
		}},
		{"streamable HTTP", func(t *testing.T, skills string) string {
			return fmt.Sprintf("url = %q", serve(t, skills))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake, ts := newFakeCodex(t, "skills", "my postgres query is slow")
			home := t.TempDir()
			codexHome, work := filepath.Join(home, ".codex"), filepath.Join(home, "work")
			for _, d := range []string{codexHome, work} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// The router as the MCP server "skills", required so that a
			// server Codex cannot start fails the run.
			mcp := "[mcp_servers.skills]\n" + c.server(t, library(t)) + "\nrequired = true\nstartup_timeout_sec = 30\n"
			if err := codexhome.Write(codexHome, ts.URL+"/v1", mcp); err != nil {
				t.Fatal(err)
			}
			trace := filepath.Join(home, "trace.txt")
			argv := append(straced(t, trace), codex, "exec", "--skip-git-repo-check", "--ephemeral", "--color", "never",
				"My Postgres report query takes 9 seconds. How do I speed it up?")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			procgroup.KillOnCancel(cmd) // Codex's native binary and the stdio server with it
			cmd.Dir = work
			cmd.Env = codexEnv(home, codexHome)
			cmd.Stdin = strings.NewReader("")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			results, requests, first := fake.seen()
			if err != nil {
				t.Fatalf("codex exec: %v\nstdout: %s\nstderr: %s\nrequests: %v", err, stdout.String(), stderr.String(), requests)
			}
			if want := fake.answer("sql-tuning"); strings.TrimSpace(stdout.String()) != want {
				t.Errorf("codex printed %q, want the model's answer %q\nresults: %+v\nstderr: %s", stdout.String(), want, results, stderr.String())
			}
			// Codex reports problems it survives (an event it cannot place
			// in the stream, say) as ERROR log lines.
			for _, line := range strings.Split(stderr.String(), "\n") {
				if strings.Contains(line, " ERROR ") {
					t.Errorf("codex logged an error: %s", line)
				}
			}
			checkCodexTools(t, first)
			checkCodexResults(t, results)
			for _, r := range requests {
				if r != "POST /v1/responses" {
					t.Errorf("unexpected request to the fake model: %s", r)
				}
			}
			if argv[0] == "strace" {
				// The trace must show the connection to the fake model,
				// or it recorded nothing.
				b, _ := os.ReadFile(trace)
				if port := ts.Listener.Addr().(*net.TCPAddr).Port; !strings.Contains(string(b), fmt.Sprintf("htons(%d)", port)) {
					t.Errorf("the trace shows no connection to the fake model (port %d): %.2000s", port, b)
				}
			}
			if off := offLoopback(t, trace); len(off) > 0 {
				t.Errorf("traffic beyond loopback:\n%s", strings.Join(off, "\n"))
			}
		})
	}
}

// checkCodexTools pins how Codex offers the server to the model: its three
// tools in the namespace mcp__skills, described by the server's
// instructions, and Codex's own resource tools.
func checkCodexTools(t *testing.T, req *responsesRequest) {
	t.Helper()
	if req == nil {
		t.Fatal("the fake got no model request")
	}
	var names, top []string
	var desc string
	for _, tool := range req.Tools {
		if tool.Type == "namespace" && tool.Name == "mcp__skills" {
			desc = tool.Description
			for _, sub := range tool.Tools {
				names = append(names, sub.Type+" "+sub.Name)
			}
		}
		top = append(top, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"function load_skill", "function read_skill_resource", "function search_skills"}; !slices.Equal(names, want) {
		t.Errorf("namespace mcp__skills holds %v, want %v (tools: %v)", names, want, top)
	}
	if !strings.HasPrefix(desc, "This server holds a library of Agent Skills") {
		t.Errorf("namespace description %q, want the server's instructions", desc)
	}
	for _, own := range []string{"list_mcp_resources", "read_mcp_resource"} {
		if !slices.Contains(top, own) {
			t.Errorf("Codex did not offer %s: %v", own, top)
		}
	}
}

// checkCodexResults checks every tool result the fake model got back.
func checkCodexResults(t *testing.T, results []toolResult) {
	t.Helper()
	got := map[string]string{}
	for _, r := range results {
		got[r.Tool] = r.Text
	}
	checks := []struct {
		tool string
		ok   func(string) bool
	}{
		// Codex gives the model the structured content: the hits with
		// name, score and uri.
		{"mcp__skills__search_skills", func(s string) bool {
			return strings.HasPrefix(s, `{"query":"my postgres query is slow","results":[{"id":"sql-tuning","name":"sql-tuning",`) &&
				strings.Contains(s, `"uri":"skill://sql-tuning/SKILL.md"`)
		}},
		{"mcp__skills__load_skill", func(s string) bool {
			return strings.HasPrefix(s, `<skill_context id="sql-tuning">`) && strings.Contains(s, "EXPLAIN (ANALYZE, BUFFERS)") &&
				strings.Contains(s, `<resource path="references/deep/advanced.md"`)
		}},
		{"mcp__skills__read_skill_resource", func(s string) bool {
			return strings.HasPrefix(s, `{"ok":true,"skill_id":"sql-tuning","path":"references/deep/advanced.md",`)
		}},
		{"read_mcp_resource", func(s string) bool {
			return strings.HasPrefix(s, `{"server":"skills","uri":"skill://sql-tuning/SKILL.md",`) &&
				strings.Contains(s, `"mimeType":"text/markdown","text":"---\nname: sql-tuning\n`)
		}},
	}
	if len(results) != len(checks) {
		t.Errorf("%d tool results, want %d: %+v", len(results), len(checks), results)
	}
	for _, c := range checks {
		s, ok := got[c.tool]
		if !ok || !c.ok(s) {
			t.Errorf("%s result (present %v): %.600q", c.tool, ok, s)
		}
	}
}

// codexEnv is a clean environment for Codex pointed at the fake model: PATH
// and locale from ours, a private HOME and CODEX_HOME, the fake's key.
func codexEnv(home, codexHome string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "NO_COLOR=1",
		"HOME=" + home, "CODEX_HOME=" + codexHome, codexhome.KeyEnv + "=sk-e2e-codex"}
	if tz := os.Getenv("TZ"); tz != "" {
		env = append(env, "TZ="+tz)
	}
	return env
}

var (
	straceOnce sync.Once
	straceErr  error
)

// straced returns the command prefix that records, into file, every
// connect/send a process and its children make, or nil (logged) where
// strace is missing or may not trace.
func straced(t *testing.T, file string) []string {
	t.Helper()
	straceOnce.Do(func() {
		straceErr = exec.Command("strace", "-f", "-qq", "-e", "trace=none", "true").Run()
	})
	if straceErr != nil {
		t.Logf("strace unusable (%v): not checking that the traffic stays on loopback", straceErr)
		return nil
	}
	return []string{"strace", "-f", "-qq", "-s", "0", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", file}
}

// sockaddrRE matches an IPv4 or IPv6 socket address in strace's output.
var sockaddrRE = regexp.MustCompile(`sa_family=AF_INET6?, [^}]*`)

// addrRE finds the address in such a match.
var addrRE = regexp.MustCompile(`inet_addr\("([^"]*)"\)|inet_pton\(AF_INET6, "([^"]*)"`)

// offLoopback returns the traced lines that name an internet address off
// loopback (a DNS query to the system's resolver included), and any whose
// address it cannot read. No trace file (strace unusable) is no lines.
func offLoopback(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var off []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		for _, sa := range sockaddrRE.FindAllString(sc.Text(), -1) {
			m := addrRE.FindStringSubmatch(sa)
			var a netip.Addr
			if m != nil {
				a, err = netip.ParseAddr(m[1] + m[2])
			}
			if m == nil || err != nil || !a.Unmap().IsLoopback() {
				off = append(off, sc.Text())
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return off
}

// TestOffLoopback: the traffic check flags what leaves loopback, from
// strace's own output lines.
func TestOffLoopback(t *testing.T) {
	cases := []struct {
		name, line string
		off        bool
	}{
		{"loopback v4", `7 connect(9, {sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr("127.0.0.1")}, 16) = 0`, false},
		{"loopback v6", `7 connect(9, {sa_family=AF_INET6, sin6_port=htons(8080), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0`, false},
		{"mapped loopback", `7 connect(9, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::ffff:127.0.0.2", &sin6_addr), sin6_scope_id=0}, 28) = 0`, false},
		{"unix socket", `7 connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT`, false},
		{"no address", `7 sendto(7, ""..., 1, MSG_NOSIGNAL, NULL, 0) = 1`, false},
		{"DNS query", `7 sendto(5, ""..., 30, MSG_NOSIGNAL, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 30`, true},
		{"remote v6", `7 connect(9, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2606:4700::1", &sin6_addr), sin6_scope_id=0}, 28) = -1 EINPROGRESS`, true},
		{"sendmsg remote", `7 sendmsg(5, {msg_name={sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("8.8.8.8")}, msg_namelen=16}, 0) = 30`, true},
		{"unreadable address", `7 connect(9, {sa_family=AF_INET, sin_port=htons(80), sin_addr=?}, 16) = 0`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "trace.txt")
			if err := os.WriteFile(file, []byte(c.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if off := offLoopback(t, file); (len(off) > 0) != c.off {
				t.Errorf("off loopback %v, want %v", off, c.off)
			}
		})
	}
}
