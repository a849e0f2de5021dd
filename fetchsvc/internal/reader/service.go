// Package reader is fetchsvc's FetchService: it reads Fluss log buckets
// (FetchLog, ListOffsets) and serves them as Kafka record batches rebuilt
// per the topic's mapping (fetchsvc/rebuild), with Fluss's offsets.
package reader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ferrygw/ferry/fetchsvc/internal/groupoffsets"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/systable"
)

const instrumentation = "github.com/ferrygw/ferry/fetchsvc/internal/reader"

// Service implements ferry.fetch.v1.FetchService.
type Service struct {
	fetchv1.UnimplementedFetchServiceServer

	fluss  Fluss
	tables *tables
	log    *slog.Logger
	// pollMin and pollMax bound the pause between reads of a long poll.
	pollMin, pollMax time.Duration
	offsets          *groupoffsets.Store
	local            localStarts
	// refusedAt is when the refusal of each partitioned table's own topic
	// was last logged (topic -> time.Time).
	refusedAt sync.Map

	records metric.Int64Counter
	// compressors write the topics' compressed answers.
	compressors *compressors
	bytes       metric.Int64Counter
	errs        metric.Int64Counter
	duration    metric.Float64Histogram
}

// Config tunes the service.
type Config struct {
	// PollInterval is the longest pause between two reads of buckets a
	// consumer waits on (its max_wait_ms): a tailing consumer sees a new
	// record up to this much later. Pauses start at a tenth of it.
	PollInterval time.Duration
	// GroupOffsetsTable is the Fluss table ("database.table") consumer
	// groups' committed offsets are kept in; empty: groupoffsets.DefaultTable.
	GroupOffsetsTable string
	// Schemas is the registry whose schemas AVRO topics' values are
	// written in (GetTopicSchema); nil refuses to read those topics.
	Schemas schemav1.SchemaServiceClient
}

// DefaultPollInterval keeps a tailing consumer's added latency around
// 50 ms while an idle consumer costs 20 reads a second.
const DefaultPollInterval = 50 * time.Millisecond

// New returns the service over f; mp records what it serves.
func New(cfg Config, f Fluss, log *slog.Logger, mp metric.MeterProvider) (*Service, error) {
	if f == nil {
		return nil, errors.New("reader: nil Fluss")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.GroupOffsetsTable == "" {
		cfg.GroupOffsetsTable = groupoffsets.DefaultTable
	}
	offsets, err := groupoffsets.New(f, cfg.GroupOffsetsTable, systable.Options{Logger: log, MeterProvider: mp})
	if err != nil {
		return nil, err
	}
	meter := mp.Meter(instrumentation)
	s := &Service{fluss: f, tables: newTables(f, cfg.Schemas), compressors: newCompressors(2 * runtime.GOMAXPROCS(0)), log: log, pollMin: max(cfg.PollInterval/10, time.Millisecond), pollMax: cfg.PollInterval,
		offsets: offsets}
	if s.records, err = meter.Int64Counter("ferry.fetch.records", metric.WithUnit("{record}"),
		metric.WithDescription("Kafka records served to consumers, by topic")); err != nil {
		return nil, err
	}
	if s.bytes, err = meter.Int64Counter("ferry.fetch.bytes", metric.WithUnit("By"),
		metric.WithDescription("Kafka record batch bytes served to consumers, by topic")); err != nil {
		return nil, err
	}
	if s.errs, err = meter.Int64Counter("ferry.fetch.partition_errors", metric.WithUnit("{partition}"),
		metric.WithDescription("Partitions answered with a Kafka error, by error code")); err != nil {
		return nil, err
	}
	if s.duration, err = meter.Float64Histogram("ferry.fetch.duration", metric.WithUnit("s"),
		metric.WithDescription("Time to answer a Read, long-poll wait included")); err != nil {
		return nil, err
	}
	return s, nil
}

// OffsetsTable is the table groups' committed offsets are kept in, for
// the service to prepare at start.
func (s *Service) OffsetsTable() *systable.Table { return s.offsets.Table() }

// topicRead is one topic of a Read on its way through the service.
type topicRead struct {
	m       *catalogv1.TopicMapping
	info    *fluss.TableInfo
	out     *fetchv1.TopicRecords
	buckets []fluss.FetchBucket
	parts   []*fetchv1.PartitionRecords // line up with buckets
	results []fluss.FetchResult         // line up with buckets
	// kafkaMax is each partition's Kafka byte limit; the bucket reads ask
	// Fluss for about the log bytes that become that much.
	kafkaMax []int32
	err      error // the whole FetchLog call failed
	// maxBytes bounds the Fluss log bytes read (the request's max_bytes).
	maxBytes int32
}

// Read implements FetchService.
func (s *Service) Read(ctx context.Context, req *fetchv1.ReadRequest) (*fetchv1.ReadResponse, error) {
	start := time.Now()
	defer func() { s.duration.Record(ctx, time.Since(start).Seconds()) }()
	resp := &fetchv1.ReadResponse{}
	var reads []*topicRead
	for _, t := range req.GetTopics() {
		m := t.GetMapping()
		if m == nil || m.GetTopic() == "" {
			return nil, status.Error(codes.InvalidArgument, "a read topic has no mapping")
		}
		tr := &topicRead{m: m, out: &fetchv1.TopicRecords{Topic: m.GetTopic()}, maxBytes: req.GetMaxBytes()}
		resp.Topics = append(resp.Topics, tr.out)
		s.prepare(ctx, tr, t.GetPartitions())
		if len(tr.buckets) > 0 {
			reads = append(reads, tr)
		}
	}
	s.fetch(ctx, reads, req.GetMinBytes(), req.GetMaxWaitMs())
	budget := int(req.GetMaxBytes())
	if budget <= 0 {
		budget = defaultMaxBytes
	}
	served, records := s.answer(ctx, reads, budget)
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("ferry.records", records), attribute.Int("ferry.kafka_bytes", served))
	return resp, nil
}

