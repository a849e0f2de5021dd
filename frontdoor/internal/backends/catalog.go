package backends

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/twmb/franz-go/pkg/kerr"
)

// CatalogConfig tunes the catalog client.
type CatalogConfig struct {
	// TTL is how long a resolved mapping is used without asking again.
	// Mapping changes (schema evolution) reach frontdoor within TTL.
	TTL time.Duration
	// NegativeTTL is how long "unknown topic" is remembered, so producers
	// retrying a missing topic do not hammer catalogsvc.
	NegativeTTL time.Duration
	// CallTimeout bounds each catalog RPC.
	CallTimeout time.Duration
	// Lease is the registration lease; heartbeats go out every Lease/3.
	Lease time.Duration
	// Self is this frontdoor as a Kafka broker.
	Self *catalogv1.Broker
}

// Validate names the first bad field.
func (c CatalogConfig) Validate() error {
	switch {
	case c.TTL <= 0:
		return fmt.Errorf("catalog config: TTL %s must be positive", c.TTL)
	case c.NegativeTTL < 0:
		return fmt.Errorf("catalog config: NegativeTTL %s must not be negative", c.NegativeTTL)
	case c.CallTimeout <= 0:
		return fmt.Errorf("catalog config: CallTimeout %s must be positive", c.CallTimeout)
	case c.Lease < 3*time.Second/10:
		return fmt.Errorf("catalog config: Lease %s is too short", c.Lease)
	case c.Self == nil:
		return errors.New("catalog config: Self is nil")
	case c.Self.Host == "" || c.Self.Port <= 0 || c.Self.Port > 65535:
		return fmt.Errorf("catalog config: Self %s:%d is not an address clients can reach", c.Self.Host, c.Self.Port)
	case c.Self.NodeId < 0:
		return fmt.Errorf("catalog config: Self.NodeId %d must not be negative", c.Self.NodeId)
	}
	return nil
}

// Topic is a resolved topic: its mapping, or the Kafka error why not.
type Topic struct {
	Mapping   *catalogv1.TopicMapping
	ErrorCode int16
	ErrorMsg  string
}

type cacheEntry struct {
	topic   Topic
	expires time.Time
}

type flight struct {
	done chan struct{}
	err  error
}

// Catalog asks catalogsvc and caches topic mappings.
type Catalog struct {
	cfg    CatalogConfig
	client catalogv1.CatalogServiceClient
	log    *slog.Logger
	now    func() time.Time

	mu        sync.Mutex
	cache     map[string]cacheEntry
	inflight  map[string]*flight
	stale     map[string]int64 // topic -> table id Fluss said is gone
	goneParts map[string]int64 // topic -> Fluss partition id a read found gone
	clusterID string
	// swept is the cache's size after the last sweep of expired entries.
	swept int

	hbCancel context.CancelFunc
	hbDone   chan struct{}
}

// NewCatalog returns a cache in front of client.
func NewCatalog(cfg CatalogConfig, client catalogv1.CatalogServiceClient, log *slog.Logger) (*Catalog, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Catalog{
		cfg: cfg, client: client, log: log.With("backend", "catalog"),
		now: time.Now, cache: map[string]cacheEntry{}, inflight: map[string]*flight{}, stale: map[string]int64{},
		goneParts: map[string]int64{},
	}, nil
}

// Self is this frontdoor as a broker.
func (c *Catalog) Self() *catalogv1.Broker { return c.cfg.Self }

// ClusterID is the last cluster id catalogsvc reported ("" before any).
func (c *Catalog) ClusterID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clusterID
}

