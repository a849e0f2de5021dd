package consume

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/fetchsession"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// Fetch v4-v12: record batch v2 and topic names (v13 addresses topics by
// id). librdkafka enables record batch v2 only when the broker lists
// Produce v3 and Fetch v4, and zstd only with Produce v7 and Fetch v10
// (rdkafka_feature.c), so Fetch is listed even when no fetchsvc is
// configured; a Fetch then closes the connection with a log line.
const (
	FetchKey int16 = 1
	FetchMin       = 4
	FetchMax       = 12
)

// maxFetchBytes caps a Fetch's max_bytes: the records of one answer are
// held in frontdoor and cross gRPC in one message.
const maxFetchBytes = 16 << 20

// fetchGrace is how long a Fetch may take beyond its max_wait_ms before
// its partitions are answered as unavailable.
const fetchGrace = 30 * time.Second

var errFetchNotServed = errors.New("fetch is not served: no fetchsvc is configured (frontdoor -fetch-addr)")

type fetchHandler struct {
	catalog  *backends.Catalog
	fetcher  *backends.Fetcher // nil: Fetch is not served
	sessions *fetchsession.Cache
	// fetches counts Fetch requests by session kind, for metrics.
	fetches [fetchsession.Refused + 1]atomic.Int64
}

func (h *fetchHandler) api() kafka.API {
	return kafka.API{Key: FetchKey, MinVersion: FetchMin, MaxVersion: FetchMax, Serve: h.serve}
}