// defaultMaxBytes is Kafka's fetch.max.bytes default, for a request
// without a limit.
const defaultMaxBytes = 50 << 20

// prepare resolves tr's table and turns the partitions asked for into
// bucket reads; partitions that cannot be read get their error at once.
func (s *Service) prepare(ctx context.Context, tr *topicRead, parts []*fetchv1.ReadPartition) {
	fail := func(p int32, e *kerr.Error, msg string) {
		tr.out.Partitions = append(tr.out.Partitions, &fetchv1.PartitionRecords{Partition: p, ErrorCode: int32(e.Code),
			ErrorMessage: msg, HighWatermark: -1, LogStartOffset: -1})
		s.errs.Add(ctx, 1, metric.WithAttributes(attribute.Int("kafka.error_code", int(e.Code))))
	}
	if msg := partitionedTableTopic(tr.m); msg != "" {
		for _, p := range parts {
			fail(p.GetPartition(), kerr.InvalidRequest, msg)
		}
		s.logRefusedTable(tr.m.GetTopic())
		return
	}
	pid := flussPartitionID(tr.m)
	info, err := s.tables.table(ctx, tr.m)
	if err != nil {
		ke := kafkaError(err)
		s.log.Warn("fetch: table lookup failed", "topic", tr.m.GetTopic(), "error", err, "kafka_error", ke.Message)
		for _, p := range parts {
			fail(p.GetPartition(), ke, err.Error())
		}
		return
	}
	tr.info = info
	for _, p := range parts {
		if p.GetPartition() < 0 || p.GetPartition() >= tr.m.GetPartitionCount() {
			fail(p.GetPartition(), kerr.UnknownTopicOrPartition, "no such partition")
			continue
		}
		if p.GetFetchOffset() < 0 {
			fail(p.GetPartition(), kerr.OffsetOutOfRange, "negative fetch offset")
			continue
		}
		pr := &fetchv1.PartitionRecords{Partition: p.GetPartition(), HighWatermark: -1, LogStartOffset: -1}
		tr.out.Partitions = append(tr.out.Partitions, pr)
		tr.parts = append(tr.parts, pr)
		tr.kafkaMax = append(tr.kafkaMax, p.GetMaxBytes())
		tr.buckets = append(tr.buckets, fluss.FetchBucket{PartitionID: pid, Bucket: p.GetPartition(), Offset: p.GetFetchOffset(),
			MaxBytes: s.tables.logBytesFor(info.TableID, p.GetMaxBytes())})
	}
}

