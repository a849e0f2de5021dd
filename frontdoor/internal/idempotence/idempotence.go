package idempotence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Idempotent produce: Kafka's per-partition producer state, kept by the
// frontdoor that leads the partition, translated onto Fluss writer state.
//
// Kafka numbers records: a batch's base sequence is the previous batch's
// base sequence plus its record count. Fluss numbers batches: each batch of
// a writer on a bucket carries the previous batch sequence plus one, and
// the tablet server deduplicates a batch whose sequence is among the
// writer's last five on that bucket, answering it with the offsets it was
// first stored at. The table below maps one onto the other, per (producer,
// partition), for the last five batches (Kafka clients keep at most five in
// flight per partition), so that a Kafka retry is resent with the Fluss
// sequence of its first attempt and Fluss itself drops the copy.
//
// A Fluss writer id is used by exactly one (producer id, epoch) of one
// frontdoor process: a new epoch, or a producer this process has no state
// for, gets a fresh writer id whose sequences start at 0 on every bucket.
// Reusing a writer id without knowing where its Fluss sequences stand could
// make Fluss take a new batch for a duplicate of an old one and drop it, so
// state that is gone (restart, expiry) is never guessed; the client is told
// (UNKNOWN_PRODUCER_ID) and bumps its epoch instead. The exception is state
// read back from the Fluss log through a persisted anchor (anchors.go,
// recovery.go), which continues a writer exactly where the log shows it.
// See docs/idempotence.md.
//
// Routed batches (tables that place rows themselves: a primary key,
// partition columns or a bucket key) are split into pieces, one per Fluss
// bucket, and pieces of different Kafka partitions may land in the same
// bucket. Each (producer, epoch, Kafka partition) of such a table therefore
// gets a Fluss writer of its own, with a Fluss sequence per bucket it
// writes to: a retry resends every piece with the sequence of its first
// attempt, and Fluss drops the pieces it already holds. Routed state lives
// in memory only (no anchors): after a restart the producer is told
// UNKNOWN_PRODUCER_ID and starts a new epoch.

// Config tunes the producer state.
type Config struct {
	// ProducerIdleExpiry drops a producer's state after this long without a
	// batch (Kafka's producer.id.expiration.ms). It must stay below the
	// Fluss tablet servers' server.writer-id.expiration-time (7 days by
	// default), so Fluss never forgets a writer this frontdoor still uses.
	ProducerIdleExpiry time.Duration
	// MaxProducers bounds the producers with state; a new producer beyond
	// it evicts the longest idle one without batches in flight.
	MaxProducers int
}

// DefaultConfig mirrors Kafka's defaults.
func DefaultConfig() Config {
	return Config{ProducerIdleExpiry: 24 * time.Hour, MaxProducers: 100_000}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.ProducerIdleExpiry <= 0:
		return fmt.Errorf("idempotence config: ProducerIdleExpiry %s must be positive", c.ProducerIdleExpiry)
	case c.ProducerIdleExpiry >= 7*24*time.Hour:
		return fmt.Errorf("idempotence config: ProducerIdleExpiry %s must be below Fluss's default writer expiration of 7 days", c.ProducerIdleExpiry)
	case c.MaxProducers <= 0:
		return fmt.Errorf("idempotence config: MaxProducers %d must be positive", c.MaxProducers)
	}
	return nil
}

// recentBatches is how many batches per (producer, partition) are
// remembered for duplicates: Kafka's and Fluss's window alike.
const recentBatches = 5

// WriterAllocator returns a new cluster-unique Fluss writer id.
type WriterAllocator func(ctx context.Context) (int64, error)

// States is the idempotence state of every producer writing to
// partitions this frontdoor serves.
type States struct {
	cfg   Config
	alloc WriterAllocator
	now   func() time.Time

	// Persisted anchors (anchors.go); nil store: state lives in memory only.
	store      *anchorStore
	wlog       WriterLog
	log        *slog.Logger
	dirty      map[*partState]struct{} // states with a newly acknowledged batch
	lastExpire time.Time
	stop       chan struct{}
	loopDone   chan struct{}
	stopOnce   sync.Once
	// warnUnimplemented: an old appendsvc was reported once.
	warnUnimplemented sync.Once

	mu        sync.Mutex
	producers map[int64]*producerState
	inits     map[writerKey]*writerInit
	lastSweep time.Time
}

