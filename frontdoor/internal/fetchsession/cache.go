// Package fetchsession keeps Kafka incremental fetch sessions (KIP-227) for
// one frontdoor: a consumer's first Fetch names all its partitions and
// opens a session; later Fetches name only the partitions whose position
// changed, and their answers carry only the partitions with news. A
// session lives in the frontdoor that opened it, as in the broker a
// consumer fetches from.
package fetchsession

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's epochs: 0 opens a session, -1 closes one (or asks for none).
const (
	initialEpoch int32 = 0
	finalEpoch   int32 = -1
)

// minVersion is the first Fetch version with sessions.
const minVersion = 7

// Config bounds the cache.
type Config struct {
	// Slots is how many sessions are kept (Kafka's
	// max.incremental.fetch.session.cache.slots); 0 keeps none.
	Slots int
	// EvictAfter is how long a session must have been idle before a new
	// one may take its slot whatever their sizes (Kafka's
	// min.incremental.fetch.session.eviction.ms).
	EvictAfter time.Duration
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config { return Config{Slots: 1000, EvictAfter: 2 * time.Minute} }

type key struct {
	topic     string
	partition int32
}

// partition is a session's state of one partition: what the consumer asked
// last, and what the last answer told it.
type partition struct {
	fetchOffset, logStartOffset int64
	maxBytes, leaderEpoch       int32
	// Reported in the last answer; -1 before the first and after an error,
	// so that the partition is sent again once the error is gone.
	highWatermark, lastStable, logStart int64
}

type session struct {
	id    int32
	epoch int32 // the epoch the next request must carry
	parts map[key]*partition
	// order is the fetch order: partitions that returned records move to
	// the end, so that each gets its turn at the answer's byte budget.
	order    []key
	lastUsed time.Time
	inFlight int // requests of the session being served
}

// Stats are the cache's counters, for metrics.
type Stats struct {
	Sessions, Partitions int
	Evictions            int64
}

// Cache holds the sessions of one frontdoor.
type Cache struct {
	cfg Config
	now func() time.Time

	mu         sync.Mutex
	sessions   map[int32]*session
	partitions int
	evictions  int64
}

// New makes a cache.
func New(cfg Config) *Cache {
	return &Cache{cfg: cfg, now: time.Now, sessions: map[int32]*session{}}
}

// Stats reads the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Sessions: len(c.sessions), Partitions: c.partitions, Evictions: c.evictions}
}

// Kind says how a Fetch relates to sessions.
type Kind int

const (
	// Sessionless: a full fetch that keeps no session (epoch -1, a version
	// before 7, or no free slot).
	Sessionless Kind = iota
	// Full: a full fetch that opens a session if a slot is free.
	Full
	// Incremental: a fetch within a session.
	Incremental
	// Refused: the session is unknown or the epoch wrong; ErrorCode says
	// which and the answer carries nothing else.
	Refused
)

func (k Kind) String() string {
	return [...]string{"sessionless", "full", "incremental", "refused"}[k]
}

// Fetch is one Fetch request's dealings with the cache: Begin, then Finish
// with the answer.
type Fetch struct {
	c         *Cache
	Kind      Kind
	ErrorCode int16
	sess      *session
}

// Begin applies r to the cache. For an incremental fetch it rewrites
// r.Topics to every partition of the session, with the positions the
// session holds, so that the request is served as a full one; Finish then
// drops what did not change.
func (c *Cache) Begin(r *kmsg.FetchRequest) *Fetch {
	f := &Fetch{c: c}
	if r.Version < minVersion {
		return f
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.SessionEpoch == initialEpoch || r.SessionEpoch == finalEpoch {
		if r.SessionID != 0 {
			c.removeLocked(r.SessionID)
		}
		if r.SessionEpoch == initialEpoch && c.cfg.Slots > 0 {
			f.Kind = Full
		}
		return f
	}
	s := c.sessions[r.SessionID]
	switch {
	case s == nil:
		f.Kind, f.ErrorCode = Refused, kerr.FetchSessionIDNotFound.Code
		return f
	case s.epoch != r.SessionEpoch:
		f.Kind, f.ErrorCode = Refused, kerr.InvalidFetchSessionEpoch.Code
		return f
	}
	s.inFlight++
	s.epoch = nextEpoch(s.epoch)
	s.lastUsed = c.now()
	before := len(s.parts)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			k := key{t.Topic, p.Partition}
			sp := s.parts[k]
			if sp == nil {
				sp = &partition{highWatermark: -1, lastStable: -1, logStart: -1}
				s.parts[k] = sp
				s.order = append(s.order, k)
			}
			sp.fetchOffset, sp.logStartOffset, sp.maxBytes, sp.leaderEpoch = p.FetchOffset, p.LogStartOffset, p.PartitionMaxBytes, p.CurrentLeaderEpoch
		}
	}
	for _, t := range r.ForgottenTopics {
		for _, p := range t.Partitions {
			delete(s.parts, key{t.Topic, p})
		}
	}
	if len(s.parts) != len(s.order) || len(r.ForgottenTopics) > 0 {
		kept := s.order[:0]
		for _, k := range s.order {
			if _, ok := s.parts[k]; ok {
				kept = append(kept, k)
			}
		}
		s.order = kept
	}
	c.partitions += len(s.parts) - before
	r.Topics = s.request()
	r.ForgottenTopics = nil
	f.Kind, f.sess = Incremental, s
	return f
}