// fetch reads every bucket of reads, waiting up to maxWaitMs for
// minBytes of log data. Fluss 0.9.1 does not end a waiting FetchLog when
// data arrives (it waits its whole max wait, the behaviour Fluss #3455
// fixes for followers), so the wait is done here: the buckets are read
// without a server-side wait, and read again after a pause that grows
// from pollMin to pollMax until there is data or the time is up.
func (s *Service) fetch(ctx context.Context, reads []*topicRead, minBytes, maxWaitMs int32) {
	if len(reads) == 0 {
		return
	}
	deadline := time.Now().Add(time.Duration(maxWaitMs) * time.Millisecond)
	pause := s.pollMin
	for polls := 1; ; polls++ {
		parallel(reads, func(tr *topicRead) { s.fetchTable(ctx, tr) })
		left := time.Until(deadline)
		if fetchedBytes(reads) >= int(max(minBytes, 1)) || failed(reads) || left <= 0 {
			trace.SpanFromContext(ctx).SetAttributes(attribute.Int("ferry.polls", polls))
			return
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, s.pollMax)
	}
}

// failed tells whether a read has an error to report at once.
func failed(reads []*topicRead) bool {
	for _, tr := range reads {
		if tr.err != nil {
			return true
		}
		for _, r := range tr.results {
			if r.Err != nil {
				return true
			}
		}
	}
	return false
}

func parallel(reads []*topicRead, fn func(*topicRead)) {
	if len(reads) == 1 {
		fn(reads[0])
		return
	}
	var wg sync.WaitGroup
	for _, tr := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(tr)
		}()
	}
	wg.Wait()
}

func fetchedBytes(reads []*topicRead) int {
	n := 0
	for _, tr := range reads {
		for _, r := range tr.results {
			n += len(r.Records)
		}
	}
	return n
}

func (s *Service) fetchTable(ctx context.Context, tr *topicRead) {
	tr.results, tr.err = s.fluss.FetchLog(ctx, tr.info.TableID, tr.buckets, fluss.FetchOptions{MaxBytes: tr.maxBytes})
}

// conversion is one partition's fetched log on its way to Kafka batches.
type conversion struct {
	tr    *topicRead
	i     int // position in tr.parts and tr.buckets
	limit int // Kafka bytes this partition may return
	c     converted
	err   error
}

// answer turns the fetched logs into the partitions' records: errors first,
// then the conversions, several partitions at a time (one fetch of several
// partitions uses every core), then the response's byte budget in request
// order (a partition that would pass it is left for the next fetch).
func (s *Service) answer(ctx context.Context, reads []*topicRead, budget int) (served, records int) {
	var work []*conversion
	for _, tr := range reads {
		for i, pr := range tr.parts {
			r, err := fluss.FetchResult{}, tr.err
			if err == nil {
				r = tr.results[i]
				err = r.Err
			}
			if err != nil {
				s.bucketFailed(ctx, tr, pr, err)
				continue
			}
			pr.HighWatermark, pr.LogStartOffset = r.HighWatermark, r.LogStartOffset
			if r.LogStartOffset >= 0 {
				pr.LogStartOffset = max(r.LogStartOffset, s.local.get(tr.info.TableID, flussPartitionID(tr.m), pr.Partition))
			}
			if len(r.Records) > 0 {
				limit := int(tr.kafkaMax[i])
				if limit <= 0 || limit > budget {
					limit = budget
				}
				work = append(work, &conversion{tr: tr, i: i, limit: limit})
			}
		}
	}
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range min(len(work), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := int(next.Add(1) - 1); n < len(work); n = int(next.Add(1) - 1) {
				w := work[n]
				plans := func(ctx context.Context, schemaID int16) (*schemaPlan, error) {
					return s.tables.plan(ctx, w.tr.m, w.tr.info, schemaID)
				}
				codec, err := codecOf(w.tr.m)
				if err != nil {
					w.err = err
					continue
				}
				comp, err := s.compressors.get(codec)
				if err != nil {
					w.err = err
					continue
				}
				w.c, w.err = convertLog(ctx, w.tr.results[w.i].Records, w.limit, s.tables.growthOf(w.tr.info.TableID), comp, plans)
				s.compressors.put(comp)
			}
		}()
	}
	wg.Wait()
	for _, w := range work {
		pr, topic := w.tr.parts[w.i], w.tr.m.GetTopic()
		if w.err != nil && w.c.batches == 0 {
			pr.ErrorCode, pr.ErrorMessage = int32(kerr.UnknownServerError.Code), w.err.Error()
			s.errs.Add(ctx, 1, metric.WithAttributes(attribute.Int("kafka.error_code", int(kerr.UnknownServerError.Code))))
			s.log.Error("fetch: log batch could not be served", "topic", topic, "partition", pr.Partition,
				"offset", w.tr.buckets[w.i].Offset, "error", w.err)
			continue
		}
		if w.err != nil {
			// Serve what converted; the next fetch starts at the batch that
			// failed and reports it.
			s.log.Warn("fetch: log batch could not be served", "topic", topic, "partition", pr.Partition, "error", w.err)
		}
		s.tables.observeGrowth(w.tr.info.TableID, w.c)
		if served > 0 && served+len(w.c.kafka) > budget {
			continue
		}
		pr.Records = w.c.kafka
		served += len(w.c.kafka)
		records += w.c.records
		attrs := metric.WithAttributes(attribute.String("kafka.topic", topic))
		s.records.Add(ctx, int64(w.c.records), attrs)
		s.bytes.Add(ctx, int64(len(w.c.kafka)), attrs)
	}
	return served, records
}

