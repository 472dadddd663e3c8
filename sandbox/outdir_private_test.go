package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputRootPlantedByOtherUser: on a shared machine the default
// output root is /tmp/skillrouter-out-<uid>, a name in a world-writable
// folder that anyone can predict.
// Another local user can create it first (or a conversation folder in it,
// whose id is a digest of the conversation's opening) and plant files in the
// HOME the proxy then gives the operator's scripts. Python runs .pth files
// from $HOME/.local/lib/pythonX.Y/site-packages at start-up: the planted
// code runs as the proxy's user. The proxy must refuse an output root (and
// conversation folders) it does not own or that others can write to.
func TestOutputRootPlantedByOtherUser(t *testing.T) {
	requireProgram(t, "python3")
	ver, err := exec.Command("python3", "-c", `import sys; print("%d.%d" % sys.version_info[:2])`).Output()
	if err != nil {
		t.Skip(err)
	}
	const other = 65534 // "nobody": the other user of the machine
	root := filepath.Join(t.TempDir(), "skillrouter-out")
	conv := "conv-planted"
	site := filepath.Join(root, conv, "home", ".local", "lib", "python"+strings.TrimSpace(string(ver)), "site-packages")
	for _, d := range []string{filepath.Join(root, conv, "out"), filepath.Join(root, conv, "tmp"), site} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	pth := `import os; open(os.path.join(os.environ["SKILLROUTER_OUTPUT_DIR"], "pwned"), "w").write("planted code ran as the proxy's user")` + "\n"
	if err := os.WriteFile(filepath.Join(site, "evil.pth"), []byte(pth), 0o666); err != nil {
		t.Fatal(err)
	}
	// Everything the "attacker" made belongs to it and is world-writable.
	_ = filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error {
		if os.Geteuid() == 0 {
			_ = os.Lchown(p, other, other)
		}
		return os.Chmod(p, 0o777)
	})

	p, err := New(Config{Enabled: true, OutputRoot: root}, nil)
	if err != nil {
		if !strings.Contains(err.Error(), "output root") {
			t.Fatalf("refused for another reason: %v", err)
		}
		// The control: a root of this user's that others cannot write works.
		own := filepath.Join(t.TempDir(), "own")
		if _, err := New(Config{Enabled: true, OutputRoot: own}, nil); err != nil {
			t.Fatalf("a private output root refused too: %v", err)
		}
		return
	}
	s := fixtureSkill(t, "scripts-demo")
	res := execute(t, p, s, conv, "scripts/hello.py", "Ada")
	if b, err := os.ReadFile(filepath.Join(root, conv, "out", "pwned")); err == nil {
		t.Fatalf("code planted by another user in the output root ran in the script (ok=%v, output_dir=%s): %q", res.OK, res.OutputDir, b)
	}
	if res.OK {
		t.Errorf("the script ran in a conversation folder another user owns and can write (%s)", res.OutputDir)
	}
}
