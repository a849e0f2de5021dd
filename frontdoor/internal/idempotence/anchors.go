package idempotence

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Anchors: where each idempotent (producer, partition) state can be read
// back from the Fluss log after the frontdoor restarts.
//
// A Fluss writer serves one (producer id, epoch) and numbers its batches on
// a bucket from 0, one Fluss batch per Kafka batch. An anchor records that
// the writer's Fluss batch k, whose Kafka first sequence is S, is stored at
// or after log offset O (and no batch of the writer with a lower sequence
// is). Reading the bucket's log forward from O and counting the records of
// the writer's batches gives back every later batch's Kafka and Fluss
// sequence and its offset: the state the lost process had, minus what it
// never got stored, which the client resends anyway.
//
// An anchor is written (and synced) before the first batch of a new
// partition state is sent: O is then the bucket's latest offset, k and S
// are 0. It is moved forward in the background to the oldest of the last
// five batches once Fluss acknowledged that one, so that a rebuild reads
// little log and still recovers all five (a client may retry any of them).
//
// Anchors live in an append-only journal (one JSON object per line, synced
// after each write), rewritten from the live anchors when it has grown to
// several times their number. A torn last line, left by a crash in the
// middle of a write, is cut off when the journal is opened.

// anchorKey is one (producer, partition).
type anchorKey struct {
	producerID int64
	topic      string
	partition  int32
}

// anchor is the persisted position of a (producer, partition) state.
type anchor struct {
	Epoch    int16 `json:"e"`
	Writer   int64 `json:"w"`
	TableID  int64 `json:"tid"`
	FlussSeq int32 `json:"k"`
	KafkaSeq int32 `json:"s"`
	Offset   int64 `json:"o"`
	// Time is when the anchor was written (Unix ms): anchors of a producer
	// not seen for the idle expiry are dropped.
	Time int64 `json:"ts"`
}

// anchorRecord is one journal line: an anchor, the removal of one
// (Delete), or the removal of all of a producer's (DropProducer).
type anchorRecord struct {
	ProducerID   int64   `json:"p"`
	Topic        string  `json:"t,omitempty"`
	Partition    int32   `json:"n,omitempty"`
	Delete       bool    `json:"del,omitempty"`
	DropProducer bool    `json:"drop,omitempty"`
	Anchor       *anchor `json:"a,omitempty"`
}

func (r anchorRecord) key() anchorKey { return anchorKey{r.ProducerID, r.Topic, r.Partition} }

const (
	anchorJournal     = "idempotence-anchors.jsonl"
	anchorLock        = "idempotence.lock"
	defaultCompactMin = 4096
)

// anchorStore is the journal and the anchors it holds.
type anchorStore struct {
	dir string
	log *slog.Logger

	// fileMu serializes every change: append to the journal, then update
	// the map.
	fileMu sync.Mutex
	f      *os.File
	lock   *os.File
	lines  int
	// compactMin: the journal is not rewritten below this many lines.
	compactMin int

	mu      sync.Mutex // the map and queue; held briefly, never across I/O
	anchors map[anchorKey]anchor
	queue   []*pendingPut
}

// openAnchorStore opens (creating) the journal in dir and loads it. The
// directory is locked: two processes appending to one journal would
// corrupt it.
func openAnchorStore(dir string, log *slog.Logger) (*anchorStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("idempotence state dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, anchorLock), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("idempotence state dir: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("idempotence state dir %s is in use by another process: %w", dir, err)
	}
	s := &anchorStore{dir: dir, log: log, lock: lock, compactMin: defaultCompactMin, anchors: map[anchorKey]anchor{}}
	if err := s.load(); err != nil {
		lock.Close()
		return nil, err
	}
	return s, nil
}

func (s *anchorStore) load() error {
	path := filepath.Join(s.dir, anchorJournal)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("idempotence state: %w", err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var good int64 // bytes up to the end of the last whole line
	bad := 0
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(line) > 0 {
				s.log.Warn("idempotence state: cutting off a torn last line", "path", path, "bytes", len(line))
			}
			break
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("idempotence state: reading %s: %w", path, err)
		}
		good += int64(len(line))
		s.lines++
		var rec anchorRecord
		if err := json.Unmarshal(bytes.TrimSpace(line), &rec); err != nil {
			// Only a damaged disk gets here. Skipping a line can only leave
			// an older anchor of the key in place, which rebuilds correctly
			// (from further back), or none (the client starts over).
			bad++
			continue
		}
		s.applyLocked(rec)
	}
	if bad > 0 {
		s.log.Error("idempotence state: skipped unreadable lines", "path", path, "lines", bad)
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return fmt.Errorf("idempotence state: %w", err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return fmt.Errorf("idempotence state: %w", err)
	}
	s.f = f
	s.log.Info("idempotence state loaded", "path", path, "anchors", len(s.anchors))
	return nil
}

// applyLocked updates the map; the caller holds mu or is the only user.
func (s *anchorStore) applyLocked(rec anchorRecord) {
	switch {
	case rec.DropProducer:
		for k := range s.anchors {
			if k.producerID == rec.ProducerID {
				delete(s.anchors, k)
			}
		}
	case rec.Delete:
		delete(s.anchors, rec.key())
	case rec.Anchor != nil:
		s.anchors[rec.key()] = *rec.Anchor
	}
}

