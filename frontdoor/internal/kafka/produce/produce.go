package produce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
	"github.com/ferrygw/ferry/services/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Produce v3-v12: v3 is the Kafka 4 floor (KIP-896, record batch v2
// only); v13 (topic ids instead of names, Kafka 4.1) is not served, so
// clients stay on v12 and name topics.
//
// ApiVersions nevertheless lists Produce from v0, as Kafka 4.0 brokers do
// (KAFKA-18659):
// librdkafka only compresses with gzip, snappy or lz4 when the broker lists
// Produce v0 (it checks each codec against the Produce version that
// introduced it). A request below v3 still closes the connection.
const (
	ProduceMin           = 3
	ProduceMax           = 12
	ProduceAdvertisedMin = 0
)

// ProduceConfig tunes the produce path.
type ProduceConfig struct {
	// MaxMessageBytes caps one partition's record batch (Kafka's
	// message.max.bytes).
	MaxMessageBytes int
	// DefaultTimeout applies when a request carries no usable timeout
	// (acks=0 clients often send 0); MaxTimeout caps what clients ask.
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
}

// DefaultProduceConfig mirrors Kafka's defaults.
func DefaultProduceConfig() ProduceConfig {
	return ProduceConfig{MaxMessageBytes: 1048588, DefaultTimeout: 30 * time.Second, MaxTimeout: 5 * time.Minute}
}

// Validate names the first bad field.
func (c ProduceConfig) Validate() error {
	switch {
	case c.MaxMessageBytes < recordbatch.HeaderSize:
		return fmt.Errorf("produce config: MaxMessageBytes %d is below one batch header", c.MaxMessageBytes)
	case c.DefaultTimeout <= 0:
		return fmt.Errorf("produce config: DefaultTimeout %s must be positive", c.DefaultTimeout)
	case c.MaxTimeout < c.DefaultTimeout:
		return fmt.Errorf("produce config: MaxTimeout %s is below DefaultTimeout %s", c.MaxTimeout, c.DefaultTimeout)
	}
	return nil
}

type producer struct {
	cfg     ProduceConfig
	catalog *backends.Catalog
	tc      *backends.Transcoder
	ap      *backends.Appender
	seq     *Sequencer
	idem    *idempotence.States // nil: idempotent produce refused
	txns    *txn.Coordinator    // nil: transactional produce refused
	tracer  trace.Tracer
	metrics *kafka.ServerMetrics
}

func (p *producer) api() kafka.API {
	adv := int16(ProduceAdvertisedMin)
	return kafka.API{Key: kafka.ProduceKey, MinVersion: ProduceMin, MaxVersion: ProduceMax, AdvertisedMin: &adv, Serve: p.serve}
}

// partWork is one partition of a produce request on its way.
type partWork struct {
	topic   string
	out     *kmsg.ProduceResponseTopicPartition
	records []byte
	ticket  *Ticket
	// txnID is the request's transactional id; its batches are staged
	// (produce_txn.go).
	txnID *string
}