// Resolve returns every named topic from the cache, asking catalogsvc in
// one call for those missing or expired. Concurrent callers share calls. An
// error means catalogsvc could not be asked; the result then holds what
// the cache still had.
func (c *Catalog) Resolve(ctx context.Context, names []string) (map[string]Topic, error) {
	out := make(map[string]Topic, len(names))
	for attempt := 0; ; attempt++ {
		var ask []string
		var wait []*flight
		var mine *flight
		now := c.now()
		c.mu.Lock()
		for _, n := range names {
			if _, done := out[n]; done {
				continue
			}
			if e, ok := c.cache[n]; ok && now.Before(e.expires) {
				out[n] = e.topic
				continue
			}
			if f := c.inflight[n]; f != nil {
				wait = append(wait, f)
				continue
			}
			if mine == nil {
				mine = &flight{done: make(chan struct{})}
			}
			c.inflight[n] = mine
			ask = append(ask, n)
		}
		c.mu.Unlock()
		if mine != nil {
			var got map[string]Topic
			got, mine.err = c.fetch(ctx, ask)
			for n, t := range got {
				out[n] = t
			}
			c.mu.Lock()
			for _, n := range ask {
				delete(c.inflight, n)
			}
			c.mu.Unlock()
			close(mine.done)
			if mine.err != nil {
				return out, mine.err
			}
		}
		for _, f := range wait {
			select {
			case <-f.done:
				if f.err != nil {
					return out, f.err
				}
			case <-ctx.Done():
				return out, ctx.Err()
			}
		}
		if len(ask) == 0 && len(wait) == 0 {
			return out, nil
		}
		if attempt > 2 {
			// Entries expiring between fetch and read: use what we got.
			return out, nil
		}
	}
}

// ResolveFresh asks catalogsvc about names without looking at the cache
// (and refreshes the cache with the answers): for describes, which an
// operator runs to see a table change now, not within TTL.
func (c *Catalog) ResolveFresh(ctx context.Context, names []string) (map[string]Topic, error) {
	return c.fetch(ctx, names)
}

// MarkStale drops topic's cached mapping if it is of table tableID, which
// Fluss reported gone (the table was dropped, perhaps created again under
// the same name). The next Resolve of topic asks catalogsvc with the id
// marked stale, so catalogsvc reads the tables again instead of answering
// from its own snapshot.
func (c *Catalog) MarkStale(topic string, tableID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.cache[topic]; ok && e.topic.Mapping.GetTableId() == tableID {
		delete(c.cache, topic)
	}
	c.stale[topic] = tableID
}

// MarkPartitionGone drops topic's cached mapping if it reads Fluss
// partition partitionID, which a read found gone (dropped, e.g. by
// retention). The next Resolve of topic names the partition as stale, so
// catalogsvc lists the partitions again and the topic disappears at once
// instead of at its next periodic refresh.
func (c *Catalog) MarkPartitionGone(topic string, partitionID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.cache[topic]; ok && e.topic.Mapping.GetFlussPartition().GetId() == partitionID {
		delete(c.cache, topic)
	}
	c.goneParts[topic] = partitionID
}