// bucketFailed answers a partition whose read failed.
func (s *Service) bucketFailed(ctx context.Context, tr *topicRead, pr *fetchv1.PartitionRecords, err error) {
	ke := kafkaError(err)
	if ke == kerr.UnknownTopicOrPartition {
		s.tables.forget(tr.info.TableID)
	}
	pr.ErrorCode, pr.ErrorMessage = int32(ke.Code), err.Error()
	s.errs.Add(ctx, 1, metric.WithAttributes(attribute.Int("kafka.error_code", int(ke.Code))))
	switch {
	case errors.Is(err, fluss.ErrRemoteLog):
		s.log.Info("fetch below the first local offset (tiered data is not read): offset out of range",
			"topic", tr.m.GetTopic(), "partition", pr.Partition, "error", err)
	case ke != kerr.OffsetOutOfRange:
		s.log.Warn("fetch: bucket read failed", "topic", tr.m.GetTopic(), "partition", pr.Partition, "error", err)
	}
}

// ListOffsets implements FetchService.
func (s *Service) ListOffsets(ctx context.Context, req *fetchv1.ListOffsetsRequest) (*fetchv1.ListOffsetsResponse, error) {
	m := req.GetMapping()
	if m == nil || m.GetTopic() == "" {
		return nil, status.Error(codes.InvalidArgument, "no mapping")
	}
	resp := &fetchv1.ListOffsetsResponse{}
	answers := make([]*fetchv1.OffsetAnswer, len(req.GetPartitions()))
	fail := func(i int, e *kerr.Error, msg string) {
		answers[i].ErrorCode, answers[i].ErrorMessage = int32(e.Code), msg
		answers[i].Offset, answers[i].Timestamp = -1, -1
	}
	// Queries by what they ask: earliest, latest, or one timestamp.
	groups := map[int64][]int{}
	for i, q := range req.GetPartitions() {
		answers[i] = &fetchv1.OffsetAnswer{Partition: q.GetPartition(), Timestamp: -1}
		switch {
		case q.GetPartition() < 0 || q.GetPartition() >= m.GetPartitionCount():
			fail(i, kerr.UnknownTopicOrPartition, "no such partition")
		case q.GetTimestamp() < timestampEarliest:
			fail(i, kerr.InvalidRequest, "only earliest (-2), latest (-1) and timestamps are served")
		default:
			groups[q.GetTimestamp()] = append(groups[q.GetTimestamp()], i)
		}
	}
	resp.Partitions = answers
	if len(groups) == 0 {
		return resp, nil
	}
	if msg := partitionedTableTopic(m); msg != "" {
		s.logRefusedTable(m.GetTopic())
		for _, idxs := range groups {
			for _, i := range idxs {
				fail(i, kerr.InvalidRequest, msg)
			}
		}
		return resp, nil
	}
	pid := flussPartitionID(m)
	info, err := s.tables.table(ctx, m)
	if err != nil {
		s.log.Warn("list offsets: table lookup failed", "topic", m.GetTopic(), "error", err)
		for _, idxs := range groups {
			for _, i := range idxs {
				fail(i, kafkaError(err), err.Error())
			}
		}
		return resp, nil
	}
	for ts, idxs := range groups {
		buckets := make([]int32, len(idxs))
		for n, i := range idxs {
			buckets[n] = answers[i].Partition
		}
		var offs map[int32]int64
		switch ts {
		case timestampEarliest:
			if offs, err = s.fluss.ListOffsets(ctx, info.TableID, pid, buckets, fluss.OffsetEarliest); err == nil {
				err = s.firstLocal(ctx, info.TableID, pid, offs)
			}
		case timestampLatest:
			offs, err = s.fluss.ListOffsets(ctx, info.TableID, pid, buckets, fluss.OffsetLatest)
		default:
			offs, err = s.fluss.OffsetsForTimestamp(ctx, info.TableID, pid, buckets, ts)
		}
		if ts >= 0 && fluss.CodeOf(err) == fluss.CodeInvalidTimestamp {
			// Fluss refuses a time after its clock; nothing was committed
			// then, which Kafka answers with offset -1.
			for _, i := range idxs {
				answers[i].Offset = -1
			}
			continue
		}
		for _, i := range idxs {
			off, ok := offs[answers[i].Partition]
			if !ok {
				e := err
				if e == nil {
					e = errors.New("no offset returned")
				}
				s.log.Warn("list offsets failed", "topic", m.GetTopic(), "partition", answers[i].Partition, "error", e)
				fail(i, kafkaError(e), e.Error())
				continue
			}
			answers[i].Offset = off
		}
		if ts >= 0 {
			s.commitTimes(ctx, info, pid, answers, idxs)
		}
	}
	return resp, nil
}

