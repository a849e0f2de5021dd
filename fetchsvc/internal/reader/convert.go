package reader

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
)

// planFor gives the plan of a schema version of the table being converted.
type planFor func(ctx context.Context, schemaID int16) (*schemaPlan, error)

// converted is what one bucket's Fluss log bytes became.
type converted struct {
	kafka   []byte // Kafka record batches
	batches int
	records int // records in kafka (changelog update-befores are left out)
	// flussBytes are the Fluss log bytes converted into kafka.
	flussBytes int
}

// convertLog turns the Fluss log batches of data (one bucket's FetchLog
// records, which may end inside a batch) into Kafka record batches, one per
// Fluss batch (empty ones included) with the same offsets, until adding a batch would pass
// maxBytes; the first batch is converted whatever its size, so that a
// consumer always makes progress. A row of a changelog becomes a record
// (+I, +U, append-only) or a tombstone (-D); -U rows (the old value of an
// update) are gaps, as in a compacted topic, so offsets stay Fluss's.
//
// growth is the Kafka bytes per log byte expected (the table's last
// conversion's): the answer is allocated once for what data should become.
// comp writes each batch with the topic's fetch codec.
func convertLog(ctx context.Context, data []byte, maxBytes int, growth float64, comp *rebuild.Compressor, plans planFor) (converted, error) {
	var out converted
	out.kafka = make([]byte, 0, min(int(float64(len(data))*growth*1.1), maxBytes+maxBytes/8))
	var recs []rebuild.Record
	it := logbatch.NewIterator(data)
	for it.Next() {
		b := it.Batch()
		var err error
		before := len(out.kafka)
		recs = recs[:0]
		// A Fluss batch without records (a primary-key write that changed
		// nothing) still takes its offsets: it becomes a Kafka batch without
		// records, over which consumers step by its last offset delta, as
		// they do over Kafka's own empty batches.
		if b.RecordCount > 0 {
			if recs, err = rebuildBatch(ctx, b, plans, recs); err != nil {
				return out, fmt.Errorf("batch at offset %d: %w", b.BaseOffset, err)
			}
		}
		if out.kafka, err = comp.AppendBatch(out.kafka, b.BaseOffset, b.LastOffsetDelta, recs); err != nil {
			return out, fmt.Errorf("batch at offset %d: %w", b.BaseOffset, err)
		}
		if out.batches > 0 && len(out.kafka) > maxBytes {
			out.kafka = out.kafka[:before]
			break
		}
		out.batches++
		out.records += len(recs)
		out.flussBytes += len(b.Bytes)
	}
	if err := it.Err(); err != nil && !errors.Is(err, logbatch.ErrShortBatch) {
		return out, err
	}
	if out.batches == 0 && errors.Is(it.Err(), logbatch.ErrShortBatch) {
		// The first batch did not fit the Fluss read's byte limit: nothing
		// can be served, and asking again the same way would loop.
		return out, fmt.Errorf("the first log batch is larger than the %d bytes read: %w", len(data), it.Err())
	}
	return out, nil
}

// rebuildBatch turns the rows of one Fluss batch into records (reusing
// recs), each at its offset delta.
func rebuildBatch(ctx context.Context, b logbatch.Batch, plans planFor, recs []rebuild.Record) ([]rebuild.Record, error) {
	recs = recs[:0]
	p, err := plans(ctx, b.SchemaID)
	if err != nil {
		return recs, err
	}
	dec, err := p.decoder()
	if err != nil {
		return recs, err
	}
	rec, err := dec.Decode(b)
	p.decoders.Put(dec)
	if err != nil {
		return recs, err
	}
	defer rec.Release()
	for row := range int(rec.NumRows()) {
		change := logbatch.AppendOnly
		if !b.AppendOnly {
			change = logbatch.ChangeType(b.ChangeTypes[row])
		}
		if change == logbatch.UpdateBefore {
			continue
		}
		if len(recs) < cap(recs) {
			recs = recs[:len(recs)+1]
		} else {
			recs = append(recs, rebuild.Record{})
		}
		r := &recs[len(recs)-1]
		switch change {
		case logbatch.AppendOnly, logbatch.Insert, logbatch.UpdateAfter:
			err = p.rebuild.Rebuild(r, rec, row, b.CommitTimestamp)
		case logbatch.Delete:
			err = p.rebuild.RebuildDelete(r, rec, row, b.CommitTimestamp)
		default:
			err = fmt.Errorf("change type %d", change)
		}
		if err != nil {
			return recs, fmt.Errorf("row %d: %w", row, err)
		}
		r.OffsetDelta = int32(row)
	}
	return recs, nil
}