func (h *fetchHandler) serve(ctx context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	if h.fetcher == nil {
		return kafka.Reply{}, errFetchNotServed
	}
	r := req.Body.(*kmsg.FetchRequest)
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	// An incremental fetch (KIP-227) becomes a full one of its session's
	// partitions here; the session drops the unchanged ones from the answer.
	session := h.sessions.Begin(r)
	h.fetches[session.Kind].Add(1)
	if session.Kind == fetchsession.Refused {
		s.Log.Info("fetch session refused", "session", r.SessionID, "epoch", r.SessionEpoch,
			"error", kerr.ErrorForCode(session.ErrorCode).Error())
		session.Finish(r, resp)
		return kafka.Ready(resp), nil
	}
	log := s.Log
	names, denied := kafka.AuthorizeTopics(ctx, s, acl.Read, r.Topics, func(t kmsg.FetchRequestTopic) string { return t.Topic })
	wait := time.Duration(max(r.MaxWaitMillis, 0)) * time.Millisecond
	read := func(ctx context.Context) (*kmsg.FetchResponse, error) {
		ctx, cancel := context.WithTimeout(ctx, wait+fetchGrace)
		defer cancel()
		topics, err := h.catalog.Resolve(ctx, names)
		if err != nil {
			log.Warn("fetch: catalog unavailable", "err", err)
		}
		read := &fetchv1.ReadRequest{MaxWaitMs: max(r.MaxWaitMillis, 0), MinBytes: r.MinBytes, MaxBytes: min(max(r.MaxBytes, 1), maxFetchBytes)}
		// Where each asked partition's answer goes: (topic, partition)
		// entries in request order; those not read are answered now.
		type slot struct{ t, p int }
		reading := map[string]map[int32]slot{}
		resp.Topics = make([]kmsg.FetchResponseTopic, len(r.Topics))
		for i, rt := range r.Topics {
			ot := &resp.Topics[i]
			*ot = kmsg.NewFetchResponseTopic()
			ot.Topic = rt.Topic
			ot.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
			var rtopic *fetchv1.ReadTopic
			t, known := topics[rt.Topic]
			for j, rp := range rt.Partitions {
				op := &ot.Partitions[j]
				*op = kmsg.NewFetchResponseTopicPartition()
				op.Partition, op.HighWatermark, op.LastStableOffset, op.LogStartOffset = rp.Partition, -1, -1, -1
				// Empty, not null: Kafka sends length 0 for a partition
				// without records; librdkafka and kafka-python fail on -1.
				op.RecordBatches = []byte{}
				switch {
				case denied[rt.Topic]:
					op.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case !known:
					// catalogsvc unreachable: retriable after a metadata refresh.
					op.ErrorCode = kerr.NotLeaderForPartition.Code
				case t.Mapping == nil:
					op.ErrorCode = orCode(t.ErrorCode, kerr.UnknownTopicOrPartition.Code)
				case kafka.CheckLeaderEpoch(rp.CurrentLeaderEpoch) != 0:
					op.ErrorCode = kafka.CheckLeaderEpoch(rp.CurrentLeaderEpoch)
				case r.Version < 10 && t.Mapping.GetFetchCompression() == catalogv1.FetchCompression_FETCH_COMPRESSION_ZSTD:
					// As a broker answers a client too old for zstd (KIP-110).
					op.ErrorCode = kerr.UnsupportedCompressionType.Code
				default:
					if reading[rt.Topic] == nil {
						reading[rt.Topic] = map[int32]slot{}
					}
					if _, dup := reading[rt.Topic][rp.Partition]; dup {
						op.ErrorCode = kerr.InvalidRequest.Code // a partition named twice
						continue
					}
					reading[rt.Topic][rp.Partition] = slot{i, j}
					if rtopic == nil {
						rtopic = &fetchv1.ReadTopic{Mapping: t.Mapping}
						read.Topics = append(read.Topics, rtopic)
					}
					rtopic.Partitions = append(rtopic.Partitions, &fetchv1.ReadPartition{
						Partition: rp.Partition, FetchOffset: rp.FetchOffset, MaxBytes: rp.PartitionMaxBytes})
				}
			}
		}
		if len(read.Topics) == 0 {
			if wait > 0 && len(r.Topics) == 0 {
				// An empty fetch is a client waiting for nothing: hold it
				// as a broker would, so it does not spin.
				sleep(ctx, wait)
			}
			return resp, nil
		}
		got, err := h.fetcher.Read(ctx, read)
		if err != nil {
			log.Warn("fetch: fetchsvc failed", "err", err)
			code := kerr.NotLeaderForPartition.Code
			if status.Code(err) == codes.InvalidArgument {
				code = kerr.UnknownServerError.Code
			}
			for _, parts := range reading {
				for _, sl := range parts {
					resp.Topics[sl.t].Partitions[sl.p].ErrorCode = code
				}
			}
			return resp, nil
		}
		for _, gt := range got.GetTopics() {
			for _, gp := range gt.GetPartitions() {
				sl, ok := reading[gt.GetTopic()][gp.GetPartition()]
				if !ok {
					return nil, fmt.Errorf("fetch: fetchsvc answered partition %d of %q, which was not asked for", gp.GetPartition(), gt.GetTopic())
				}
				op := &resp.Topics[sl.t].Partitions[sl.p]
				op.ErrorCode = int16(gp.GetErrorCode())
				op.HighWatermark, op.LastStableOffset = gp.GetHighWatermark(), gp.GetHighWatermark()
				op.LogStartOffset = gp.GetLogStartOffset()
				if recs := gp.GetRecords(); len(recs) > 0 {
					op.RecordBatches = recs
				}
				forgetGoneTable(h.catalog, gt.GetTopic(), topics[gt.GetTopic()].Mapping, gp.GetPartition(), op.ErrorCode)
				if op.ErrorCode != 0 && op.ErrorCode != kerr.OffsetOutOfRange.Code {
					log.Info("fetch partition failed", "topic", gt.GetTopic(), "partition", gp.GetPartition(),
						"error", kerr.ErrorForCode(op.ErrorCode).Error(), "message", gp.GetErrorMessage())
				}
			}
		}
		return resp, nil
	}
	return kafka.Reply{Later: func(ctx context.Context) (kmsg.Response, error) {
		resp, err := read(ctx)
		session.Finish(r, resp)
		if err != nil {
			return nil, err
		}
		return resp, nil
	}}, nil
}

// orCode is code, or fallback when code is 0.
func orCode(code, fallback int16) int16 {
	if code == 0 {
		return fallback
	}
	return code
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
