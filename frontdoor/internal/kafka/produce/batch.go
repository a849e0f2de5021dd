package produce

import (
	"errors"
	"fmt"
	"math"

	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/ferrygw/ferry/services/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
)

// CheckBatch does the checks a broker does on the frame of a produce
// payload before looking inside (services/recordbatch, shared with
// transcodesvc), within frontdoor's size limit. The CRC and the records
// themselves are checked by transcodesvc.
func CheckBatch(b []byte, maxBytes int) (recordbatch.Header, *recordbatch.Error) {
	if len(b) > maxBytes {
		return recordbatch.Header{}, &recordbatch.Error{Code: kerr.MessageTooLarge.Code,
			Msg: fmt.Sprintf("record batch of %d bytes exceeds the limit of %d bytes", len(b), maxBytes)}
	}
	h, err := recordbatch.ParseHeader(b)
	if err == nil {
		return h, nil
	}
	var bad *recordbatch.Error
	if !errors.As(err, &bad) {
		bad = &recordbatch.Error{Code: kerr.CorruptMessage.Code, Msg: err.Error()}
	}
	return h, bad
}

// ProducerOf reads the producer fields of a header checkBatch accepted.
// The last sequence wraps past MaxInt32 as Kafka's does.
func ProducerOf(h *recordbatch.Header) idempotence.Batch {
	id := idempotence.Batch{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, FirstSeq: h.BaseSequence}
	if delta := h.LastOffsetDelta; id.FirstSeq > math.MaxInt32-delta {
		id.LastSeq = delta - (math.MaxInt32 - id.FirstSeq) - 1
	} else {
		id.LastSeq = id.FirstSeq + delta
	}
	return id
}
