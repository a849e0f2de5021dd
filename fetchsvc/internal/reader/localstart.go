package reader

import (
	"context"
	"errors"
	"sync"

	"github.com/ferrygw/ferry/services/fluss"
)

// localStarts remembers, per bucket, the first offset of its log that is
// still local. Fluss moves old log segments to remote storage, which
// fetchsvc does not read (docs/limits.md), so for Kafka a log starts at its
// first local offset: ListOffsets(earliest) and a Fetch's log start offset
// say so, and a fetch below it gets OFFSET_OUT_OF_RANGE.
type localStarts struct {
	mu sync.Mutex
	m  map[bucketOf]int64
}

type bucketOf struct {
	table     int64
	partition int64 // the Fluss partition id, -1 for a table without partitions
	bucket    int32
}

func keyOf(table int64, pid *int64, bucket int32) bucketOf {
	k := bucketOf{table, -1, bucket}
	if pid != nil {
		k.partition = *pid
	}
	return k
}

// get is the bucket's first local offset as last found, 0 when never.
func (l *localStarts) get(table int64, pid *int64, bucket int32) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[keyOf(table, pid, bucket)]
}

func (l *localStarts) raise(table int64, pid *int64, bucket int32, off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[bucketOf]int64{}
	}
	k := keyOf(table, pid, bucket)
	l.m[k] = max(l.m[k], off)
}

// maxLocalProbes bounds the reads firstLocal makes: each read names every
// remote segment from its offset on, so two are usually enough.
const maxLocalProbes = 8

// firstLocal moves each bucket's offset in offs that lies in data Fluss
// has tiered to remote storage to the bucket's first local offset: a read
// there is answered with the remote segments instead of records, and the
// local log starts after their end (inclusive or not, so a read at the end
// that is still remote moves one further).
func (s *Service) firstLocal(ctx context.Context, table int64, pid *int64, offs map[int32]int64) error {
	pending := make([]int32, 0, len(offs))
	for b := range offs {
		pending = append(pending, b)
	}
	for range maxLocalProbes {
		if len(pending) == 0 {
			break
		}
		reads := make([]fluss.FetchBucket, len(pending))
		for i, b := range pending {
			// One byte: the first batch comes back whole, or the remote
			// segments instead.
			reads[i] = fluss.FetchBucket{PartitionID: pid, Bucket: b, Offset: offs[b], MaxBytes: 1}
		}
		results, err := s.fluss.FetchLog(ctx, table, reads, fluss.FetchOptions{})
		if err != nil {
			return err
		}
		pending = pending[:0]
		for i, r := range results {
			if !errors.Is(r.Err, fluss.ErrRemoteLog) {
				continue // local (or failing for another reason, which a fetch reports)
			}
			b := reads[i].Bucket
			offs[b] = max(r.RemoteEndOffset, offs[b]+1)
			pending = append(pending, b)
		}
	}
	for b, off := range offs {
		s.local.raise(table, pid, b, off)
	}
	return nil
}