// partitionedTableTopic says why m cannot be read: the topic of a whole
// partitioned table, whose Kafka partitions would mix the logs of every
// Fluss partition. Each Fluss partition is a topic of its own
// (docs/mapping.md §4.5). Empty for every readable topic.
func partitionedTableTopic(m *catalogv1.TopicMapping) string {
	if len(m.GetPartitionKeys()) == 0 || m.GetFlussPartition() != nil {
		return ""
	}
	return fmt.Sprintf("topic %s is a partitioned table: read each Fluss partition as its topic %s.<partition values joined by '.'>, "+
		"e.g. by subscribing to the pattern %s (docs/mapping.md)", m.GetTopic(), m.GetTopic(), partitionTopicsPattern(m.GetTopic()))
}

// logRefusedTable logs that a partitioned table's own topic was refused,
// at most once a minute per topic: clients retry it several times a
// second.
func (s *Service) logRefusedTable(topic string) {
	now := time.Now()
	if last, ok := s.refusedAt.Load(topic); ok && now.Sub(last.(time.Time)) < time.Minute {
		return
	}
	s.refusedAt.Store(topic, now)
	s.log.Warn("read of a partitioned table's own topic refused: read its Fluss partitions' topics", "topic", topic,
		"pattern", partitionTopicsPattern(topic))
}

// partitionTopicsPattern is a regular expression matching the topics of
// every Fluss partition of the table whose topic is tableTopic.
func partitionTopicsPattern(tableTopic string) string {
	return "^" + regexp.QuoteMeta(tableTopic) + `\..+`
}

// flussPartitionID is the Fluss partition m reads, nil for a table
// without partitions.
func flussPartitionID(m *catalogv1.TopicMapping) *int64 {
	if p := m.GetFlussPartition(); p != nil {
		id := p.GetId()
		return &id
	}
	return nil
}

// Kafka's ListOffsets timestamps that ask for a position, not a time.
const (
	timestampLatest   = -1
	timestampEarliest = -2
)

