package txn

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// The journal keeps each transactional id's state, staged batches and
// commit progress as lines in a Store, written (and synced) before the
// request that changed them is answered. A coordinator that starts reads
// them back: open transactions go on, and a commit that was being applied
// is finished from the first batch not recorded as applied
// (docs/transactions.md, "Restarts"). The journal encodes; the Store only
// keeps bytes per transactional id, so where they live (today a state
// directory, DirStore) is one small type.
type journal struct {
	store Store
}

// Store keeps each transactional id's journal, a sequence of lines. Every
// call returns only once what it wrote is durable.
type Store interface {
	// Reset replaces id's lines by b.
	Reset(id string, b []byte) error
	// Append adds b after id's lines.
	Append(id string, b []byte) error
	// Forget removes id's lines.
	Forget(id string) error
	// Load returns every id's lines.
	Load() ([][]byte, error)
}

// entry is one line of a transactional id's journal.
type entry struct {
	Kind      string           `json:"k"`
	ID        string           `json:"id,omitempty"`
	PID       int64            `json:"pid,omitempty"`
	Epoch     int16            `json:"epoch,omitempty"`
	TimeoutMs int64            `json:"timeout_ms,omitempty"`
	State     string           `json:"state,omitempty"`
	StartedMs int64            `json:"started_ms,omitempty"`
	Parts     []TopicPartition `json:"parts,omitempty"`
	Group     string           `json:"group,omitempty"`
	Offsets   [][]byte         `json:"offsets,omitempty"` // fetchv1.CommittedOffset each
	Staged    *stagedEntry     `json:"staged,omitempty"`
	Writer    int64            `json:"writer,omitempty"`
	Applied   int              `json:"applied,omitempty"`
}

type stagedEntry struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	FirstSeq  int32  `json:"first_seq"`
	LastSeq   int32  `json:"last_seq"`
	Bytes     int64  `json:"bytes"`
	Append    []byte `json:"append"` // an appendv1.AppendRequest
}

const (
	kindInit    = "init"    // producer id, epoch, timeout, state: starts a journal
	kindBegin   = "begin"   // a transaction opened
	kindParts   = "parts"   // partitions added
	kindGroup   = "group"   // a group added
	kindOffsets = "offsets" // offsets staged
	kindStage   = "stage"   // a batch staged
	kindPrepare = "prepare" // commit decided, with the apply's writer id
	kindApplied = "applied" // the first n staged batches are stored
)

func marshalLine(e entry) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// reset replaces id's journal by t's state alone (a new epoch, or the end
// of a transaction).
func (j *journal) reset(t *txn) error {
	b, err := marshalLine(entry{Kind: kindInit, ID: t.id, PID: t.producerID, Epoch: t.epoch,
		TimeoutMs: t.timeout.Milliseconds(), State: t.state.String()})
	if err != nil {
		return err
	}
	return j.store.Reset(t.id, b)
}

// add appends entries to id's journal.
func (j *journal) add(id string, es ...entry) error {
	var b []byte
	for _, e := range es {
		line, err := marshalLine(e)
		if err != nil {
			return err
		}
		b = append(b, line...)
	}
	return j.store.Append(id, b)
}

// forget removes id's journal.
func (j *journal) forget(id string) error { return j.store.Forget(id) }

// stagedEntryOf is b as the journal keeps it.
func stagedEntryOf(b *Staged) (*stagedEntry, error) {
	raw, err := proto.Marshal(b.Append)
	if err != nil {
		return nil, err
	}
	return &stagedEntry{Topic: b.Topic, Partition: b.Partition, FirstSeq: b.FirstSeq, LastSeq: b.LastSeq, Bytes: b.Bytes, Append: raw}, nil
}

func offsetEntries(offsets []*fetchv1.CommittedOffset) ([][]byte, error) {
	out := make([][]byte, len(offsets))
	for i, o := range offsets {
		b, err := proto.Marshal(o)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// recovered is one transactional id read back from its file.
type recovered struct {
	t       *txn
	writer  int64
	applied int
}

// load reads every journal back. A line that does not parse ends its
// journal: it is a write cut short by a crash, never acknowledged.
func (j *journal) load() ([]recovered, error) {
	logs, err := j.store.Load()
	if err != nil {
		return nil, fmt.Errorf("txn journal: %w", err)
	}
	var out []recovered
	for _, b := range logs {
		r, err := replay(b)
		if err != nil {
			return nil, fmt.Errorf("txn journal: %w", err)
		}
		if r.t != nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// Reader is a Store shared by frontdoors: one id's lines can be read when
// coordination of it moves to this frontdoor.
type Reader interface {
	// Read returns id's lines, nil when it has none.
	Read(id string) ([]byte, error)
}

// loadID reads id's journal back when the Store is a Reader; else (a
// frontdoor's own directory) only load at start has anything to find.
func (j *journal) loadID(id string) (recovered, error) {
	rd, ok := j.store.(Reader)
	if !ok {
		return recovered{}, nil
	}
	b, err := rd.Read(id)
	if err != nil || b == nil {
		return recovered{}, err
	}
	r, err := replay(b)
	if err != nil {
		return r, fmt.Errorf("txn journal: %w", err)
	}
	return r, nil
}

// replay rebuilds one journal's transactional id.
func replay(b []byte) (recovered, error) {
	var r recovered
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			break
		}
		t := r.t
		if t == nil && e.Kind != kindInit {
			return r, fmt.Errorf("first entry is %q, not %q", e.Kind, kindInit)
		}
		switch e.Kind {
		case kindInit:
			st, ok := ParseState(e.State)
			if !ok {
				return r, fmt.Errorf("state %q", e.State)
			}
			r.t = &txn{id: e.ID, producerID: e.PID, epoch: e.Epoch, state: st, timeout: msDuration(e.TimeoutMs),
				nextSeq: map[TopicPartition]int32{}}
			r.t.reset(nowFunc())
			r.t.state = st
		case kindBegin:
			t.reset(nowFunc())
			t.state, t.started = Ongoing, msTime(e.StartedMs)
		case kindParts:
			for _, p := range e.Parts {
				t.parts[p] = true
			}
		case kindGroup:
			t.groups[e.Group] = true
		case kindOffsets:
			m := t.offsets[e.Group]
			if m == nil {
				m = map[TopicPartition]*fetchv1.CommittedOffset{}
				t.offsets[e.Group] = m
			}
			for _, raw := range e.Offsets {
				o := &fetchv1.CommittedOffset{}
				if err := proto.Unmarshal(raw, o); err != nil {
					return r, err
				}
				m[TopicPartition{o.GetTopic(), o.GetPartition()}] = o
			}
		case kindStage:
			s := e.Staged
			req := &appendv1.AppendRequest{}
			if err := proto.Unmarshal(s.Append, req); err != nil {
				return r, err
			}
			tp := TopicPartition{s.Topic, s.Partition}
			t.staged = append(t.staged, &Staged{TopicPartition: tp, FirstSeq: s.FirstSeq, LastSeq: s.LastSeq, Append: req, Bytes: s.Bytes})
			t.bytes += s.Bytes
			t.nextSeq[tp] = nextSeq(s.LastSeq)
		case kindPrepare:
			t.state, r.writer = PrepareCommit, e.Writer
		case kindApplied:
			r.applied = e.Applied
		default:
			return r, fmt.Errorf("entry kind %q", e.Kind)
		}
	}
	return r, sc.Err()
}

// nowFunc is time.Now; msDuration and msTime read the journal's numbers.
var nowFunc = time.Now

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }
