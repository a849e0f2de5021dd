// Package txn is Ferry's Kafka transaction coordinator: it keeps each
// transactional id's producer id, epoch and state, stages the batches and
// offsets of open transactions, and applies them to Fluss when a
// transaction commits (docs/transactions.md). Nothing of a transaction
// reaches a Fluss table before its commit. Staging and state live in this
// process's memory (not yet durable; see the design page).
package txn

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// State is a transaction's state, named as DescribeTransactions and
// ListTransactions name Kafka's.
type State int

const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
)

func (s State) String() string {
	return [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"}[s]
}

// ParseState reads a state name as ListTransactions filters carry it.
func ParseState(name string) (State, bool) {
	for s := Empty; s <= CompleteAbort; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// Backend is what the coordinator needs from the rest of Ferry: producer
// ids (Fluss writer ids from appendsvc), appends, and group offsets.
type Backend interface {
	// NewWriterID allocates a Fluss writer id (also a Kafka producer id).
	NewWriterID(ctx context.Context) (int64, error)
	// Append writes one batch and waits for its answer.
	Append(ctx context.Context, req *appendv1.AppendRequest) (*appendv1.AppendResponse, error)
	// CommitOffsets makes offsets the group's committed offsets.
	CommitOffsets(ctx context.Context, group string, offsets []*fetchv1.CommittedOffset) error
}

// Config bounds the coordinator; zero fields take the defaults.
type Config struct {
	// MaxTimeout is Kafka's transaction.max.timeout.ms.
	MaxTimeout time.Duration
	// MaxStagedBytes bounds one transaction's staged batches.
	MaxStagedBytes int64
	// MaxTotalStagedBytes bounds the staged batches of all transactions.
	MaxTotalStagedBytes int64
	// CheckInterval is how often expired transactions are looked for
	// (Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms).
	CheckInterval time.Duration
	// RetryPause is the first pause before an apply step is tried again.
	RetryPause time.Duration
	// IDExpiry forgets a transactional id without an open transaction
	// after this long unused (Kafka's transactional.id.expiration.ms).
	IDExpiry time.Duration
	// Store, when set, keeps the transactions' journal, read back at start
	// (journal.go). Without it StateDir, when set, keeps it in a DirStore
	// there; with neither they are in memory only.
	Store Store
	// StateDir is the directory of the DirStore when Store is nil.
	StateDir string
}

// DefaultConfig mirrors Kafka's defaults where Kafka has one.
func DefaultConfig() Config {
	return Config{MaxTimeout: 15 * time.Minute, MaxStagedBytes: 64 << 20, MaxTotalStagedBytes: 512 << 20,
		CheckInterval: time.Second, RetryPause: 100 * time.Millisecond, IDExpiry: 7 * 24 * time.Hour}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = d.MaxTimeout
	}
	if c.MaxStagedBytes <= 0 {
		c.MaxStagedBytes = d.MaxStagedBytes
	}
	if c.MaxTotalStagedBytes <= 0 {
		c.MaxTotalStagedBytes = d.MaxTotalStagedBytes
	}
	if c.CheckInterval <= 0 {
		c.CheckInterval = d.CheckInterval
	}
	if c.RetryPause <= 0 {
		c.RetryPause = d.RetryPause
	}
	if c.IDExpiry <= 0 {
		c.IDExpiry = d.IDExpiry
	}
	return c
}

// TopicPartition names a Kafka partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Staged is one produced batch of a transaction, transcoded and ready to
// append. The coordinator sets its writer id and sequences when applying.
type Staged struct {
	TopicPartition
	FirstSeq, LastSeq int32
	Append            *appendv1.AppendRequest
	// Bytes is what the batch counts against the staging bounds.
	Bytes int64
}

// txn is one transactional id's state. All fields are guarded by the
// coordinator's mutex.
type txn struct {
	id         string
	producerID int64
	epoch      int16
	state      State
	timeout    time.Duration
	started    time.Time // when the current transaction began
	updated    time.Time
	parts      map[TopicPartition]bool
	groups     map[string]bool
	staged     []*Staged
	offsets    map[string]map[TopicPartition]*fetchv1.CommittedOffset
	bytes      int64
	// nextSeq is the next Kafka sequence of each partition in this
	// epoch; sequences run on across the epoch's transactions.
	nextSeq map[TopicPartition]int32
	// applied is closed when the commit being applied is done.
	applied chan struct{}
	// recovered: read back from the journal, which does not keep the
	// sequences of partitions outside the open transaction; the first
	// batch of such a partition sets them.
	recovered bool
}

func (t *txn) reset(now time.Time) {
	t.parts = map[TopicPartition]bool{}
	t.groups = map[string]bool{}
	t.staged, t.offsets = nil, map[string]map[TopicPartition]*fetchv1.CommittedOffset{}
	t.started, t.updated = time.Time{}, now
}

// Coordinator serves the transactions of the transactional ids this
// frontdoor coordinates.
type Coordinator struct {
	cfg     Config
	backend Backend
	log     *slog.Logger
	tracer  trace.Tracer
	metrics *metrics
	journal *journal // nil: in memory only

	mu     sync.Mutex
	txns   map[string]*txn
	staged int64 // bytes staged across transactions
	// pending counts, per group and partition, the open transactions
	// with offsets for it (OffsetFetch's UNSTABLE_OFFSET_COMMIT).
	pending map[string]map[TopicPartition]int

	stop    chan struct{}
	done    chan struct{}
	bg      context.Context
	quit    context.CancelFunc
	applies sync.WaitGroup // commits being applied
}

// New starts a coordinator and its timeout checker; Close stops it.
func New(cfg Config, backend Backend, log *slog.Logger, tp trace.TracerProvider, mp metric.MeterProvider) (*Coordinator, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Coordinator{cfg: cfg.withDefaults(), backend: backend, log: log, txns: map[string]*txn{}, pending: map[string]map[TopicPartition]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
	c.tracer = tracerOf(tp)
	m, err := newMetrics(mp, c)
	if err != nil {
		return nil, err
	}
	c.metrics = m
	c.bg, c.quit = context.WithCancel(context.Background())
	store := c.cfg.Store
	if store == nil && c.cfg.StateDir != "" {
		if store, err = NewDirStore(c.cfg.StateDir); err != nil {
			return nil, err
		}
	}
	if store != nil {
		c.journal = &journal{store: store}
		if err := c.recover(); err != nil {
			return nil, err
		}
	}
	go c.expireLoop()
	return c, nil
}

// recover reads the journal back: transactions go on where they were,
// and commits that were being applied are finished.
func (c *Coordinator) recover() error {
	rs, err := c.journal.load()
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rs {
		c.installLocked(r)
	}
	return nil
}

// installLocked takes over a transactional id read back from the journal:
// its transaction goes on, and a commit that was being applied is
// finished.
func (c *Coordinator) installLocked(r recovered) {
	t := r.t
	t.recovered = true
	c.txns[t.id] = t
	c.staged += t.bytes
	for group, m := range t.offsets {
		for tp := range m {
			c.markPendingLocked(group, tp, 1)
		}
	}
	c.log.Info("transaction state recovered", "transactional_id", t.id, "producer_id", t.producerID, "epoch", t.epoch,
		"state", t.state.String(), "batches", len(t.staged), "applied", r.applied)
	if t.state == PrepareCommit {
		t.applied = make(chan struct{})
		c.applies.Add(1)
		go c.apply(c.bg, t, r.writer, r.applied)
	}
}

// lookupLocked is id's state: in memory, or else read from a journal
// shared with other frontdoors (a Reader), as when coordination of id
// moved here from a frontdoor that died.
func (c *Coordinator) lookupLocked(id string) *txn {
	if t := c.txns[id]; t != nil || c.journal == nil {
		return t
	}
	r, err := c.journal.loadID(id)
	if err != nil {
		c.log.Warn("reading a transactional id's journal failed", "transactional_id", id, "err", err)
		return nil
	}
	if r.t == nil {
		return nil
	}
	c.installLocked(r)
	return r.t
}

// persist runs a journal write when there is a journal, logging a
// failure; the caller answers with the error it returns.
func (c *Coordinator) persist(id string, write func(j *journal) error) *kerr.Error {
	if c.journal == nil {
		return nil
	}
	if err := write(c.journal); err != nil {
		c.log.Error("transaction journal write failed", "transactional_id", id, "err", err)
		return kerr.KafkaStorageError
	}
	return nil
}

// Close stops the timeout checker and any apply still retrying.
func (c *Coordinator) Close() {
	select {
	case <-c.stop:
		return
	default:
	}
	close(c.stop)
	c.quit()
	<-c.done
	c.applies.Wait()
}

// maxEpoch: at this epoch a producer gets a new producer id instead of a
// bump (Kafka keeps the last value for its own fencing).
const maxEpoch = math.MaxInt16 - 1

// InitProducer is InitProducerId with a transactional id. expectID and
// expectEpoch are the producer's current id and epoch (KIP-360) or -1.
func (c *Coordinator) InitProducer(ctx context.Context, id string, timeout time.Duration, expectID int64, expectEpoch int16) (int64, int16, *kerr.Error) {
	if timeout <= 0 || timeout > c.cfg.MaxTimeout {
		return -1, -1, kerr.InvalidTransactionTimeout
	}
	c.mu.Lock()
	t := c.lookupLocked(id)
	if t == nil {
		c.mu.Unlock()
		// Allocated outside the lock: a round trip to Fluss.
		pid, err := c.backend.NewWriterID(ctx)
		if err != nil {
			c.log.Warn("InitProducerId: allocating a producer id failed", "transactional_id", id, "err", err)
			return -1, -1, kerr.CoordinatorLoadInProgress
		}
		c.mu.Lock()
		if c.lookupLocked(id) == nil {
			t = &txn{id: id, producerID: pid, epoch: 0, state: Empty, timeout: timeout, nextSeq: map[TopicPartition]int32{}}
			t.reset(time.Now())
			if e := c.persist(id, func(j *journal) error { return j.reset(t) }); e != nil {
				c.mu.Unlock()
				return -1, -1, kerr.CoordinatorNotAvailable
			}
			c.txns[id] = t
			c.mu.Unlock()
			c.log.Info("transactional id registered", "transactional_id", id, "producer_id", pid)
			return pid, 0, nil
		}
		t = c.txns[id] // registered meanwhile: bump it as below
	}
	defer c.mu.Unlock()
	switch t.state {
	case PrepareCommit, PrepareAbort:
		return -1, -1, kerr.ConcurrentTransactions
	}
	if expectID >= 0 && (expectID != t.producerID || expectEpoch != t.epoch) {
		return -1, -1, kerr.ProducerFenced
	}
	if t.state == Ongoing {
		c.abortLocked(t, "fenced by a new producer session")
	}
	if t.epoch >= maxEpoch {
		c.mu.Unlock()
		pid, err := c.backend.NewWriterID(ctx)
		c.mu.Lock()
		if err != nil {
			return -1, -1, kerr.CoordinatorLoadInProgress
		}
		t.producerID, t.epoch = pid, 0
	} else {
		t.epoch++
	}
	t.state, t.timeout = Empty, timeout
	t.nextSeq = map[TopicPartition]int32{}
	t.recovered = false
	t.reset(time.Now())
	if e := c.persist(id, func(j *journal) error { return j.reset(t) }); e != nil {
		return -1, -1, kerr.CoordinatorNotAvailable
	}
	c.log.Info("transactional producer epoch bumped", "transactional_id", id, "producer_id", t.producerID, "epoch", t.epoch)
	return t.producerID, t.epoch, nil
}

// checkLocked applies Kafka's producer id and epoch rules of the
// coordinator APIs.
func (c *Coordinator) checkLocked(id string, pid int64, epoch int16) (*txn, *kerr.Error) {
	t := c.lookupLocked(id)
	switch {
	case t == nil || t.producerID != pid:
		return nil, kerr.InvalidProducerIDMapping
	case t.epoch != epoch:
		return nil, kerr.ProducerFenced
	case t.state == PrepareCommit || t.state == PrepareAbort:
		return nil, kerr.ConcurrentTransactions
	}
	return t, nil
}

// beginLocked opens a transaction if none is, journaling it with es.
func (c *Coordinator) beginLocked(t *txn, es ...entry) *kerr.Error {
	opening := t.state != Ongoing
	now := time.Now()
	if opening {
		es = append([]entry{{Kind: kindBegin, StartedMs: now.UnixMilli()}}, es...)
	}
	if e := c.persist(t.id, func(j *journal) error { return j.add(t.id, es...) }); e != nil {
		return e
	}
	if opening {
		t.reset(now)
		t.state, t.started = Ongoing, now
		c.metrics.began()
	}
	t.updated = now
	return nil
}

// AddPartitions puts partitions into the producer's transaction.
func (c *Coordinator) AddPartitions(id string, pid int64, epoch int16, parts []TopicPartition) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, bad := c.checkLocked(id, pid, epoch)
	if bad != nil {
		return bad
	}
	if e := c.beginLocked(t, entry{Kind: kindParts, Parts: parts}); e != nil {
		return e
	}
	for _, p := range parts {
		t.parts[p] = true
	}
	return nil
}

// Verify tells which partitions are in the producer's ongoing
// transaction, without adding any (AddPartitionsToTxn v4+ verify_only).
func (c *Coordinator) Verify(id string, pid int64, epoch int16, parts []TopicPartition) (map[TopicPartition]bool, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, bad := c.checkLocked(id, pid, epoch)
	if bad != nil {
		return nil, bad
	}
	in := make(map[TopicPartition]bool, len(parts))
	for _, p := range parts {
		in[p] = t.state == Ongoing && t.parts[p]
	}
	return in, nil
}

// AddGroup puts a consumer group's offsets into the transaction
// (AddOffsetsToTxn).
func (c *Coordinator) AddGroup(id string, pid int64, epoch int16, group string) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, bad := c.checkLocked(id, pid, epoch)
	if bad != nil {
		return bad
	}
	if e := c.beginLocked(t, entry{Kind: kindGroup, Group: group}); e != nil {
		return e
	}
	t.groups[group] = true
	return nil
}

// StageOffsets keeps a TxnOffsetCommit's offsets until the transaction
// ends; they become the group's offsets at commit.
func (c *Coordinator) StageOffsets(id string, pid int64, epoch int16, group string, offsets []*fetchv1.CommittedOffset) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.lookupLocked(id)
	switch {
	case t == nil || t.producerID != pid:
		return kerr.InvalidProducerIDMapping
	case t.epoch != epoch:
		return kerr.ProducerFenced
	case t.state != Ongoing || !t.groups[group]:
		return kerr.InvalidTxnState
	}
	if e := c.persist(id, func(j *journal) error {
		raw, err := offsetEntries(offsets)
		if err != nil {
			return err
		}
		return j.add(id, entry{Kind: kindOffsets, Group: group, Offsets: raw})
	}); e != nil {
		return e
	}
	m := t.offsets[group]
	if m == nil {
		m = map[TopicPartition]*fetchv1.CommittedOffset{}
		t.offsets[group] = m
	}
	for _, o := range offsets {
		tp := TopicPartition{o.GetTopic(), o.GetPartition()}
		if m[tp] == nil {
			c.markPendingLocked(group, tp, 1)
		}
		m[tp] = o
	}
	t.updated = time.Now()
	return nil
}

// StageResult is what Stage tells Produce.
type StageResult struct {
	Err *kerr.Error
	Msg string
	// Duplicate: a retry of a batch already staged; answer success.
	Duplicate bool
}

// Stage keeps a transactional batch until its transaction ends. Calls for
// one partition must come in the order the batches were produced.
func (c *Coordinator) Stage(id string, pid int64, epoch int16, b *Staged) StageResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.lookupLocked(id)
	switch {
	case t == nil:
		return StageResult{Err: kerr.InvalidTxnState, Msg: fmt.Sprintf("transactional id %q is not coordinated by this frontdoor", id)}
	case t.producerID != pid:
		return StageResult{Err: kerr.InvalidProducerIDMapping, Msg: fmt.Sprintf("producer id %d is not transactional id %q's", pid, id)}
	case epoch != t.epoch:
		return StageResult{Err: kerr.InvalidProducerEpoch, Msg: fmt.Sprintf("producer %d: epoch %d is not the current epoch %d", pid, epoch, t.epoch)}
	case t.state != Ongoing || !t.parts[b.TopicPartition]:
		return StageResult{Err: kerr.InvalidTxnState, Msg: fmt.Sprintf("partition %s-%d is not part of an ongoing transaction of %q", b.Topic, b.Partition, id)}
	}
	for _, s := range t.staged {
		if s.TopicPartition == b.TopicPartition && s.FirstSeq == b.FirstSeq && s.LastSeq == b.LastSeq {
			return StageResult{Duplicate: true}
		}
	}
	if next, known := t.nextSeq[b.TopicPartition]; (known || !t.recovered) && b.FirstSeq != next {
		return StageResult{Err: kerr.OutOfOrderSequenceNumber, Msg: fmt.Sprintf("producer %d epoch %d: sequence %d, expected %d", pid, epoch, b.FirstSeq, next)}
	}
	if t.bytes+b.Bytes > c.cfg.MaxStagedBytes || c.staged+b.Bytes > c.cfg.MaxTotalStagedBytes {
		c.log.Warn("transactional batch refused: staging bound reached", "transactional_id", id,
			"transaction_bytes", t.bytes, "all_bytes", c.staged, "batch_bytes", b.Bytes)
		return StageResult{Err: kerr.MessageTooLarge, Msg: fmt.Sprintf(
			"transaction staging is full (%d of %d bytes in this transaction, %d of %d in this frontdoor): commit or abort",
			t.bytes, c.cfg.MaxStagedBytes, c.staged, c.cfg.MaxTotalStagedBytes)}
	}
	if e := c.persist(id, func(j *journal) error {
		se, err := stagedEntryOf(b)
		if err != nil {
			return err
		}
		return j.add(id, entry{Kind: kindStage, Staged: se})
	}); e != nil {
		return StageResult{Err: e, Msg: "the transaction journal could not be written"}
	}
	t.nextSeq[b.TopicPartition] = nextSeq(b.LastSeq)
	t.staged = append(t.staged, b)
	t.bytes += b.Bytes
	c.staged += b.Bytes
	t.updated = time.Now()
	return StageResult{}
}

