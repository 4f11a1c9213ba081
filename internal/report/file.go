package report

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// writeAtomic writes through a temp file in path's directory and renames it
// into place, so a failure never leaves a half-written file.
func writeAtomic(path string, write func(*os.File) error) error {
	f, err := CreateTemp(path, PermShared)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) //nolint:errcheck // gone after a successful rename
	if err := write(f); err != nil {
		f.Close() //nolint:errcheck // the write error is the one to report
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// PermShared is the mode of every file kplan writes for people to read or
// hand on (plans, rollbacks, reports, PNGs, snapshots); the umask applies.
// Files that hold secrets use PermSecret.
const (
	PermShared os.FileMode = 0o644
	PermSecret os.FileMode = 0o600
)

// CreateTemp creates a new temp file beside path, named
// ".BASE.tmp-RANDOM", with mode perm less the umask (os.CreateTemp would
// always give 0600). The caller renames it over path or removes it.
func CreateTemp(path string, perm os.FileMode) (*os.File, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	for range 100 {
		name := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("cannot create a temp file beside %s", path)
}

// WriteFileAtomic writes data to path through a temp file and a rename,
// with mode PermShared less the umask.
func WriteFileAtomic(path string, data []byte) error {
	return writeAtomic(path, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}