type writerKey struct {
	producerID int64
	epoch      int16
}

// writerInit is one allocation in progress; later callers wait for it.
type writerInit struct {
	done chan struct{}
	id   int64
	err  error
}

type producerState struct {
	writers  map[int16]int64 // epoch -> Fluss writer id
	parts    map[partitionKey]*partState
	lastUsed time.Time
	inFlight int // batches admitted and not yet finished
}

// partState is one (producer, partition): Kafka's expected next sequence,
// the Fluss writer and its next batch sequence, and the recent batches.
type partState struct {
	epoch     int16
	writer    int64
	nextKafka int32
	nextFluss int32
	recent    []*seqEntry // oldest first, at most recentBatches
	// routed: the writer is this partition's own, with the next Fluss
	// sequence per bucket in nextPiece (nextFluss unused).
	routed    bool
	nextPiece map[Target]int32
	// With persisted anchors: the anchor's key, the table it was made for
	// and the offset of the anchor last written.
	ak    anchorKey
	table Table
	saved int64
}

// seqEntry is one admitted batch.
type seqEntry struct {
	owner      *producerState
	part       *partState
	firstSeq   int32
	lastSeq    int32
	writer     int64
	flussSeq   int32
	baseOffset int64 // -1 until Fluss acknowledged it
	sending    int   // submissions of this batch not finished yet
	// Routed batches: the buckets of the pieces and the sequence of each.
	targets   []Target
	pieceSeqs []int32
}

// New returns empty state; alloc hands out writer ids.
func New(cfg Config, alloc WriterAllocator) (*States, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if alloc == nil {
		return nil, errors.New("idempotence: nil WriterAllocator")
	}
	return &States{cfg: cfg, alloc: alloc, now: time.Now, producers: map[int64]*producerState{}, inits: map[writerKey]*writerInit{}}, nil
}

// NewProducer allocates a producer id for InitProducerId: a fresh Fluss
// writer id, which is also the writer of the producer's epoch 0.
func (ps *States) NewProducer(ctx context.Context) (int64, error) {
	id, err := ps.alloc(ctx)
	if err != nil {
		return 0, err
	}
	if id < 0 {
		return 0, fmt.Errorf("idempotence: writer id %d unusable as a producer id", id)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.producerLocked(id)
	if _, ok := p.writers[0]; !ok {
		p.writers[0] = id
	}
	return id, nil
}

// producerLocked returns the producer's state, creating it (and evicting
// the longest idle producer beyond MaxProducers).
func (ps *States) producerLocked(id int64) *producerState {
	now := ps.now()
	ps.sweepLocked(now)
	p := ps.producers[id]
	if p == nil {
		if len(ps.producers) >= ps.cfg.MaxProducers {
			ps.evictOneLocked()
		}
		p = &producerState{writers: map[int16]int64{}, parts: map[partitionKey]*partState{}}
		ps.producers[id] = p
	}
	p.lastUsed = now
	return p
}

// sweepLocked drops producers idle longer than the expiry, at most once a
// tenth of the expiry (and at most once a minute).
func (ps *States) sweepLocked(now time.Time) {
	every := min(ps.cfg.ProducerIdleExpiry/10, time.Minute)
	if now.Sub(ps.lastSweep) < every {
		return
	}
	ps.lastSweep = now
	for id, p := range ps.producers {
		if p.inFlight == 0 && now.Sub(p.lastUsed) > ps.cfg.ProducerIdleExpiry {
			delete(ps.producers, id)
		}
	}
}

func (ps *States) evictOneLocked() {
	var victim int64 = -1
	var oldest time.Time
	for id, p := range ps.producers {
		if p.inFlight == 0 && (victim < 0 || p.lastUsed.Before(oldest)) {
			victim, oldest = id, p.lastUsed
		}
	}
	if victim >= 0 {
		delete(ps.producers, victim)
	}
}

// forgetAll drops every producer's state, as a restart does.
func (ps *States) forgetAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for id, p := range ps.producers {
		if p.inFlight == 0 {
			delete(ps.producers, id)
		}
	}
}