func (c *Catalog) fetch(ctx context.Context, names []string) (map[string]Topic, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	req := &catalogv1.ResolveTopicsRequest{Topics: names}
	c.mu.Lock()
	for _, n := range names {
		if id, ok := c.stale[n]; ok {
			req.StaleTableIds = append(req.StaleTableIds, id)
		}
		if id, ok := c.goneParts[n]; ok {
			req.StalePartitionIds = append(req.StalePartitionIds, id)
		}
	}
	c.mu.Unlock()
	resp, err := c.client.ResolveTopics(ctx, req)
	if err != nil {
		c.log.Warn("catalog ResolveTopics failed", "topics", len(names), "err", err)
		return nil, fmt.Errorf("catalog ResolveTopics: %w", err)
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweepLocked(now)
	got := make(map[string]Topic, len(names))
	for _, r := range resp.GetResults() {
		t := Topic{Mapping: r.GetMapping(), ErrorCode: int16(r.GetErrorCode()), ErrorMsg: r.GetErrorMessage()}
		ttl := c.cfg.TTL
		if t.Mapping == nil {
			ttl = c.cfg.NegativeTTL
			if t.ErrorCode == 0 {
				t.ErrorCode = kerr.UnknownTopicOrPartition.Code // no mapping and no reason
			}
		}
		if id, ok := c.stale[r.GetTopic()]; ok {
			if t.Mapping.GetTableId() == id {
				// catalogsvc has not seen the change yet (its refreshes are
				// rate-limited): ask again soon rather than after TTL.
				ttl = c.cfg.NegativeTTL
			} else {
				delete(c.stale, r.GetTopic())
			}
		}
		if id, ok := c.goneParts[r.GetTopic()]; ok {
			if p := t.Mapping.GetFlussPartition(); p != nil && p.GetId() == id {
				ttl = c.cfg.NegativeTTL // catalogsvc's refresh was rate-limited
			} else {
				delete(c.goneParts, r.GetTopic())
			}
		}
		c.cache[r.GetTopic()] = cacheEntry{topic: t, expires: now.Add(ttl)}
		got[r.GetTopic()] = t
	}
	for _, n := range names {
		if _, ok := got[n]; !ok {
			// catalogsvc left it out: treat as unknown for a short time.
			t := Topic{ErrorCode: kerr.UnknownTopicOrPartition.Code, ErrorMsg: "catalog returned no result for topic"}
			c.cache[n] = cacheEntry{topic: t, expires: now.Add(c.cfg.NegativeTTL)}
			got[n] = t
		}
	}
	return got, nil
}

// sweepLocked drops expired cache entries once the cache has doubled since
// the last sweep: producers naming ever new topics (unknown ones are
// cached for NegativeTTL) must not grow the cache for good. Amortized, a
// sweep costs O(1) per entry added. c.mu is held.
func (c *Catalog) sweepLocked(now time.Time) {
	if len(c.cache) < max(2*c.swept, minSweep) {
		return
	}
	for n, e := range c.cache {
		if !now.Before(e.expires) {
			delete(c.cache, n)
		}
	}
	c.swept = len(c.cache)
}

// minSweep is the cache size below which expired entries are left alone.
const minSweep = 1024

// Metadata asks catalogsvc for a Kafka Metadata answer; self is filled in.
func (c *Catalog) Metadata(ctx context.Context, topics []string, all bool) (*catalogv1.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	resp, err := c.client.Metadata(ctx, &catalogv1.MetadataRequest{Topics: topics, AllTopics: all, Self: c.cfg.Self})
	if err != nil {
		return nil, fmt.Errorf("catalog Metadata: %w", err)
	}
	if id := resp.GetClusterId(); id != "" {
		c.mu.Lock()
		c.clusterID = id
		c.mu.Unlock()
	}
	return resp, nil
}

// StartHeartbeat registers this frontdoor now (best effort) and then every
// Lease/3 until ShutdownHeartbeat.
func (c *Catalog) StartHeartbeat(context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	c.hbCancel, c.hbDone = cancel, make(chan struct{})
	go func() {
		defer close(c.hbDone)
		interval := c.cfg.Lease / 3
		failing := false
		for {
			err := c.heartbeat(ctx)
			switch {
			case err != nil && ctx.Err() == nil && !failing:
				c.log.Warn("catalog heartbeat failed; this frontdoor may drop out of Metadata", "err", err)
				failing = true
			case err == nil && failing:
				c.log.Info("catalog heartbeat recovered")
				failing = false
			}
			if !sleepCtx(ctx, interval) {
				return
			}
		}
	}()
	return nil
}

// ShutdownHeartbeat stops the loop.
func (c *Catalog) ShutdownHeartbeat(ctx context.Context) error {
	if c.hbCancel == nil {
		return nil
	}
	c.hbCancel()
	select {
	case <-c.hbDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Catalog) heartbeat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	resp, err := c.client.Heartbeat(ctx, &catalogv1.HeartbeatRequest{Broker: c.cfg.Self, LeaseMs: c.cfg.Lease.Milliseconds()})
	if err != nil {
		return err
	}
	if id := resp.GetClusterId(); id != "" {
		c.mu.Lock()
		c.clusterID = id
		c.mu.Unlock()
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
