//go:build unix

// Package private checks that a folder is this user's alone: folders in a
// shared place (/tmp) whose names others can compute could otherwise be
// created first, and filled, by another local user.
//
// One rule decides who else can change a folder (WritableByOthers: any
// group or world write bit, a sticky folder such as /tmp included) and one
// who else owns it (Foreign: a user other than this one and root); Check
// (folders this process writes into) and CheckPath (folders found by
// convention, read as this user's) apply them.
package private

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Check refuses dir unless it is a directory (not a symlink), owned by this
// process's user and writable by no one else. The error names what is wrong.
func Check(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a symlink?)", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): another user may control it", dir, st.Uid, os.Geteuid())
	}
	if WritableByOthers(fi) {
		return fmt.Errorf("%s is writable by other users (mode %s)", dir, Mode(fi))
	}
	return nil
}

// WritableByOthers reports whether users other than fi's owner may write
// it: its group (group write) or everyone (world write). A sticky folder
// (/tmp, /var/tmp: mode 1777) counts: every user can add entries there, so
// nothing found in it by name is known to be its owner's.
//
// A group that is its owner's private group (as Fedora's and Debian's
// user-private groups are, with umask 002 making folders 0775) is the
// owner alone: group write through it is no one else's, as OpenSSH's
// Debian builds judge it.
func WritableByOthers(fi os.FileInfo) bool {
	perm := fi.Mode().Perm()
	if perm&0o002 != 0 {
		return true
	}
	return perm&0o020 != 0 && !ownersPrivateGroup(fi)
}

// ownersPrivateGroup reports whether fi's group is its owner's private
// group: named as the owner, the owner's primary group, no user but the
// owner listed as a member on any /etc/group line of its gid, and no other
// user's primary group in /etc/passwd. Groups only a directory service
// knows are not read: not private.
func ownersPrivateGroup(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return privateGroupCached("/etc/passwd", "/etc/group", st.Uid, st.Gid)
}

// privateGroups caches privateGroupFiles by files, owner and group (a scan
// asks for every group-writable folder on the way to each skill), each
// answer with the stamps of the two files it was read from: an edit (a
// user added to the group while serve runs) is read on the next lookup.
var privateGroups sync.Map // privateGroupKey → privateGroupAnswer

type privateGroupKey struct {
	passwdFile, groupFile string
	uid, gid              uint32
}

type privateGroupAnswer struct {
	passwd, group fileStamp
	private       bool
}

// fileStamp tells a file's versions apart: an edit changes its time or
// size, a rewrite by rename (vipw, useradd) its inode.
type fileStamp struct {
	mtime, size int64
	ino         uint64
}

func stamp(file string) fileStamp {
	fi, err := os.Stat(file)
	if err != nil {
		return fileStamp{mtime: -1}
	}
	s := fileStamp{mtime: fi.ModTime().UnixNano(), size: fi.Size()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = uint64(st.Ino)
	}
	return s
}

// privateGroupCached is privateGroupFiles, read again when either file
// has changed since the answer cached.
func privateGroupCached(passwdFile, groupFile string, uid, gid uint32) bool {
	key := privateGroupKey{passwdFile, groupFile, uid, gid}
	ps, gs := stamp(passwdFile), stamp(groupFile)
	if v, ok := privateGroups.Load(key); ok {
		if a := v.(privateGroupAnswer); a.passwd == ps && a.group == gs {
			return a.private
		}
	}
	private := privateGroupFiles(passwdFile, groupFile, uid, gid)
	privateGroups.Store(key, privateGroupAnswer{ps, gs, private})
	return private
}

func privateGroupFiles(passwdFile, groupFile string, uid, gid uint32) bool {
	passwd, err := os.ReadFile(passwdFile)
	if err != nil {
		return false
	}
	group, err := os.ReadFile(groupFile)
	if err != nil {
		return false
	}
	owner := ""
	uids, gids := strconv.FormatUint(uint64(uid), 10), strconv.FormatUint(uint64(gid), 10)
	for line := range strings.SplitSeq(string(passwd), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 4 {
			continue
		}
		u, g := f[2], f[3]
		switch {
		case u == uids:
			if g != gids {
				return false // not the owner's primary group
			}
			owner = f[0]
		case g == gids:
			return false // another user's primary group too
		}
	}
	if owner == "" {
		return false
	}
	// Every line of the gid counts (alice:x:1000: and alicedev:x:1000:bob
	// make 1000 bob's group too): one must be named as the owner, and none
	// may list a member but the owner.
	named := false
	for line := range strings.SplitSeq(string(group), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 4 || f[2] != gids {
			continue
		}
		named = named || f[0] == owner
		for m := range strings.SplitSeq(f[3], ",") {
			if m = strings.TrimSpace(m); m != "" && m != owner {
				return false
			}
		}
	}
	return named
}