// Len reports the producers with state.
func (ps *States) Len() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.producers)
}

// admit decides what to do with an idempotent batch. Call it in the
// partition's order (holding the partition's sequencer turn), and call
// finish on the returned entry once the append's outcome is known. It may
// allocate a Fluss writer id, write an anchor or rebuild the partition's
// state from the log first, which are the only things it waits for.
// targets are the buckets of a routed batch's pieces, nil for a batch that
// goes whole to the partition's bucket.
func (ps *States) admit(ctx context.Context, key partitionKey, tbl Table, b Batch, targets []Target) Verdict {
	for {
		v, n := ps.decide(key, tbl, b, targets)
		switch n.kind {
		case needNothing:
			return v
		case needRoutedWriter:
			w, err := ps.alloc(ctx)
			if err != nil {
				return Verdict{Code: kerr.RequestTimedOut.Code, Msg: "allocating a Fluss writer for the producer: " + err.Error()}
			}
			ps.install(b.ProducerID, key, &partState{epoch: b.Epoch, writer: w, routed: true, nextPiece: map[Target]int32{}})
		case needWriter:
			if err := ps.ensureWriter(ctx, writerKey{b.ProducerID, b.Epoch}); err != nil {
				return Verdict{Code: kerr.RequestTimedOut.Code, Msg: "allocating a Fluss writer for the producer: " + err.Error()}
			}
		case needAnchor:
			st, v := ps.anchorNew(ctx, key, tbl, b, n.writer)
			if st == nil {
				return v
			}
			ps.install(b.ProducerID, key, st)
		case needRebuild:
			st, err := ps.rebuild(ctx, tbl, n.anchorKey, n.anchor)
			switch {
			case errors.Is(err, errAnchorUnusable):
				// The log does not say where the writer stands: forget the
				// anchor and treat the batch as one without state.
				ps.log.Warn("idempotence: anchor cannot be used, the producer starts over", "producer_id", b.ProducerID,
					"topic", key.topic, "partition", key.partition, "err", err)
				if err := ps.store.remove(n.anchorKey); err != nil {
					return Verdict{Code: kerr.KafkaStorageError.Code, Msg: "idempotence state: " + err.Error()}
				}
			case err != nil:
				return verdictForLogError("rebuilding the producer's sequences from the log", err)
			default:
				ps.install(b.ProducerID, key, st)
			}
		}
	}
}

// need is what decide lacks before it can answer.
type need struct {
	kind      needKind
	writer    int64     // needAnchor
	anchorKey anchorKey // needRebuild
	anchor    anchor    // needRebuild
}

type needKind int

const (
	needNothing needKind = iota
	// needWriter: the batch starts new partition state, but the writer of
	// its epoch is not known yet.
	needWriter
	// needAnchor: new partition state on writer; its anchor must be
	// written before the first batch is sent.
	needAnchor
	// needRebuild: no state in memory, but an anchor of the batch's epoch.
	needRebuild
	// needRoutedWriter: the batch starts new state of a routed partition,
	// which needs a writer of its own.
	needRoutedWriter
)