func (p *producer) serve(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	noResponse := r.Acks == 0

	// Request-wide refusals answer every partition with one code.
	var wide int16
	var wideMsg string
	switch {
	case r.Acks != 0 && r.Acks != 1 && r.Acks != -1:
		wide, wideMsg = kerr.InvalidRequiredAcks.Code, fmt.Sprintf("acks must be 0, 1 or -1; got %d", r.Acks)
		noResponse = false
	case r.TransactionID != nil && p.txns == nil:
		wide, wideMsg = kerr.TransactionalIDAuthorizationFailed.Code, "transactions are not served by this ferry (they need frontdoor -fetch-addr)"
	case r.TransactionID != nil && kafka.AuthorizeTransactionalID(ctx, s, acl.Write, *r.TransactionID) != nil:
		wide, wideMsg = kerr.TransactionalIDAuthorizationFailed.Code, "not authorized to use transactional id "+*r.TransactionID
	}

	if n := DedupeProduce(r); n > 0 {
		s.Log.Info("produce request carried duplicate partition entries; serving the last entry of each partition, as Kafka does",
			"dropped_entries", n)
	}

	var work []partWork
	mayWrite := s.MayDo(acl.Write)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(r.Topics))
	for i := range r.Topics {
		rt := &r.Topics[i]
		ot := &resp.Topics[i]
		*ot = kmsg.NewProduceResponseTopic()
		ot.Topic = rt.Topic
		ot.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		allowed := mayWrite(rt.Topic)
		if !allowed && wide == 0 {
			s.Refused(ctx, acl.Write, rt.Topic)
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			op := &ot.Partitions[j]
			*op = kmsg.NewProduceResponseTopicPartition()
			op.Partition = rp.Partition
			op.BaseOffset = -1
			switch {
			case wide != 0:
				setErr(op, wide, wideMsg)
			case !allowed:
				setErr(op, kerr.TopicAuthorizationFailed.Code, "not authorized to produce to topic "+rt.Topic)
			default:
				// Tickets are taken here, on the read loop, so the order
				// of appends is the order requests arrived in.
				work = append(work, partWork{topic: rt.Topic, out: op, records: rp.Records, ticket: p.seq.Take(rt.Topic, rp.Partition), txnID: r.TransactionID})
			}
		}
	}
	if len(work) == 0 {
		p.metrics.Produced(ctx, r, resp)
		if noResponse {
			if wide != 0 || len(r.Topics) > 0 {
				return kafka.Reply{}, fmt.Errorf("produce with acks=0 refused: %s", firstError(resp))
			}
			return kafka.Reply{NoResponse: true}, nil
		}
		return kafka.Ready(resp), nil
	}

	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = p.cfg.DefaultTimeout
	}
	timeout = min(timeout, p.cfg.MaxTimeout)
	acks := r.Acks
	log := s.Log
	return kafka.Reply{NoResponse: noResponse, Later: func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		names := make([]string, 0, len(r.Topics))
		seen := map[string]bool{}
		for _, w := range work {
			if !seen[w.topic] {
				seen[w.topic] = true
				names = append(names, w.topic)
			}
		}
		topics, err := p.catalog.Resolve(ctx, names)
		if err != nil {
			log.Warn("produce: catalog unavailable", "err", err)
		}
		// A bounded set of workers serves the partitions in request
		// order: a request's goroutines do not grow with its entries.
		// Each partition appears once per request (dedupeProduce), so a
		// worker only ever waits for tickets of earlier requests, which
		// their own workers release. This goroutine is one of them: a
		// request for one partition (what sticky partitioners send) starts
		// none and waits for no other.
		var wg sync.WaitGroup
		var next atomic.Int64
		serve := func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(work) {
					return
				}
				p.serveWork(ctx, &work[i], topics, acks, timeout, log)
			}
		}
		for range min(len(work), kafka.ProduceWorkers) - 1 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				serve()
			}()
		}
		serve()
		wg.Wait()
		p.metrics.Produced(ctx, r, resp)
		if noResponse {
			if msg := firstError(resp); msg != "" {
				return nil, errors.New("produce with acks=0 failed: " + msg)
			}
			return nil, nil
		}
		return resp, nil
	}}, nil
}

// serveWork serves one partition entry of a request whose topics were
// resolved, and logs why it was refused, if it was.
func (p *producer) serveWork(ctx context.Context, w *partWork, topics map[string]backends.Topic, acks int16, timeout time.Duration, log *slog.Logger) {
	t, ok := topics[w.topic]
	if !ok {
		// catalogsvc unreachable: retriable, the client retries after
		// refreshing metadata.
		w.ticket.Release()
		setErr(w.out, kerr.LeaderNotAvailable.Code, "topic catalog unavailable")
		return
	}
	p.producePartition(ctx, w, t, acks, timeout)
	if op := w.out; op.ErrorCode != 0 {
		msg := ""
		if op.ErrorMessage != nil {
			msg = *op.ErrorMessage
		}
		log.Debug("produce partition refused", "topic", w.topic, "partition", op.Partition,
			"error", kerr.ErrorForCode(op.ErrorCode).Error(), "message", msg)
	}
}