func nextSeq(last int32) int32 {
	if last == math.MaxInt32 {
		return 0
	}
	return last + 1
}

// abortLocked drops the open transaction's staged data.
func (c *Coordinator) abortLocked(t *txn, why string) {
	c.log.Info("transaction aborted", "transactional_id", t.id, "producer_id", t.producerID, "epoch", t.epoch,
		"batches", len(t.staged), "bytes", t.bytes, "reason", why)
	c.staged -= t.bytes
	t.bytes = 0
	c.unmarkPendingLocked(t)
	t.staged, t.offsets = nil, map[string]map[TopicPartition]*fetchv1.CommittedOffset{}
	t.state, t.updated = CompleteAbort, time.Now()
	c.metrics.ended(false)
	// A failed write leaves the open transaction in the journal: read back,
	// it is aborted again by its timeout, so nothing of it is applied.
	c.persist(t.id, func(j *journal) error { return j.reset(t) })
}

// End is EndTxn. A commit is answered once every staged batch and offset
// is stored; if that takes longer than ctx, CONCURRENT_TRANSACTIONS tells
// the producer to ask again while the apply goes on.
func (c *Coordinator) End(ctx context.Context, id string, pid int64, epoch int16, commit bool) *kerr.Error {
	c.mu.Lock()
	t := c.lookupLocked(id)
	switch {
	case t == nil || t.producerID != pid:
		c.mu.Unlock()
		return kerr.InvalidProducerIDMapping
	case t.epoch != epoch:
		c.mu.Unlock()
		return kerr.ProducerFenced
	}
	var wait chan struct{}
	switch {
	case t.state == Ongoing && !commit:
		c.abortLocked(t, "EndTxn(abort)")
	case t.state == Ongoing:
		t.state, t.updated = PrepareCommit, time.Now()
		t.applied = make(chan struct{})
		wait = t.applied
		// The apply outlives this request, but its span is the request's
		// child so that a trace shows produce, commit and apply together.
		c.applies.Add(1)
		go c.apply(trace.ContextWithSpanContext(c.bg, trace.SpanContextFromContext(ctx)), t, -1, 0)
	case t.state == PrepareCommit && commit:
		wait = t.applied
	case t.state == CompleteCommit && commit, t.state == CompleteAbort && !commit:
		// A retry of an EndTxn that was done.
	default:
		st := t.state
		c.mu.Unlock()
		c.log.Info("EndTxn refused", "transactional_id", id, "commit", commit, "state", st.String())
		return kerr.InvalidTxnState
	}
	c.mu.Unlock()
	if wait == nil {
		return nil
	}
	select {
	case <-wait:
		return nil
	case <-ctx.Done():
		return kerr.ConcurrentTransactions
	}
}