// decide applies Kafka's sequence rules.
func (ps *States) decide(key partitionKey, tbl Table, b Batch, targets []Target) (Verdict, need) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.producerLocked(b.ProducerID)
	st := p.parts[key]
	routed := targets != nil
	if st != nil && st.routed != routed {
		// The topic now maps to a table of the other kind (recreated):
		// the old state says nothing about the new table's writers.
		delete(p.parts, key)
		st = nil
	}
	if st == nil && ps.store != nil && !routed {
		ak := anchorKey{b.ProducerID, key.topic, key.partition}
		// An anchor of another table id is of a dropped table: not ours.
		if a, ok := ps.store.get(ak); ok && a.TableID == tbl.ID {
			switch {
			case a.Epoch == b.Epoch:
				return Verdict{}, need{kind: needRebuild, anchorKey: ak, anchor: a}
			case a.Epoch > b.Epoch:
				return Verdict{Code: kerr.InvalidProducerEpoch.Code, Msg: fmt.Sprintf(
					"producer %d: epoch %d is older than the partition's current epoch %d", b.ProducerID, b.Epoch, a.Epoch)}, need{}
			}
		}
	}
	switch {
	case st == nil || b.Epoch > st.epoch:
		if b.FirstSeq != 0 {
			if st == nil {
				return Verdict{Code: kerr.UnknownProducerID.Code, Msg: fmt.Sprintf(
					"no state for producer %d on this partition (expired, or the frontdoor restarted); sequence %d cannot be continued",
					b.ProducerID, b.FirstSeq)}, need{}
			}
			return Verdict{Code: kerr.OutOfOrderSequenceNumber.Code, Msg: fmt.Sprintf(
				"producer %d: new epoch %d must start at sequence 0, got %d", b.ProducerID, b.Epoch, b.FirstSeq)}, need{}
		}
		if routed {
			return Verdict{}, need{kind: needRoutedWriter}
		}
		w, ok := p.writers[b.Epoch]
		if !ok {
			return Verdict{}, need{kind: needWriter}
		}
		if ps.store != nil {
			return Verdict{}, need{kind: needAnchor, writer: w}
		}
		st = &partState{epoch: b.Epoch, writer: w}
		p.parts[key] = st
		// An older epoch's writer is not used again by this partition;
		// once no partition uses it, forget it (a new writer would be
		// allocated should that epoch come back, which is refused anyway).
		ps.forgetUnusedWritersLocked(p)
	case b.Epoch < st.epoch:
		return Verdict{Code: kerr.InvalidProducerEpoch.Code, Msg: fmt.Sprintf(
			"producer %d: epoch %d is older than the partition's current epoch %d", b.ProducerID, b.Epoch, st.epoch)}, need{}
	}
	for _, e := range st.recent {
		if e.firstSeq == b.FirstSeq && e.lastSeq == b.LastSeq {
			if e.baseOffset >= 0 {
				return Verdict{Answered: true, BaseOffset: e.baseOffset}, need{}
			}
			if !slices.Equal(e.targets, targets) {
				// Only a changed table (bucket count, partition rules) splits
				// the same batch differently; its pieces cannot be matched.
				return Verdict{Code: kerr.UnknownServerError.Code, Msg: fmt.Sprintf(
					"producer %d: the retried batch at sequence %d now splits into other buckets than its first attempt", b.ProducerID, b.FirstSeq)}, need{}
			}
			p.inFlight++
			e.sending++
			return Verdict{Writer: e.writer, FlussSeq: e.flussSeq, PieceSeqs: e.pieceSeqs, entry: e, Resend: true}, need{}
		}
	}
	if b.FirstSeq != st.nextKafka {
		return Verdict{Code: kerr.OutOfOrderSequenceNumber.Code, Msg: fmt.Sprintf(
			"producer %d epoch %d: sequence %d, expected %d", b.ProducerID, b.Epoch, b.FirstSeq, st.nextKafka)}, need{}
	}
	e := &seqEntry{owner: p, part: st, firstSeq: b.FirstSeq, lastSeq: b.LastSeq, writer: st.writer, flussSeq: st.nextFluss, baseOffset: -1, sending: 1}
	st.nextKafka = nextSeq(b.LastSeq)
	if routed {
		e.flussSeq = -1
		e.targets = targets
		e.pieceSeqs = make([]int32, len(targets))
		for i, t := range targets {
			e.pieceSeqs[i] = st.nextPiece[t]
			st.nextPiece[t] = nextSeq(e.pieceSeqs[i])
		}
	} else {
		st.nextFluss = nextSeq(st.nextFluss)
	}
	if len(st.recent) == recentBatches {
		copy(st.recent, st.recent[1:])
		st.recent = st.recent[:recentBatches-1]
	}
	st.recent = append(st.recent, e)
	p.inFlight++
	return Verdict{Writer: e.writer, FlussSeq: e.flussSeq, PieceSeqs: e.pieceSeqs, entry: e}, need{}
}

