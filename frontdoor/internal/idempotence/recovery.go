package idempotence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
)

// WriterLog reads back what Fluss writers stored: appendsvc's
// GetLatestOffset and ListWriterBatches (*backends.Appender).
type WriterLog interface {
	LatestOffset(ctx context.Context, b *appendv1.BucketRef) (int64, error)
	ListWriterBatches(ctx context.Context, req *appendv1.ListWriterBatchesRequest) (*appendv1.ListWriterBatchesResponse, error)
}

// anchorEvery is how often anchors of states that moved are written.
const anchorEvery = time.Second

// errAnchorUnusable: the log does not continue the anchor (its data was
// deleted, or it holds other sequences than the anchor says).
var errAnchorUnusable = errors.New("idempotence: the log does not continue the anchor")

// persist makes ps keep anchors in store and rebuild lost state through
// wlog. Call before the first admit; stopPersisting ends it.
func (ps *States) persist(store *anchorStore, wlog WriterLog, log *slog.Logger) {
	ps.store, ps.wlog, ps.log = store, wlog, log
	ps.dirty = map[*partState]struct{}{}
	ps.stop, ps.loopDone = make(chan struct{}), make(chan struct{})
	go ps.anchorLoop()
}

func (ps *States) anchorLoop() {
	defer close(ps.loopDone)
	t := time.NewTicker(anchorEvery)
	defer t.Stop()
	for {
		select {
		case <-ps.stop:
			return
		case <-t.C:
			if err := ps.flushAnchors(); err != nil {
				ps.log.Warn("idempotence: writing anchors failed", "err", err)
			}
		}
	}
}

// stopPersisting writes the anchors that moved and closes the store.
func (ps *States) stopPersisting() error { return ps.stopPersistingWith(true) }

// stopPersistingWith(false) closes the store without writing what moved
// since the last tick, as a crash leaves it (tests).
func (ps *States) stopPersistingWith(flush bool) error {
	if ps.store == nil {
		return nil
	}
	var err error
	ps.stopOnce.Do(func() {
		close(ps.stop)
		<-ps.loopDone
		if flush {
			err = ps.flushAnchors()
		}
		err = errors.Join(err, ps.store.close())
	})
	return err
}

// flushAnchors moves the anchors of states with newly acknowledged batches
// to the oldest of their last five batches, once that one is acknowledged,
// and drops the anchors of producers idle past the expiry.
func (ps *States) flushAnchors() error {
	if ps.store == nil {
		return nil
	}
	type moved struct {
		st  *partState
		off int64
	}
	now := ps.now()
	ps.mu.Lock()
	moves := map[anchorKey]anchor{}
	var done []moved
	for st := range ps.dirty {
		if len(st.recent) == 0 {
			continue
		}
		e := st.recent[0]
		if e.baseOffset < 0 || e.baseOffset <= st.saved {
			continue
		}
		moves[st.ak] = anchor{Epoch: st.epoch, Writer: st.writer, TableID: st.table.ID,
			FlussSeq: e.flussSeq, KafkaSeq: e.firstSeq, Offset: e.baseOffset, Time: now.UnixMilli()}
		done = append(done, moved{st, e.baseOffset})
	}
	clear(ps.dirty)
	var lastUsed map[int64]time.Time
	if now.Sub(ps.lastExpire) >= min(ps.cfg.ProducerIdleExpiry/10, time.Minute) {
		ps.lastExpire = now
		lastUsed = make(map[int64]time.Time, len(ps.producers))
		for id, p := range ps.producers {
			lastUsed[id] = p.lastUsed
			if p.inFlight > 0 {
				lastUsed[id] = now
			}
		}
	}
	ps.mu.Unlock()

	if err := ps.store.advance(moves); err != nil {
		return err
	}
	ps.mu.Lock()
	for _, m := range done {
		m.st.saved = max(m.st.saved, m.off)
	}
	ps.mu.Unlock()
	if lastUsed != nil {
		return ps.store.expire(now, ps.cfg.ProducerIdleExpiry, lastUsed)
	}
	return nil
}