// Mode is fi's permission bits in octal as chmod takes them, with the
// sticky, setgid and setuid bits: "1777", "0755".
func Mode(fi os.FileInfo) string {
	m := uint32(fi.Mode().Perm())
	if fi.Mode()&os.ModeSticky != 0 {
		m |= 0o1000
	}
	if fi.Mode()&os.ModeSetgid != 0 {
		m |= 0o2000
	}
	if fi.Mode()&os.ModeSetuid != 0 {
		m |= 0o4000
	}
	return fmt.Sprintf("%04o", m)
}

// maxLinks bounds the symlinks CheckPath follows, as the kernel does (40).
const maxLinks = 40

// CheckPath refuses path unless no user but this one and root can change
// what it leads to, from base down: base and each component of path below
// it (path must be base or below it) must be owned by this user or root
// (Foreign) and writable by no one else (WritableByOthers). A folder on the
// way (not path itself) that others can write but that has the sticky bit
// (/tmp) passes: the bit keeps them from renaming or removing what they do
// not own, and the next component must be this user's or root's.
//
// Symlinks are followed one at a time, as the kernel resolves the path:
// each link (a link a link leads to included) must be owned by this user or
// root, and each folder the kernel then walks through is checked the same
// way. An absolute target is checked from / down. A relative one goes on
// from the link's folder, already checked; a folder it climbs to with ..
// is already checked when it lies between where the checked path started
// (base, or / after an absolute target) and the link, and otherwise is
// checked from / down first. The error names the component at fault; a
// missing one gives the error of os.Lstat.
//
// Folders found by convention rather than given (./.claude/skills run from a
// shared folder) are read only when this passes: whoever can write such a
// component could swap what lies below it, at any time.
func CheckPath(base, path string) error {
	// Absolute, so that messages name the folder wherever they are read.
	if abs, err := filepath.Abs(base); err == nil {
		if p, err := filepath.Abs(path); err == nil {
			base, path = abs, p
		}
	}
	rel, err := filepath.Rel(base, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is not below %s", path, base)
	}
	base = filepath.Clean(base)
	var names []string
	if rel != "." {
		names = strings.Split(rel, string(filepath.Separator))
	}
	w := &walker{}
	if base == string(filepath.Separator) {
		_, err := w.fromRoot(names, true)
		return err
	}
	// base is looked up in its parent, trusted as the place the check
	// starts from (not checked: top is "").
	_, _, err = w.walk(filepath.Dir(base), "", append([]string{filepath.Base(base)}, names...), true)
	return err
}

// walker resolves paths for CheckPath, counting the symlinks it follows.
type walker struct{ links int }

// fromRoot checks / and then names from it; it returns the folder reached.
func (w *walker) fromRoot(names []string, last bool) (string, error) {
	root := string(filepath.Separator)
	if err := checkEntry(root, last && len(names) == 0); err != nil {
		return "", err
	}
	dir, _, err := w.walk(root, root, names, last)
	return dir, err
}