// commitTimes completes timestamp answers the way Kafka answers them: the
// timestamp of the batch found, or offset and timestamp -1 when no batch
// was committed at or after the time asked for (Fluss then names the
// latest offset). A batch found in data tiered to remote storage is before
// the log's start for Kafka: the answer is the first local batch, as Kafka
// answers a time before its log start.
func (s *Service) commitTimes(ctx context.Context, info *fluss.TableInfo, pid *int64, answers []*fetchv1.OffsetAnswer, idxs []int) {
	for _, i := range idxs {
		a := answers[i]
		if a.ErrorCode != 0 {
			continue
		}
		// One byte is enough: the first batch is returned whole. A fetch
		// per bucket, because Fluss returns a whole batch beyond the byte
		// limit only for the first bucket of a request with data.
		read := func() (fluss.FetchResult, error) {
			results, err := s.fluss.FetchLog(ctx, info.TableID, []fluss.FetchBucket{{PartitionID: pid, Bucket: a.Partition, Offset: a.Offset, MaxBytes: 1}}, fluss.FetchOptions{})
			if err != nil {
				return fluss.FetchResult{}, err
			}
			return results[0], results[0].Err
		}
		r, err := read()
		if errors.Is(err, fluss.ErrRemoteLog) {
			offs := map[int32]int64{a.Partition: a.Offset}
			if err = s.firstLocal(ctx, info.TableID, pid, offs); err == nil {
				a.Offset = offs[a.Partition]
				r, err = read()
			}
		}
		if err != nil {
			s.log.Warn("list offsets: reading the batch found failed", "table", info.TableID, "bucket", a.Partition, "offset", a.Offset, "error", err)
			a.ErrorCode, a.ErrorMessage, a.Offset = int32(kafkaError(err).Code), err.Error(), -1
			continue
		}
		if a.Offset >= r.HighWatermark {
			a.Offset = -1
			continue
		}
		h, herr := logbatch.ParseHeader(r.Records)
		if herr != nil {
			s.log.Warn("list offsets: the batch found has no header", "table", info.TableID, "bucket", a.Partition, "offset", a.Offset, "error", herr)
			a.ErrorCode, a.ErrorMessage, a.Offset = int32(kerr.UnknownServerError.Code), herr.Error(), -1
			continue
		}
		a.Timestamp = h.CommitTimestamp
	}
}

// CommitOffsets implements FetchService.
func (s *Service) CommitOffsets(ctx context.Context, req *fetchv1.CommitOffsetsRequest) (*fetchv1.CommitOffsetsResponse, error) {
	if req.GetGroup() == "" {
		return nil, status.Error(codes.InvalidArgument, "no group")
	}
	if err := s.offsets.Commit(ctx, req.GetGroup(), req.GetOffsets()); err != nil {
		s.log.Warn("commit of group offsets failed", "group", req.GetGroup(), "error", err)
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &fetchv1.CommitOffsetsResponse{}, nil
}

// ListCommittedOffsets implements FetchService.
func (s *Service) ListCommittedOffsets(ctx context.Context, req *fetchv1.ListCommittedOffsetsRequest) (*fetchv1.ListCommittedOffsetsResponse, error) {
	if req.GetGroup() == "" {
		return nil, status.Error(codes.InvalidArgument, "no group")
	}
	offs, err := s.offsets.List(ctx, req.GetGroup())
	if err != nil {
		s.log.Warn("reading group offsets failed", "group", req.GetGroup(), "error", err)
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &fetchv1.ListCommittedOffsetsResponse{Offsets: offs}, nil
}

// DeleteCommittedOffsets implements FetchService.
func (s *Service) DeleteCommittedOffsets(ctx context.Context, req *fetchv1.DeleteCommittedOffsetsRequest) (*fetchv1.DeleteCommittedOffsetsResponse, error) {
	if req.GetGroup() == "" {
		return nil, status.Error(codes.InvalidArgument, "no group")
	}
	if err := s.offsets.Delete(ctx, req.GetGroup(), req.GetPartitions()); err != nil {
		s.log.Warn("delete of group offsets failed", "group", req.GetGroup(), "error", err)
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	s.log.Info("group offsets deleted", "group", req.GetGroup(), "partitions", len(req.GetPartitions()))
	return &fetchv1.DeleteCommittedOffsetsResponse{}, nil
}

// ListOffsetGroups implements FetchService.
func (s *Service) ListOffsetGroups(ctx context.Context, _ *fetchv1.ListOffsetGroupsRequest) (*fetchv1.ListOffsetGroupsResponse, error) {
	groups, err := s.offsets.Groups(ctx)
	if err != nil {
		s.log.Warn("listing groups with offsets failed", "error", err)
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &fetchv1.ListOffsetGroupsResponse{Groups: groups}, nil
}