// install makes st the state of (producer, key), unless the partition
// already has state of the same or a newer epoch.
func (ps *States) install(producerID int64, key partitionKey, st *partState) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.producerLocked(producerID)
	if cur := p.parts[key]; cur != nil && cur.epoch >= st.epoch {
		return
	}
	for _, e := range st.recent {
		e.owner, e.part = p, st
	}
	p.parts[key] = st
	ps.forgetUnusedWritersLocked(p)
}

// nextSeq is the sequence after s; both Kafka and Fluss wrap to 0 after
// MaxInt32.
func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

func (ps *States) forgetUnusedWritersLocked(p *producerState) {
	lowest := int16(math.MaxInt16)
	for _, st := range p.parts {
		lowest = min(lowest, st.epoch)
	}
	for epoch := range p.writers {
		if epoch < lowest {
			delete(p.writers, epoch)
		}
	}
}

// ensureWriter allocates the Fluss writer of (producer, epoch) once, also
// when many partitions ask at the same time.
func (ps *States) ensureWriter(ctx context.Context, k writerKey) error {
	ps.mu.Lock()
	if p := ps.producers[k.producerID]; p != nil {
		if _, ok := p.writers[k.epoch]; ok {
			ps.mu.Unlock()
			return nil
		}
	}
	in := ps.inits[k]
	owner := in == nil
	if owner {
		in = &writerInit{done: make(chan struct{})}
		ps.inits[k] = in
	}
	ps.mu.Unlock()
	if !owner {
		select {
		case <-in.done:
			return in.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	in.id, in.err = ps.alloc(ctx)
	ps.mu.Lock()
	delete(ps.inits, k)
	if in.err == nil {
		p := ps.producerLocked(k.producerID)
		if _, ok := p.writers[k.epoch]; !ok {
			p.writers[k.epoch] = in.id
		}
	}
	ps.mu.Unlock()
	close(in.done)
	return in.err
}

// outcome is how an admitted batch ended.
type outcome int

const (
	// outcomeStored: Fluss acknowledged it (at baseOffset).
	outcomeStored outcome = iota
	// outcomeUnknown: it may or may not be stored (timeouts, broken
	// streams, errors after sending). The entry stays, so the client's
	// retry is resent with the same Fluss sequence and Fluss decides.
	outcomeUnknown
	// outcomeRejected: certainly not stored. The sequence goes back to
	// this batch, as the Kafka client reuses it or bumps the epoch.
	outcomeRejected
)

// finish records the outcome of an admitted batch.
func (ps *States) finish(e *seqEntry, o outcome, baseOffset int64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	e.owner.inFlight--
	e.sending--
	e.owner.lastUsed = ps.now()
	switch {
	case o == outcomeStored:
		e.baseOffset = baseOffset
		if ps.dirty != nil && !e.part.routed {
			ps.dirty[e.part] = struct{}{}
		}
	case o == outcomeRejected && e.baseOffset < 0 && e.sending == 0:
		// Rewinding is only sound when no copy of the batch is stored or
		// still on its way: otherwise the next batch would get a Fluss
		// sequence Fluss already holds and be dropped as its duplicate.
		st := e.part
		for i, r := range st.recent {
			if r == e {
				// This batch and every later one: their Fluss sequences
				// follow one that was not stored, so Fluss refuses them too.
				// Routed: each bucket goes back to the sequence of the
				// earliest dropped batch that wrote to it.
				for k := len(st.recent) - 1; k >= i; k-- {
					for j, t := range st.recent[k].targets {
						st.nextPiece[t] = st.recent[k].pieceSeqs[j]
					}
				}
				st.recent = st.recent[:i]
				st.nextKafka = e.firstSeq
				st.nextFluss = e.flussSeq
				break
			}
		}
	}
}