// producePartition takes one partition's batch through transcode and
// append and fills in its response. It always releases the ticket.
func (p *producer) producePartition(ctx context.Context, w *partWork, t backends.Topic, acks int16, timeout time.Duration) {
	defer w.ticket.Release()
	out := w.out
	ctx, span := p.tracer.Start(ctx, "frontdoor.produce_partition", trace.WithAttributes(
		attribute.String("messaging.destination.name", w.topic),
		attribute.Int("messaging.destination.partition.id", int(out.Partition)),
		attribute.Int("messaging.message.body.size", len(w.records)),
	))
	defer func() {
		if out.ErrorCode != 0 {
			span.SetStatus(codes.Error, kerr.ErrorForCode(out.ErrorCode).Error())
		}
		span.End()
	}()

	m := t.Mapping
	switch {
	case m == nil:
		code := t.ErrorCode
		if code == 0 {
			code = kerr.UnknownTopicOrPartition.Code
		}
		setErr(out, code, t.ErrorMsg)
		return
	case m.GetFlussPartition() != nil:
		// The topic of one Fluss partition is read-only: rows pick their
		// partition by their partition columns, through the table's topic.
		setErr(out, kerr.InvalidTopicException.Code, fmt.Sprintf("topic %s is Fluss partition %s of a partitioned table, for reading; produce to topic %s",
			w.topic, m.GetFlussPartition().GetName(), m.GetFlussPartition().GetTableTopic()))
		return
	case out.Partition < 0 || out.Partition >= m.GetPartitionCount():
		setErr(out, kerr.UnknownTopicOrPartition.Code,
			fmt.Sprintf("partition %d out of range: topic %s has %d partitions", out.Partition, w.topic, m.GetPartitionCount()))
		return
	}
	h, bad := CheckBatch(w.records, p.cfg.MaxMessageBytes)
	if bad != nil {
		setErr(out, bad.Code, bad.Msg)
		return
	}
	id := ProducerOf(&h)
	if bad := transactionalMismatch(w.txnID, &h); bad != nil {
		setErr(out, bad.Code, bad.Msg)
		return
	}
	if id.ProducerID >= 0 && p.idem == nil {
		setErr(out, kerr.ClusterAuthorizationFailed.Code,
			fmt.Sprintf("idempotent produce (producer id %d) is disabled in this ferry; disable idempotence in the producer", id.ProducerID))
		return
	}

	tr, err := p.tc.Transcode(ctx, m, out.Partition, w.records)
	if err != nil {
		setErr(out, kerr.RequestTimedOut.Code, "transcoding did not finish in time: "+err.Error())
		return
	}
	if f := tr.GetFailure(); f != nil {
		code := int16(f.GetErrorCode())
		if code == 0 {
			code = kerr.CorruptMessage.Code
		}
		setErr(out, code, f.GetErrorMessage())
		for _, re := range f.GetRecordErrors() {
			e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
			e.RelativeOffset = re.GetBatchIndex()
			msg := re.GetMessage()
			e.ErrorMessage = &msg
			out.ErrorRecords = append(out.ErrorRecords, e)
		}
		return
	}
	batch := tr.GetBatch()
	if w.txnID != nil {
		p.stage(ctx, w, m, id, batch, span)
		return
	}

	// Wait for earlier batches of this partition to be submitted, then
	// submit and pass the turn on at once; the answer is awaited after.
	if err := w.ticket.Wait(ctx); err != nil {
		setErr(out, kerr.RequestTimedOut.Code, "timed out waiting for earlier batches of the partition")
		return
	}
	writerID, batchSeq := int64(-1), int32(-1)
	var pieceSeqs []int32
	var targets []idempotence.Target
	if pieces := batch.GetPieces(); len(pieces) > 0 {
		targets = make([]idempotence.Target, len(pieces))
		for i, pc := range pieces {
			targets[i] = idempotence.Target{Partition: pc.GetPartitionName(), Bucket: pc.GetBucket()}
		}
	}
	var admitted *idempotence.Verdict
	resend := false
	if id.ProducerID >= 0 {
		// Sequence rules are applied here, in the partition's order.
		v := p.idem.Admit(ctx, w.topic, out.Partition, idempotence.Table{ID: m.GetTableId(), Database: m.GetDatabase(), Table: m.GetTable()}, id, targets)
		span.SetAttributes(attribute.Int64("ferry.producer_id", id.ProducerID), attribute.Int("ferry.producer_epoch", int(id.Epoch)),
			attribute.Int("ferry.base_sequence", int(id.FirstSeq)))
		switch {
		case v.Code != 0:
			setErr(out, v.Code, v.Msg)
			if v.Code == kerr.UnknownProducerID.Code {
				// The Java client retries UNKNOWN_PRODUCER_ID forever when
				// the log start offset is unknown (-1); with 0 it bumps its
				// epoch and starts the partition over at sequence 0.
				out.LogStartOffset = 0
			}
			return
		case v.Answered:
			// A retry of a batch Fluss already acknowledged: the original
			// offset, as a Kafka broker answers the last five batches.
			span.SetAttributes(attribute.Bool("ferry.duplicate", true))
			out.BaseOffset = v.BaseOffset
			return
		}
		admitted = &v
		writerID, batchSeq, pieceSeqs, resend = v.Writer, v.FlussSeq, v.PieceSeqs, v.Resend
		span.SetAttributes(attribute.Int64("fluss.writer_id", writerID), attribute.Int("fluss.batch_sequence", int(batchSeq)),
			attribute.Bool("ferry.resend", v.Resend))
	}
	areq := appendRequestOf(m, out.Partition, batch, int32(acks), remainingMillis(ctx, timeout), writerID, batchSeq, pieceSeqs)
	if targets != nil {
		span.SetAttributes(attribute.Int("ferry.pieces", len(targets)))
	}
	pending := p.ap.Submit(ctx, areq)
	w.ticket.Release()
	ar, err := pending.Wait(ctx)
	if err != nil {
		if admitted != nil {
			p.idem.Finish(*admitted, idempotence.Unknown, -1)
		}
		setErr(out, kerr.RequestTimedOut.Code, "append did not finish in time: "+err.Error())
		return
	}
	if kcode := int16(ar.GetKafkaErrorCode()); kcode != 0 || ar.GetErrorCode() != 0 {
		if ar.GetTableNotExist() {
			// Dropped, perhaps recreated: the next batch asks catalogsvc
			// for the table behind the topic now.
			p.catalog.MarkStale(w.topic, m.GetTableId())
		}
		possiblyStored := ar.GetPossiblyStored()
		if kcode == 0 {
			// An appendsvc older than this frontdoor sends only the Fluss
			// code, which says nothing about whether the batch is stored.
			kcode, possiblyStored = kerr.UnknownServerError.Code, true
			if admitted != nil {
				kcode = kerr.RequestTimedOut.Code
			}
		}
		if admitted != nil {
			p.idem.Finish(*admitted, idempotence.FailedOutcome(possiblyStored, ar.GetRetriable(), resend), -1)
		}
		msg := ar.GetErrorMessage()
		if fc := ar.GetErrorCode(); fc != 0 {
			msg = fmt.Sprintf("fluss error %d: %s", fc, msg)
		}
		setErr(out, kcode, msg)
		return
	}
	if admitted != nil {
		p.idem.Finish(*admitted, idempotence.Stored, ar.GetBaseOffset())
	}
	out.BaseOffset = ar.GetBaseOffset()
}