// request is the session's partitions as a full request's topics, grouped
// by topic in session order.
func (s *session) request() []kmsg.FetchRequestTopic {
	var topics []kmsg.FetchRequestTopic
	at := map[string]int{}
	for _, k := range s.order {
		sp := s.parts[k]
		i, ok := at[k.topic]
		if !ok {
			i = len(topics)
			at[k.topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic = k.topic
			topics = append(topics, t)
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition, p.FetchOffset, p.LogStartOffset = k.partition, sp.fetchOffset, sp.logStartOffset
		p.PartitionMaxBytes, p.CurrentLeaderEpoch = sp.maxBytes, sp.leaderEpoch
		topics[i].Partitions = append(topics[i].Partitions, p)
	}
	return topics
}

// Finish sets the answer's session id and, for an incremental fetch, keeps
// only the partitions with records, an error, or a changed high watermark
// or log start offset. r is the request as Begin left it; a nil resp (the
// fetch failed without an answer) only ends the request's hold on its
// session.
func (f *Fetch) Finish(r *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	if resp == nil {
		if f.Kind == Incremental {
			f.c.mu.Lock()
			f.sess.inFlight--
			f.c.mu.Unlock()
		}
		return
	}
	resp.SessionID = 0
	switch f.Kind {
	case Refused:
		resp.ErrorCode, resp.Topics = f.ErrorCode, nil
	case Full:
		if resp.ErrorCode == 0 {
			resp.SessionID = f.c.open(r, resp)
		}
	case Incremental:
		c := f.c
		c.mu.Lock()
		defer c.mu.Unlock()
		s := f.sess
		s.inFlight--
		if c.sessions[s.id] != s {
			// Evicted while the fetch was served: this answer is its last.
			resp.ErrorCode, resp.Topics = kerr.FetchSessionIDNotFound.Code, nil
			return
		}
		resp.SessionID = s.id
		var moved []key
		topics := resp.Topics[:0]
		for _, t := range resp.Topics {
			parts := t.Partitions[:0]
			for _, p := range t.Partitions {
				k := key{t.Topic, p.Partition}
				sp := s.parts[k]
				if sp == nil || sp.update(&p) {
					parts = append(parts, p)
				}
				if len(p.RecordBatches) > 0 {
					moved = append(moved, k)
				}
			}
			if len(parts) > 0 {
				t.Partitions = parts
				topics = append(topics, t)
			}
		}
		resp.Topics = topics
		s.moveToEnd(moved)
	}
}

// update records what an answer says of the partition and reports whether
// the consumer must be told.
func (sp *partition) update(p *kmsg.FetchResponseTopicPartition) bool {
	if p.ErrorCode != 0 {
		sp.highWatermark = -1
		return true
	}
	changed := len(p.RecordBatches) > 0 || p.HighWatermark != sp.highWatermark ||
		p.LastStableOffset != sp.lastStable || p.LogStartOffset != sp.logStart
	sp.highWatermark, sp.lastStable, sp.logStart = p.HighWatermark, p.LastStableOffset, p.LogStartOffset
	return changed
}

func (s *session) moveToEnd(keys []key) {
	if len(keys) == 0 || len(keys) == len(s.order) {
		return
	}
	last := map[key]bool{}
	for _, k := range keys {
		last[k] = true
	}
	order := make([]key, 0, len(s.order))
	for _, k := range s.order {
		if !last[k] {
			order = append(order, k)
		}
	}
	s.order = append(order, keys...)
}

// open makes a session of a full fetch's partitions and what its answer
// told, or returns 0 when no slot can be had.
func (c *Cache) open(r *kmsg.FetchRequest, resp *kmsg.FetchResponse) int32 {
	s := &session{epoch: 1, parts: map[key]*partition{}}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			k := key{t.Topic, p.Partition}
			if s.parts[k] != nil {
				continue
			}
			s.parts[k] = &partition{fetchOffset: p.FetchOffset, logStartOffset: p.LogStartOffset, maxBytes: p.PartitionMaxBytes,
				leaderEpoch: p.CurrentLeaderEpoch, highWatermark: -1, lastStable: -1, logStart: -1}
			s.order = append(s.order, k)
		}
	}
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			if sp := s.parts[key{t.Topic, t.Partitions[i].Partition}]; sp != nil {
				sp.update(&t.Partitions[i])
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.sessions) >= c.cfg.Slots && !c.evictLocked(now, len(s.parts)) {
		return 0
	}
	for s.id == 0 || c.sessions[s.id] != nil {
		s.id = rand.Int32() // positive, 0 excluded by the loop
	}
	s.lastUsed = now
	c.sessions[s.id] = s
	c.partitions += len(s.parts)
	return s.id
}

// evictLocked frees a slot for a session of size partitions, as Kafka's
// cache does: the least recently used session if it has been idle for
// EvictAfter, otherwise the smallest session if it is smaller.
func (c *Cache) evictLocked(now time.Time, size int) bool {
	var lru, smallest *session
	for _, s := range c.sessions {
		if s.inFlight > 0 {
			continue
		}
		if lru == nil || s.lastUsed.Before(lru.lastUsed) {
			lru = s
		}
		if smallest == nil || len(s.parts) < len(smallest.parts) {
			smallest = s
		}
	}
	victim := smallest
	if lru != nil && now.Sub(lru.lastUsed) >= c.cfg.EvictAfter {
		victim = lru
	} else if smallest == nil || len(smallest.parts) >= size {
		return false
	}
	c.removeLocked(victim.id)
	c.evictions++
	return true
}

func (c *Cache) removeLocked(id int32) {
	if s := c.sessions[id]; s != nil {
		c.partitions -= len(s.parts)
		delete(c.sessions, id)
	}
}

// nextEpoch follows Kafka's wrap from MaxInt32 to 1.
func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}
