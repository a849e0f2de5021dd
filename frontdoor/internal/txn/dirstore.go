package txn

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DirStore is the Store in a local directory, a file per transactional
// id. It does not survive the loss of the disk, nor move with a
// transactional id to another frontdoor (docs/limits.md).
type DirStore struct {
	dir string
}

// NewDirStore returns the Store in dir, created if missing.
func NewDirStore(dir string) (*DirStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("txn journal: %w", err)
	}
	return &DirStore{dir: dir}, nil
}

func (d *DirStore) path(id string) string {
	h := sha256.Sum256([]byte(id))
	return filepath.Join(d.dir, "txn-"+hex.EncodeToString(h[:16])+".jsonl")
}

// Reset writes b aside, syncs it and renames it over id's file.
func (d *DirStore) Reset(id string, b []byte) error {
	p := d.path(id)
	tmp := p + ".tmp"
	if err := writeSynced(tmp, b, os.O_CREATE|os.O_TRUNC|os.O_WRONLY); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("txn journal: %w", err)
	}
	return syncDir(d.dir)
}

// Append appends b to id's file and syncs it.
func (d *DirStore) Append(id string, b []byte) error {
	return writeSynced(d.path(id), b, os.O_APPEND|os.O_WRONLY)
}

// Forget removes id's file.
func (d *DirStore) Forget(id string) error {
	if err := os.Remove(d.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("txn journal: %w", err)
	}
	return nil
}

// Load reads every file.
func (d *DirStore) Load() ([][]byte, error) {
	names, err := filepath.Glob(filepath.Join(d.dir, "txn-*.jsonl"))
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(names))
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("txn journal: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}

func writeSynced(path string, b []byte, flag int) error {
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return fmt.Errorf("txn journal: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("txn journal: %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("txn journal: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("txn journal: %w", err)
	}
	return nil
}
