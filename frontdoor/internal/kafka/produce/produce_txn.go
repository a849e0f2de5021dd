package produce

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/recordbatch"
)

// Transactional produce: a batch of a request with a transactional id is
// transcoded like any other (a bad record fails now, not at commit) and
// then staged with the transaction's coordinator instead of appended
// (docs/transactions.md). Its answer has base offset -1: the batch has no
// offset until the transaction commits.

// transactionalMismatch refuses a batch whose transactional bit does not
// match the request: transactional records need a transactional id (what
// a broker answers), and a transactional request carries only
// transactional batches of a producer.
func transactionalMismatch(txnID *string, h *recordbatch.Header) *recordbatch.Error {
	switch {
	case txnID == nil && h.Transactional():
		return &recordbatch.Error{Code: kerr.TransactionalIDAuthorizationFailed.Code,
			Msg: "transactional batch in a produce request without a transactional id"}
	case txnID != nil && (!h.Transactional() || h.ProducerID < 0):
		return &recordbatch.Error{Code: kerr.InvalidRecord.Code,
			Msg: "a produce request with a transactional id must carry transactional batches with a producer id"}
	}
	return nil
}

// stage hands a transcoded batch to the transaction coordinator, in the
// partition's order, and fills in the answer. It releases the ticket.
func (p *producer) stage(ctx context.Context, w *partWork, m *catalogv1.TopicMapping, id idempotence.Batch, batch *transcodev1.ArrowBatch, span trace.Span) {
	out := w.out
	span.SetAttributes(attribute.String("ferry.transactional_id", *w.txnID), attribute.Int64("ferry.producer_id", id.ProducerID),
		attribute.Int("ferry.producer_epoch", int(id.Epoch)), attribute.Int("ferry.base_sequence", int(id.FirstSeq)),
		attribute.Bool("ferry.staged", true))
	if err := w.ticket.Wait(ctx); err != nil {
		setErr(out, kerr.RequestTimedOut.Code, "timed out waiting for earlier batches of the partition")
		return
	}
	defer w.ticket.Release()
	// Applied with acks=all whatever the producer asked: the commit is
	// answered only once every batch is replicated.
	areq := appendRequestOf(m, out.Partition, batch, -1, 0, -1, -1, nil)
	size := int64(len(batch.GetArrowIpc()) + len(batch.GetLogRecords()))
	for _, pc := range batch.GetPieces() {
		size += int64(len(pc.GetArrowIpc()) + len(pc.GetLogRecords()) + len(pc.GetKvRecords()))
	}
	res := p.txns.Stage(*w.txnID, id.ProducerID, id.Epoch, &txn.Staged{
		TopicPartition: txn.TopicPartition{Topic: w.topic, Partition: out.Partition},
		FirstSeq:       id.FirstSeq, LastSeq: id.LastSeq, Append: areq, Bytes: size})
	switch {
	case res.Err != nil:
		setErr(out, res.Err.Code, res.Msg)
		return
	case res.Duplicate:
		span.SetAttributes(attribute.Bool("ferry.duplicate", true))
	}
	out.BaseOffset = -1
	span.AddEvent(fmt.Sprintf("staged %d bytes", size))
}
