//go:build unix

package private

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/internal/private/privatetest"
)

func TestCheck(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(mk("target", 0o700), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir, want string
	}{
		{"private", mk("ok", 0o700), ""},
		{"readable by others is fine", mk("ro", 0o755), ""},
		{"group-writable", shared(t, mk("gw", 0o770)), "writable by other users"},
		{"world-writable", mk("ww", 0o777), "writable by other users"},
		{"symlink", link, "not a directory"},
		{"missing", filepath.Join(base, "nope"), "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.dir)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check(%s) = %v, want %q", c.dir, err, c.want)
			}
		})
	}
}

func TestSharedAncestor(t *testing.T) {
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	own := filepath.Join(shared, "own", "out")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	if got := SharedAncestor(own); got != shared {
		t.Errorf("SharedAncestor(%s) = %q, want %q", own, got, shared)
	}
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := SharedAncestor(own); got != "" && !strings.HasPrefix(base, got) {
		t.Errorf("SharedAncestor(%s) = %q below %s, none of whose folders others can write", own, got, base)
	}
}

// TestCheckPath: a folder found by convention is read only when no user but
// this one and root can change what its path leads to. Cases marked root
// make files another user's (os.Chown) and are skipped when not root.
// TestCheckEntry: one entry of a folder already checked, as the scan meets
// the files of a skill: another user's, or one its group or everyone can
// write, is refused, a sticky folder too (anyone may add entries to it);
// a symlink by its own owner only, wherever it leads.
func TestCheckEntry(t *testing.T) {
	const other = 65534
	for _, c := range []struct {
		name  string
		root  bool // needs root
		setup func(t *testing.T, d string) string
		want  string // "" for no error
	}{
		{"own file", false, func(t *testing.T, d string) string { return file(t, filepath.Join(d, "run.py"), 0o644) }, ""},
		{"own folder", false, func(t *testing.T, d string) string { return mkdir(t, filepath.Join(d, "scripts"), 0o755) }, ""},
		{"file every user can write", false, func(t *testing.T, d string) string {
			return file(t, filepath.Join(d, "run.py"), 0o666)
		}, "run.py is writable by other users (mode 0666)"},
		{"file its group can write", false, func(t *testing.T, d string) string {
			return shared(t, file(t, filepath.Join(d, "run.py"), 0o664))
		}, "run.py is writable by other users (mode 0664)"},
		{"folder every user can write", false, func(t *testing.T, d string) string {
			return mkdir(t, filepath.Join(d, "scripts"), 0o777)
		}, "scripts is writable by other users (mode 0777)"},
		{"sticky folder every user can write", false, func(t *testing.T, d string) string {
			return mkdir(t, filepath.Join(d, "scripts"), os.ModeSticky|0o777)
		}, "scripts is writable by other users (mode 1777)"},
		{"own link to a folder every user can write: its owner alone", false, func(t *testing.T, d string) string {
			p := filepath.Join(d, "scripts")
			if err := os.Symlink(mkdir(t, filepath.Join(d, "shared"), 0o777), p); err != nil {
				t.Fatal(err)
			}
			return p
		}, ""},
		{"another user's file", true, func(t *testing.T, d string) string {
			p := file(t, filepath.Join(d, "run.py"), 0o644)
			if err := os.Lchown(p, other, other); err != nil {
				t.Fatal(err)
			}
			return p
		}, "run.py belongs to another user (uid 65534)"},
		{"another user's link", true, func(t *testing.T, d string) string {
			p := filepath.Join(d, "run.py")
			if err := os.Symlink(file(t, filepath.Join(d, "real.py"), 0o644), p); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(p, other, other); err != nil {
				t.Fatal(err)
			}
			return p
		}, "run.py belongs to another user (uid 65534)"},
		{"root's file", true, func(t *testing.T, d string) string {
			p := file(t, filepath.Join(d, "run.py"), 0o644)
			if err := os.Lchown(p, 0, 0); err != nil {
				t.Fatal(err)
			}
			return p
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("making a file another user's needs root")
			}
			p := c.setup(t, t.TempDir())
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckEntry(p, fi)
			if c.want == "" {
				if err != nil {
					t.Fatalf("CheckEntry(%s) = %v", p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckEntry(%s) = %v, want %q", p, err, c.want)
			}
		})
	}
}

// file writes p with mode (umask aside) and returns it.
func file(t *testing.T, p string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(p, []byte("print(1)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// mkdir makes the folder p with mode (umask aside) and returns it.
func mkdir(t *testing.T, p string, mode os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckPath(t *testing.T) {
	const other = 65534
	type setup func(t *testing.T, base string) (from, path string)
	dir := func(t *testing.T, p string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A link is checked where it leads from / down: the temp folder's
	// own path must pass for a link into it to (TMPDIR below a folder
	// others can write, say).
	var tempUnsafe error
	link := func(t *testing.T, target, p string, uid int) string {
		t.Helper()
		if tempUnsafe != nil && target != "/" {
			t.Skipf("the temp folder's path does not pass: %v", tempUnsafe)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		if uid >= 0 {
			if err := os.Lchown(p, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	chown := func(t *testing.T, p string) {
		t.Helper()
		if err := os.Chown(p, other, other); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		root  bool // needs root
		setup setup
		want  string // "" for no error
	}{
		{"own folders", false, func(t *testing.T, b string) (string, string) {
			return b, dir(t, filepath.Join(b, ".claude", "skills"), 0o755)
		}, ""},
		{"the base alone", false, func(t *testing.T, b string) (string, string) { return b, b }, ""},
		{"root folder group-writable", false, func(t *testing.T, b string) (string, string) {
			return b, shared(t, dir(t, filepath.Join(b, ".claude", "skills"), 0o775))
		}, "skills is writable by other users (mode 0775)"},
		{"root folder sticky and world-writable (/var/tmp)", false, func(t *testing.T, b string) (string, string) {
			return b, dir(t, filepath.Join(b, ".claude", "skills"), os.ModeSticky|0o777)
		}, "skills is writable by other users (mode 1777)"},
		{"folder on the way world-writable: skills can be swapped", false, func(t *testing.T, b string) (string, string) {
			p := dir(t, filepath.Join(b, ".claude", "skills"), 0o755)
			dir(t, filepath.Join(b, ".claude"), 0o777)
			return b, p
		}, ".claude is writable by other users (mode 0777)"},
		{"base world-writable", false, func(t *testing.T, b string) (string, string) {
			p := dir(t, filepath.Join(b, "proj", ".claude", "skills"), 0o755)
			dir(t, filepath.Join(b, "proj"), 0o777)
			return filepath.Join(b, "proj"), p
		}, "proj is writable by other users"},
		{"folder on the way sticky (/tmp): nothing of this user's can be swapped", false, func(t *testing.T, b string) (string, string) {
			p := dir(t, filepath.Join(b, ".claude", "skills"), 0o755)
			dir(t, filepath.Join(b, ".claude"), os.ModeSticky|0o777)
			return b, p
		}, ""},
		{"own link to a sticky world-writable folder", false, func(t *testing.T, b string) (string, string) {
			dir(t, filepath.Join(b, ".claude"), 0o755)
			shared := dir(t, filepath.Join(b, "vartmp"), os.ModeSticky|0o777)
			return b, link(t, shared, filepath.Join(b, ".claude", "skills"), -1)
		}, "skills leads to " + "BASE/vartmp: BASE/vartmp is writable by other users (mode 1777)"},
		{"own link to own folder below a sticky one", false, func(t *testing.T, b string) (string, string) {
			dir(t, filepath.Join(b, ".claude"), 0o755)
			dir(t, filepath.Join(b, "vartmp"), os.ModeSticky|0o777)
			mine := dir(t, filepath.Join(b, "vartmp", "mine"), 0o755)
			return b, link(t, mine, filepath.Join(b, ".claude", "skills"), -1)
		}, ""},
		{"own relative link", false, func(t *testing.T, b string) (string, string) {
			dir(t, filepath.Join(b, "lib"), 0o755)
			dir(t, filepath.Join(b, ".claude"), 0o755)
			return b, link(t, filepath.Join("..", "lib"), filepath.Join(b, ".claude", "skills"), -1)
		}, ""},
		{"folder on the way is an own link to a world-writable folder", false, func(t *testing.T, b string) (string, string) {
			dir(t, filepath.Join(b, "dot", "skills"), 0o755)
			dir(t, filepath.Join(b, "dot"), 0o777)
			link(t, filepath.Join(b, "dot"), filepath.Join(b, ".claude"), -1)
			return b, filepath.Join(b, ".claude", "skills")
		}, ".claude leads to BASE/dot: BASE/dot is writable by other users"},
		{"own link through a world-writable folder to an own link: the folder is walked", false, func(t *testing.T, b string) (string, string) {
			home := dir(t, filepath.Join(b, "home"), 0o755)
			dir(t, filepath.Join(b, "ww"), 0o777)
			link(t, home, filepath.Join(b, "ww", "x"), -1)
			return home, link(t, filepath.Join(b, "ww", "x"), filepath.Join(home, "direct"), -1)
		}, "direct leads to BASE/ww/x: BASE/ww is writable by other users (mode 0777)"},
		{"links in a loop", false, func(t *testing.T, b string) (string, string) {
			home := dir(t, filepath.Join(b, "home"), 0o755)
			link(t, "b", filepath.Join(home, "a"), -1)
			link(t, "a", filepath.Join(home, "b"), -1)
			return home, filepath.Join(home, "a")
		}, "too many"},
		{"relative link in a project of a group-writable folder", false, func(t *testing.T, b string) (string, string) {
			app := dir(t, filepath.Join(b, "P", "app"), 0o755)
			dir(t, filepath.Join(app, ".claude", "skills", "direct"), 0o755)
			dir(t, filepath.Join(app, "shared-skills", "pdf"), 0o755)
			shared(t, dir(t, filepath.Join(b, "P"), os.ModeSetgid|0o775))
			return app, link(t, filepath.Join("..", "..", "shared-skills", "pdf"), filepath.Join(app, ".claude", "skills", "pdf"), -1)
		}, ""},
		{"relative link climbing above the base into a group-writable folder", false, func(t *testing.T, b string) (string, string) {
			app := dir(t, filepath.Join(b, "P", "app"), 0o755)
			dir(t, filepath.Join(app, ".claude", "skills"), 0o755)
			dir(t, filepath.Join(b, "P", "other", "pdf"), 0o755)
			shared(t, dir(t, filepath.Join(b, "P"), os.ModeSetgid|0o775))
			return app, link(t, filepath.Join("..", "..", "..", "other", "pdf"), filepath.Join(app, ".claude", "skills", "pdf"), -1)
		}, "pdf leads to ../../../other/pdf: BASE/P is writable by other users (mode 2775)"},
		{"relative link climbing above the base to an own folder", false, func(t *testing.T, b string) (string, string) {
			app := dir(t, filepath.Join(b, "P", "app"), 0o755)
			dir(t, filepath.Join(app, ".claude"), 0o755)
			dir(t, filepath.Join(b, "P", "lib"), 0o755)
			return app, link(t, filepath.Join("..", "..", "lib"), filepath.Join(app, ".claude", "skills"), -1)
		}, ""},
		{"relative link below the base, into a world-writable folder", false, func(t *testing.T, b string) (string, string) {
			dir(t, filepath.Join(b, ".claude"), 0o755)
			dir(t, filepath.Join(b, "ww", "lib"), 0o755)
			dir(t, filepath.Join(b, "ww"), 0o777)
			return b, link(t, filepath.Join("..", "ww", "lib"), filepath.Join(b, ".claude", "skills"), -1)
		}, "skills leads to ../ww/lib: BASE/ww is writable by other users (mode 0777)"},
		{"relative link ending in ..: the folder reached is the path checked", false, func(t *testing.T, b string) (string, string) {
			dir(t, filepath.Join(b, "proj", "sub"), 0o755)
			dir(t, filepath.Join(b, "proj"), os.ModeSticky|0o777)
			return filepath.Join(b, "proj", "sub"), link(t, "..", filepath.Join(b, "proj", "sub", "up"), -1)
		}, "up leads to ..: BASE/proj is writable by other users (mode 1777)"},
		{"own link to an own link of another user's", true, func(t *testing.T, b string) (string, string) {
			home := dir(t, filepath.Join(b, "home"), 0o755)
			dir(t, filepath.Join(b, "shared"), 0o755)
			link(t, home, filepath.Join(b, "shared", "x"), 1234)
			return home, link(t, filepath.Join(b, "shared", "x"), filepath.Join(home, "direct"), -1)
		}, "direct leads to BASE/shared/x: BASE/shared/x belongs to another user (uid 1234)"},
		{"relative link to a relative link of another user's", true, func(t *testing.T, b string) (string, string) {
			home := dir(t, filepath.Join(b, "home"), 0o755)
			dir(t, filepath.Join(home, "lib"), 0o755)
			link(t, "lib", filepath.Join(home, "x"), 1234)
			return home, link(t, "x", filepath.Join(home, "direct"), -1)
		}, "direct leads to x: BASE/home/x belongs to another user (uid 1234)"},
		{"not below the base", false, func(t *testing.T, b string) (string, string) {
			return filepath.Join(b, "a"), filepath.Join(b, "b")
		}, "is not below"},
		{"missing", false, func(t *testing.T, b string) (string, string) {
			return b, filepath.Join(b, "nope", "skills")
		}, "no such file"},
		{"root folder another user's", true, func(t *testing.T, b string) (string, string) {
			p := dir(t, filepath.Join(b, ".claude", "skills"), 0o755)
			chown(t, p)
			return b, p
		}, "skills belongs to another user (uid 65534)"},
		{"folder on the way another user's", true, func(t *testing.T, b string) (string, string) {
			p := dir(t, filepath.Join(b, ".claude", "skills"), 0o755)
			chown(t, filepath.Join(b, ".claude"))
			return b, p
		}, ".claude belongs to another user (uid 65534)"},
		{"base another user's", true, func(t *testing.T, b string) (string, string) {
			p := dir(t, filepath.Join(b, "proj", ".claude", "skills"), 0o755)
			chown(t, filepath.Join(b, "proj"))
			return filepath.Join(b, "proj"), p
		}, "proj belongs to another user"},
		{"another user's link to a root-owned folder (/)", true, func(t *testing.T, b string) (string, string) {
			dir(t, filepath.Join(b, ".claude"), 0o755)
			return b, link(t, "/", filepath.Join(b, ".claude", "skills"), other)
		}, "skills belongs to another user (uid 65534)"},
		{"own link to a folder in another user's folder", true, func(t *testing.T, b string) (string, string) {
			dir(t, filepath.Join(b, ".claude"), 0o755)
			theirs := dir(t, filepath.Join(b, "theirs", "lib"), 0o755)
			chown(t, filepath.Join(b, "theirs"))
			return b, link(t, theirs, filepath.Join(b, ".claude", "skills"), -1)
		}, "leads to BASE/theirs/lib: BASE/theirs belongs to another user"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("making a file another user's needs root")
			}
			// A base of its own, outside the shared temp folder's reach:
			// the temp folder itself is sticky, on the way only.
			base := t.TempDir()
			tempUnsafe = CheckPath("/", base)
			from, path := c.setup(t, base)
			err := CheckPath(from, path)
			want := strings.ReplaceAll(c.want, "BASE", base)
			if want == "" {
				if err != nil {
					t.Fatalf("CheckPath(%s, %s) = %v, want nil", from, path, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("CheckPath(%s, %s) = %v, want %q", from, path, err, want)
			}
		})
	}
}

// TestExposed: a file holding a secret is reported when every user can read
// it, or its group and it is this user's; a group-readable file of another
// owner is how this user reads it (a service's group): not reported.
func TestExposed(t *testing.T) {
	for _, c := range []struct {
		name  string
		mode  os.FileMode
		owner int // -1: this user
		want  string
	}{
		{"private", 0o600, -1, ""},
		{"read-only private", 0o400, -1, ""},
		{"world-readable", 0o644, -1, "every user can read it (mode 0644)"},
		{"world-readable only", 0o604, -1, "every user can read it (mode 0604)"},
		{"group-readable, this user's", 0o640, -1, "can read it (mode 0640)"},
		{"group-writable only", 0o620, -1, ""},
		{"group-readable, another owner's", 0o640, 65534, ""},
		{"world-readable, another owner's", 0o644, 65534, "every user can read it (mode 0644)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.owner >= 0 && os.Geteuid() != 0 {
				t.Skip("making a file another user's needs root")
			}
			p := filepath.Join(t.TempDir(), "keys")
			if err := os.WriteFile(p, []byte("sk-1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, c.mode); err != nil {
				t.Fatal(err)
			}
			if c.owner >= 0 {
				if err := os.Chown(p, c.owner, c.owner); err != nil {
					t.Fatal(err)
				}
			} else if c.mode&0o040 != 0 {
				privatetest.ShareGroup(t, p)
			}
			got, err := Exposed(p)
			if err != nil {
				t.Fatal(err)
			}
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("Exposed = %q, want %q", got, c.want)
			}
		})
	}
	if _, err := Exposed(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("a missing file: no error")
	}
}

// A group-writable folder is its owner's alone when its group is the
// owner's private group (umask 002 on Fedora and Debian user-private
// groups makes folders 0775): named as the owner, the owner's primary
// group, with no other member and no other user's primary group.
func TestPrivateGroupFiles(t *testing.T) {
	dir := t.TempDir()
	passwd := "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/bash\nbob:x:1001:1001::/home/bob:/bin/bash\ncarol:x:1002:1000::/home/carol:/bin/bash\ndave:x:1003:2000::/home/dave:/bin/bash\neve:x:1004:1004::/home/eve:/bin/bash\nfrank:x:1006:1006::/home/frank:/bin/bash\ngina:x:1007:1007::/home/gina:/bin/bash\nivan:x:1008:1008::/home/ivan:/bin/bash\njudy:x:1009:1009::/home/judy:/bin/bash\n"
	group := "root:x:0:\nalice:x:1000:\nbob:x:1001:bob\nstaff:x:2000:\neve:x:1004:mallory\nmallory:x:1005:\nfrank:x:1006:\nfrankdev:x:1006:bob\ngina:x:1007:gina\nginadev:x:1007:\nivan:x:1008:ivan,mallory\njudydev:x:1009:\n"
	pf, gf := filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	if err := os.WriteFile(pf, []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gf, []byte(group), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		uid, gid uint32
		want     bool
	}{
		{"bob's own group, bob its only member", 1001, 1001, true},
		{"alice's group is carol's primary group too", 1000, 1000, false},
		{"dave's primary group is staff", 1003, 2000, false},
		{"eve's group has another member", 1004, 1004, false},
		{"bob's folder in alice's group", 1001, 1000, false},
		{"an owner /etc/passwd does not list", 4242, 4242, false},
		{"frank's gid has a second line with a member", 1006, 1006, false},
		{"gina's gid has a second line with no member", 1007, 1007, true},
		{"ivan's group lists another member after him", 1008, 1008, false},
		{"judy's gid is named otherwise", 1009, 1009, false},
	}
	for _, tt := range tests {
		if got := privateGroupFiles(pf, gf, tt.uid, tt.gid); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if privateGroupFiles(filepath.Join(dir, "none"), gf, 1001, 1001) {
		t.Error("no passwd file: private")
	}
}

// TestPrivateGroupCached: an answer is read again once /etc/passwd or
// /etc/group changes (someone added to the group while serve runs).
func TestPrivateGroupCached(t *testing.T) {
	dir := t.TempDir()
	pf, gf := filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	write := func(file, text string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(file, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	write(pf, "bob:x:1001:1001::/home/bob:/bin/bash\n", t0)
	write(gf, "bob:x:1001:\n", t0)
	if !privateGroupCached(pf, gf, 1001, 1001) {
		t.Fatal("bob's own group: not private")
	}
	write(gf, "bob:x:1001:mallory\n", t0.Add(time.Second))
	if privateGroupCached(pf, gf, 1001, 1001) {
		t.Error("mallory added to bob's group: still private (cached)")
	}
	write(gf, "bob:x:1001:\n", t0.Add(2*time.Second))
	if !privateGroupCached(pf, gf, 1001, 1001) {
		t.Error("mallory removed: not private")
	}
	write(pf, "bob:x:1001:1001::/home/bob:/bin/bash\ncarol:x:1002:1001::/home/carol:/bin/bash\n", t0)
	if privateGroupCached(pf, gf, 1001, 1001) {
		t.Error("carol given bob's group as her primary one: still private (cached)")
	}
}

// shared is p with a group other users share (see privatetest).
func shared(t *testing.T, p string) string {
	privatetest.ShareGroup(t, p)
	return p
}
