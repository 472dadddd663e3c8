//go:build !unix

package skills

import "os"

// fileID is not known here: every path is watched as its own folder.
type fileID struct{}

func fileIDOf(os.FileInfo) (fileID, bool) { return fileID{}, false }