// walk resolves names from dir as the kernel does, checking each component
// it looks up (checkComponent). Every folder from top down to dir has been
// checked, and dir is a real folder (no link) or, with top "", the
// unchecked folder the check starts in. last says the final name is the
// path checked, not a folder on the way. It returns the folder reached
// and the new top.
func (w *walker) walk(dir, top string, names []string, last bool) (string, string, error) {
	end := len(names) - 1
	for end >= 0 && names[end] == "" {
		end--
	}
	for i, name := range names {
		isLast := last && i == end
		switch name {
		case "", ".":
			if isLast && top != "" {
				if err := checkEntry(dir, true); err != nil {
					return "", "", err
				}
			}
			continue
		case "..":
			parent := filepath.Dir(dir)
			if dir == top || top == "" {
				// Above where the checked path starts: the kernel
				// climbs to the real parent, which nothing checked yet.
				if dir != string(filepath.Separator) {
					var err error
					if parent, err = w.fromRoot(split(parent), false); err != nil {
						return "", "", err
					}
				}
				top = string(filepath.Separator)
			}
			dir = parent
			if isLast {
				if err := checkEntry(dir, true); err != nil {
					return "", "", err
				}
			}
			continue
		}
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if err != nil {
			return "", "", err
		}
		if err := checkInfo(p, fi, isLast); err != nil {
			return "", "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			dir = p
			if top == "" {
				top = p
			}
			continue
		}
		if w.links++; w.links > maxLinks {
			return "", "", fmt.Errorf("%s: %w", p, syscall.ELOOP)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", "", err
		}
		if target == "" {
			return "", "", &os.PathError{Op: "readlink", Path: p, Err: syscall.ENOENT}
		}
		if filepath.IsAbs(target) {
			dir, err = w.fromRoot(split(target), isLast)
			top = string(filepath.Separator)
		} else {
			if top == "" {
				// The link's own folder was not checked (it is the
				// base's parent): from / down first.
				if dir, err = w.fromRoot(split(dir), false); err != nil {
					return "", "", fmt.Errorf("%s leads to %s: %w", p, target, err)
				}
				top = string(filepath.Separator)
			}
			dir, top, err = w.walk(dir, top, strings.Split(target, string(filepath.Separator)), isLast)
		}
		if err != nil {
			return "", "", fmt.Errorf("%s leads to %s: %w", p, target, err)
		}
	}
	return dir, top, nil
}

// split is the names of an absolute path below /: none for / itself.
func split(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == filepath.Separator })
}

// checkEntry applies CheckPath's rule to p, which is not followed.
func checkEntry(p string, last bool) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	return checkInfo(p, fi, last)
}

// CheckEntry applies CheckPath's rule to p alone (fi, from os.Lstat), the
// path checked itself, as an entry of a folder already checked: owned by
// this user or root (Foreign), and unless it is a symlink, writable by no
// one else (WritableByOthers), a sticky folder included (anyone may add
// entries to it). Where a symlink leads is not looked at: CheckPath
// follows it. For a tree walked from a folder CheckPath accepted, one
// Lstat per entry the walk makes anyway.
func CheckEntry(p string, fi os.FileInfo) error { return checkInfo(p, fi, true) }

// checkInfo applies CheckPath's rule to p (fi, from os.Lstat): its owner,
// and unless it is a symlink, who else can write it; last says it is the
// path checked, not a folder on the way to it.
func checkInfo(p string, fi os.FileInfo, last bool) error {
	if uid, other := Foreign(fi); other {
		return fmt.Errorf("%s belongs to another user (uid %d)", p, uid)
	}
	if fi.Mode()&os.ModeSymlink == 0 && WritableByOthers(fi) && (last || !fi.IsDir() || fi.Mode()&os.ModeSticky == 0) {
		return fmt.Errorf("%s is writable by other users (mode %s)", p, Mode(fi))
	}
	return nil
}

// SharedAncestor returns the nearest folder above dir (an absolute path)
// that every user can write, such as /tmp; "" when there is none. Tools
// that look for project files in the parent folders of their working folder
// (npm's node_modules and .npmrc, uv's uv.toml) would read what another
// user put there, even in a folder Check accepts.
func SharedAncestor(dir string) string {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o002 != 0 {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Foreign reports whether fi belongs to a user other than this process's
// and root, and which: folders found by convention in a shared place (run
// from /tmp, ./.claude/skills) may be another user's, whose files would go
// into prompts, and with script execution, run as this user.
func Foreign(fi os.FileInfo) (uid int, foreign bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	uid = int(st.Uid)
	return uid, uid != os.Geteuid() && uid != 0
}

// Exposed says how users other than this one can read the file at path
// (symlinks followed), for a file that holds a secret (an API key, a
// token); "" when they cannot. Every user can read a world-readable file;
// the members of its group a group-readable one of this user's. A
// group-readable file of another owner (root) is how this user reads it
// through its group: shared with that group on purpose (a service reading
// root:svc 0640, a Kubernetes Secret volume's fsGroup), not reported. Like
// ssh's test of a private key file, as a warning's input, not a refusal.
func Exposed(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	perm := fi.Mode().Perm()
	switch {
	case perm&0o004 != 0:
		return fmt.Sprintf("every user can read it (mode %s)", Mode(fi)), nil
	case perm&0o040 != 0 && !ownersPrivateGroup(fi):
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == os.Geteuid() {
			return fmt.Sprintf("its group (gid %d) can read it (mode %s)", st.Gid, Mode(fi)), nil
		}
	}
	return "", nil
}