// Info describes one transaction (DescribeTransactions).
type Info struct {
	ID         string
	ProducerID int64
	Epoch      int16
	State      State
	Timeout    time.Duration
	Started    time.Time // zero when no transaction is open
	Partitions []TopicPartition
}

// Describe returns the transactional id's transaction, if known.
func (c *Coordinator) Describe(id string) (Info, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.lookupLocked(id)
	if t == nil {
		return Info{}, false
	}
	return infoOf(t), true
}

// List describes every known transactional id, sorted by id.
func (c *Coordinator) List() []Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Info, 0, len(c.txns))
	for _, t := range c.txns {
		out = append(out, infoOf(t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func infoOf(t *txn) Info {
	in := Info{ID: t.id, ProducerID: t.producerID, Epoch: t.epoch, State: t.state, Timeout: t.timeout}
	if t.state == Ongoing || t.state == PrepareCommit {
		in.Started = t.started
		for p := range t.parts {
			in.Partitions = append(in.Partitions, p)
		}
		sort.Slice(in.Partitions, func(i, j int) bool {
			a, b := in.Partitions[i], in.Partitions[j]
			return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
		})
	}
	return in
}

// expireLoop aborts transactions open past their timeout, and fences
// their producer by bumping the epoch, as Kafka's coordinator does; it
// also forgets transactional ids unused for IDExpiry.
func (c *Coordinator) expireLoop() {
	defer close(c.done)
	tick := time.NewTicker(c.cfg.CheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case now := <-tick.C:
			c.expire(now)
		}
	}
}

func (c *Coordinator) expire(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, t := range c.txns {
		if (t.state == Empty || t.state == CompleteCommit || t.state == CompleteAbort) && now.Sub(t.updated) > c.cfg.IDExpiry {
			// Its producer, should it come back, gets
			// INVALID_PRODUCER_ID_MAPPING and initializes again.
			delete(c.txns, id)
			c.persist(id, func(j *journal) error { return j.forget(id) })
			c.log.Info("transactional id expired", "transactional_id", id, "idle", now.Sub(t.updated).String())
			continue
		}
		if t.state != Ongoing || now.Sub(t.started) <= t.timeout {
			continue
		}
		c.abortLocked(t, fmt.Sprintf("open longer than its timeout %s", t.timeout))
		c.metrics.timedOut()
		if t.epoch < maxEpoch {
			t.epoch++
			t.nextSeq = map[TopicPartition]int32{}
			c.persist(t.id, func(j *journal) error { return j.reset(t) })
		}
	}
}

// PendingOffset reports whether an open or committing transaction holds
// offsets of group for the partition: a consumer asking for stable offsets
// (KIP-447) gets UNSTABLE_OFFSET_COMMIT and asks again, instead of
// resuming from an offset the transaction is about to replace.
func (c *Coordinator) PendingOffset(group, topic string, partition int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[group][TopicPartition{topic, partition}] > 0
}

func (c *Coordinator) markPendingLocked(group string, tp TopicPartition, d int) {
	m := c.pending[group]
	if m == nil {
		m = map[TopicPartition]int{}
		c.pending[group] = m
	}
	if m[tp] += d; m[tp] <= 0 {
		delete(m, tp)
		if len(m) == 0 {
			delete(c.pending, group)
		}
	}
}

// unmarkPendingLocked drops t's offsets from the pending counts.
func (c *Coordinator) unmarkPendingLocked(t *txn) {
	for group, m := range t.offsets {
		for tp := range m {
			c.markPendingLocked(group, tp, -1)
		}
	}
}