// get returns the anchor of k.
func (s *anchorStore) get(k anchorKey) (anchor, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.anchors[k]
	return a, ok
}

// put durably records a new anchor for k (a new partition state).
// Puts that arrive while another write is syncing share the next write
// and sync (group commit): many producers starting at once cost a few
// syncs, not one each.
func (s *anchorStore) put(k anchorKey, a anchor) error {
	p := &pendingPut{rec: anchorRecord{ProducerID: k.producerID, Topic: k.topic, Partition: k.partition, Anchor: &a}, done: make(chan struct{})}
	s.mu.Lock()
	s.queue = append(s.queue, p)
	s.mu.Unlock()
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	select {
	case <-p.done: // written by the holder before us
		return p.err
	default:
	}
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	s.mu.Unlock()
	recs := make([]anchorRecord, len(batch))
	for i, q := range batch {
		recs[i] = q.rec
	}
	err := s.writeLocked(recs)
	for _, q := range batch {
		q.err = err
		close(q.done)
	}
	return p.err
}

// pendingPut is a put waiting for the next write.
type pendingPut struct {
	rec  anchorRecord
	done chan struct{}
	err  error
}

// remove durably drops the anchor of k.
func (s *anchorStore) remove(k anchorKey) error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if _, ok := s.get(k); !ok {
		return nil
	}
	return s.writeLocked([]anchorRecord{{ProducerID: k.producerID, Topic: k.topic, Partition: k.partition, Delete: true}})
}

// advance records anchors that moved forward. An advance computed before
// the key got a new anchor (another writer) or was dropped is stale and
// skipped, as is one that does not move forward.
func (s *anchorStore) advance(moves map[anchorKey]anchor) error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	var recs []anchorRecord
	s.mu.Lock()
	for k, a := range moves {
		cur, ok := s.anchors[k]
		if !ok || cur.Writer != a.Writer || cur.Epoch != a.Epoch || a.Offset <= cur.Offset {
			continue
		}
		a := a
		recs = append(recs, anchorRecord{ProducerID: k.producerID, Topic: k.topic, Partition: k.partition, Anchor: &a})
	}
	s.mu.Unlock()
	return s.writeLocked(recs)
}

// expire drops the anchors of producers whose newest anchor is older than
// idle and that are not in use (lastUsed has what this process knows of
// producers in memory).
func (s *anchorStore) expire(now time.Time, idle time.Duration, lastUsed map[int64]time.Time) error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	newest := map[int64]int64{}
	s.mu.Lock()
	for k, a := range s.anchors {
		newest[k.producerID] = max(newest[k.producerID], a.Time)
	}
	s.mu.Unlock()
	var recs []anchorRecord
	for id, ts := range newest {
		seen := time.UnixMilli(ts)
		if t, ok := lastUsed[id]; ok && t.After(seen) {
			seen = t
		}
		if now.Sub(seen) > idle {
			recs = append(recs, anchorRecord{ProducerID: id, DropProducer: true})
		}
	}
	return s.writeLocked(recs)
}

// writeLocked appends recs, syncs, then applies them; the caller holds
// fileMu. A journal grown well past the live anchors is rewritten first.
func (s *anchorStore) writeLocked(recs []anchorRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if s.f == nil {
		return errors.New("idempotence state: closed")
	}
	s.mu.Lock()
	live := len(s.anchors)
	s.mu.Unlock()
	if s.lines > s.compactMin && s.lines > 4*live {
		if err := s.compactLocked(); err != nil {
			// The journal still holds everything; only its size suffers.
			s.log.Warn("idempotence state: compaction failed", "err", err)
		}
	}
	var buf bytes.Buffer
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if _, err := s.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("idempotence state: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("idempotence state: %w", err)
	}
	s.lines += len(recs)
	s.mu.Lock()
	for _, r := range recs {
		s.applyLocked(r)
	}
	s.mu.Unlock()
	return nil
}

// compactLocked rewrites the journal from the live anchors: a temporary
// file, synced, renamed over the journal, the directory synced.
func (s *anchorStore) compactLocked() error {
	path := filepath.Join(s.dir, anchorJournal)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	s.mu.Lock()
	n := 0
	for k, a := range s.anchors {
		a := a
		b, err := json.Marshal(anchorRecord{ProducerID: k.producerID, Topic: k.topic, Partition: k.partition, Anchor: &a})
		if err == nil {
			w.Write(b)
			w.WriteByte('\n')
			n++
		}
	}
	s.mu.Unlock()
	if err := errors.Join(w.Flush(), f.Sync(), f.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	nf, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		// The renamed journal is complete; without a handle nothing more
		// can be written until restart.
		s.f.Close()
		s.f = nil
		return err
	}
	s.f.Close()
	s.f = nf
	s.lines = n
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// close closes the journal and releases the directory.
func (s *anchorStore) close() error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	var err error
	if s.f != nil {
		err = s.f.Close()
		s.f = nil
	}
	return errors.Join(err, s.lock.Close())
}