func setErr(op *kmsg.ProduceResponseTopicPartition, code int16, msg string) {
	op.ErrorCode = code
	op.BaseOffset = -1
	if msg != "" {
		op.ErrorMessage = &msg
	}
}

// firstError describes the first failed partition, "" if none failed.
func firstError(resp *kmsg.ProduceResponse) string {
	for _, t := range resp.Topics {
		for _, pt := range t.Partitions {
			if pt.ErrorCode != 0 {
				msg := ""
				if pt.ErrorMessage != nil {
					msg = ": " + *pt.ErrorMessage
				}
				return fmt.Sprintf("%s[%d] %s%s", t.Topic, pt.Partition, kerr.ErrorForCode(pt.ErrorCode), msg)
			}
		}
	}
	return ""
}

// remainingMillis is what is left of the request's timeout for appendsvc,
// at least 1 ms (0 would mean "use your default" to appendsvc).
func remainingMillis(ctx context.Context, fallback time.Duration) int32 {
	left := fallback
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	return int32(max(left.Milliseconds(), 1))
}

// appendRequestOf is the append of a transcoded batch to partition's
// bucket. appendsvc looks the table up by its path; the id tells it
// whether the path still names the table this mapping was made for.
// pieceSeqs (nil: none) are the Fluss sequences of a routed batch's pieces.
func appendRequestOf(m *catalogv1.TopicMapping, partition int32, batch *transcodev1.ArrowBatch, acks, timeoutMs int32,
	writerID int64, batchSeq int32, pieceSeqs []int32) *appendv1.AppendRequest {
	areq := &appendv1.AppendRequest{
		TableId:               m.GetTableId(),
		Database:              m.GetDatabase(),
		Table:                 m.GetTable(),
		BucketId:              partition,
		SchemaId:              m.GetSchemaId(),
		ArrowCompression:      m.GetArrowCompression(),
		ArrowCompressionLevel: m.GetArrowCompressionLevel(),
		ArrowIpc:              batch.GetArrowIpc(),
		LogRecords:            batch.GetLogRecords(),
		RecordCount:           batch.GetRecordCount(),
		Acks:                  acks,
		TimeoutMs:             timeoutMs,
		WriterId:              writerID,
		BatchSequence:         batchSeq,
	}
	if pieces := batch.GetPieces(); len(pieces) > 0 {
		areq.ArrowIpc, areq.LogRecords = nil, nil
		areq.Pieces = make([]*appendv1.AppendPiece, len(pieces))
		for i, pc := range pieces {
			seq := int32(-1)
			if pieceSeqs != nil {
				seq = pieceSeqs[i]
			}
			areq.Pieces[i] = &appendv1.AppendPiece{PartitionName: pc.GetPartitionName(), BucketId: pc.GetBucket(),
				ArrowIpc: pc.GetArrowIpc(), LogRecords: pc.GetLogRecords(), KvRecords: pc.GetKvRecords(), RecordCount: pc.GetRecordCount(), BatchSequence: seq}
		}
	}
	return areq
}
