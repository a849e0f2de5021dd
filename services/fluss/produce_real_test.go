package fluss

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// TestRealProduceRejectsGarbage sends bytes that are not a log batch: the
// request itself must be well-formed (the server answers per bucket), and
// the bucket must fail with a non-retriable corruption error.
func TestRealProduceRejectsGarbage(t *testing.T) {
	c := dialReal(t)
	db := tempDatabase(t, c)
	path := TablePath{db, "garbage"}
	info := CreateTestTable(t, c, path, TableDescriptor{Schema: types.Schema{Columns: []types.Column{
		col("v", types.DataType{Root: types.BigInt, Nullable: true})}}, NumBuckets: 2})
	batches := []BucketBatch{
		{Bucket: 0, Records: []byte("definitely not a fluss log batch, but long enough to have a header")},
		{Bucket: 1, Records: badCRCBatch()},
	}
	for _, acks := range []Acks{AcksNone, AcksLeader, AcksAll} {
		res := produceRetryingStale(t, c, info.TableID, acks, batches)
		if !errors.Is(res[0].Err, ErrInvalidRecords) || res[0].BaseOffset != -1 {
			t.Errorf("acks %d bucket 0: got offset %d err %v, want ErrInvalidRecords", acks, res[0].BaseOffset, res[0].Err)
		}
		if CodeOf(res[1].Err) != CodeCorruptRecord {
			t.Errorf("acks %d bucket 1: got offset %d err %v, want CORRUPT_RECORD", acks, res[1].BaseOffset, res[1].Err)
		}
	}
}

// produceRetryingStale calls ProduceLog until no bucket reports stale
// metadata: right after a table is created, its leader may briefly answer
// NOT_LEADER_OR_FOLLOWER.
func produceRetryingStale(t *testing.T, c *Client, tableID int64, acks Acks, batches []BucketBatch) []BucketResult {
	t.Helper()
	ctx := testCtx(t)
	for attempt := 0; ; attempt++ {
		res, err := c.ProduceLog(ctx, tableID, acks, 5*time.Second, batches)
		if err != nil {
			t.Fatalf("acks %d: ProduceLog: %v", acks, err)
		}
		stale := false
		for _, r := range res {
			var fe *Error
			stale = stale || (errors.As(r.Err, &fe) && fe.StaleMetadata())
		}
		if !stale || attempt == 50 {
			return res
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// badCRCBatch is a V1 log batch header (52 bytes, little-endian, no records)
// whose CRC is wrong.
func badCRCBatch() []byte {
	b := make([]byte, 52)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(b)-12)) // length after base offset + length
	b[12] = 1                                               // magic V1
	binary.LittleEndian.PutUint32(b[25:], 0xdeadbeef)       // crc
	return b
}