// anchorNew writes the anchor of a new partition state on writer and
// returns the state; or nil and the answer for the batch.
func (ps *States) anchorNew(ctx context.Context, key partitionKey, tbl Table, b Batch, writer int64) (*partState, Verdict) {
	ak := anchorKey{b.ProducerID, key.topic, key.partition}
	off, err := ps.wlog.LatestOffset(ctx, tbl.bucket(key.partition))
	if status.Code(err) == codes.Unimplemented {
		// An appendsvc older than the read-back: produce goes on, with
		// this state in memory only.
		ps.warnUnimplemented.Do(func() {
			ps.log.Warn("idempotence: appendsvc cannot read logs back; producer state is kept in memory only", "err", err)
		})
		return &partState{epoch: b.Epoch, writer: writer, ak: ak, table: tbl}, Verdict{}
	}
	if err != nil {
		return nil, verdictForLogError("reading the partition's end offset", err)
	}
	a := anchor{Epoch: b.Epoch, Writer: writer, TableID: tbl.ID, Offset: off, Time: ps.now().UnixMilli()}
	if err := ps.store.put(ak, a); err != nil {
		ps.log.Error("idempotence: writing an anchor failed", "err", err)
		return nil, Verdict{Code: kerr.KafkaStorageError.Code, Msg: "idempotence state: " + err.Error()}
	}
	return &partState{epoch: b.Epoch, writer: writer, ak: ak, table: tbl, saved: off}, Verdict{}
}

// rebuild reads the writer's batches from the anchor on and returns the
// state they make: every batch the lost process got stored, with its
// offset, and the sequences after the last one.
func (ps *States) rebuild(ctx context.Context, tbl Table, ak anchorKey, a anchor) (*partState, error) {
	st := &partState{epoch: a.Epoch, writer: a.Writer, nextKafka: a.KafkaSeq, nextFluss: a.FlussSeq, ak: ak, table: tbl, saved: a.Offset}
	from := a.Offset
	found := 0
	for {
		resp, err := ps.wlog.ListWriterBatches(ctx, &appendv1.ListWriterBatchesRequest{
			Bucket: tbl.bucket(ak.partition), FromOffset: from, WriterId: a.Writer,
		})
		if err != nil {
			if c := status.Code(err); c == codes.OutOfRange || c == codes.Unimplemented {
				return nil, fmt.Errorf("%w: %v", errAnchorUnusable, err)
			}
			return nil, err
		}
		for _, wb := range resp.GetBatches() {
			if wb.GetBatchSequence() != st.nextFluss || wb.GetRecordCount() <= 0 {
				return nil, fmt.Errorf("%w: writer %d batch at offset %d has sequence %d and %d records, expected sequence %d",
					errAnchorUnusable, a.Writer, wb.GetBaseOffset(), wb.GetBatchSequence(), wb.GetRecordCount(), st.nextFluss)
			}
			last := addSeq(st.nextKafka, wb.GetRecordCount()-1)
			e := &seqEntry{firstSeq: st.nextKafka, lastSeq: last, writer: a.Writer, flussSeq: st.nextFluss, baseOffset: wb.GetBaseOffset()}
			if len(st.recent) == recentBatches {
				copy(st.recent, st.recent[1:])
				st.recent = st.recent[:recentBatches-1]
			}
			st.recent = append(st.recent, e)
			st.nextKafka, st.nextFluss = nextSeq(last), nextSeq(st.nextFluss)
			found++
		}
		next := resp.GetNextOffset()
		if next >= resp.GetHighWatermark() {
			break
		}
		if next <= from {
			return nil, fmt.Errorf("idempotence: reading the log made no progress at offset %d (high watermark %d)", from, resp.GetHighWatermark())
		}
		from = next
	}
	if found == 0 && a.FlussSeq != 0 {
		// The anchor's own batch was acknowledged at a.Offset; a log
		// without it lost data (or the anchor is wrong).
		return nil, fmt.Errorf("%w: writer %d has no batch from offset %d on", errAnchorUnusable, a.Writer, a.Offset)
	}
	ps.log.Info("idempotence: producer state rebuilt from the log", "producer_id", ak.producerID, "epoch", a.Epoch,
		"topic", ak.topic, "partition", ak.partition, "writer_id", a.Writer, "batches", found,
		"next_sequence", st.nextKafka, "next_fluss_sequence", st.nextFluss)
	return st, nil
}

// addSeq is s+n for sequences, which wrap to 0 after MaxInt32.
func addSeq(s, n int32) int32 {
	return int32((int64(s) + int64(n)) % (math.MaxInt32 + 1))
}

// verdictForLogError answers a batch whose state could not be read or
// anchored: a missing table as Kafka does (the client refreshes its
// metadata), anything else as retriable.
func verdictForLogError(what string, err error) Verdict {
	if status.Code(err) == codes.NotFound {
		return Verdict{Code: kerr.UnknownTopicOrPartition.Code, Msg: what + ": " + err.Error()}
	}
	return Verdict{Code: kerr.RequestTimedOut.Code, Msg: what + ": " + err.Error()}
}
