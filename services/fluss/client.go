// Package fluss is Ferry's client for Apache Fluss 0.9.1's native RPC
// protocol: framing and pipelined connections, API version negotiation,
// cluster metadata with leader lookup, the admin calls Ferry needs
// (databases, tables, schemas), the log calls (ProduceLog, FetchLog,
// ListOffsets, InitWriter) and PutKv for primary-key tables. No Go client
// for Fluss exists; this one is written against the protocol definitions of
// the 0.9.1-incubating tag.
//
// Entry points: Dial returns a Client for a cluster (bootstrap = coordinator
// address). Admin calls (ListDatabases, ListTables, GetTableInfo,
// GetTableSchema, CreateTable, ...) go to the coordinator. GetTableInfo
// returns a TableInfo (id, schema, buckets, keys, options, with helpers for
// the log format, Arrow compression and KV format) and makes the table id
// known to the client; ProduceLog then routes encoded log batches (see the
// logbatch package) to each bucket's leader, found through cached metadata
// (TableRoute, BucketLeader) that is refreshed when a server reports it stale.
//
// Primary-key tables: package compacted encodes rows in the compacted row
// format (table.kv.format's default), bucketing.KeyEncoder encodes a row's
// physical primary key (TableInfo.PhysicalPrimaryKeys) and picks its bucket,
// package kvbatch builds the KV record batches (upserts, and deletes as a
// key without a row) and PutKv writes them, returning each bucket's
// changelog end offset. All of it is byte-exact with the Java UpsertWriter
// and tested against the real cluster (lookups and changelog read back by
// the Java client), but nothing in Ferry calls it yet. What issue #12 still
// has to wire: catalogsvc accepting primary-key tables as topics (today
// refused, docs/limits.md), transcodesvc mapping Kafka keys and tombstones
// to primary keys and deletes, appendsvc writing upserts with PutKv (batch
// per bucket, writer ids and sequences as for logs), and frontdoor deciding
// which offset a Kafka producer is acknowledged with (PutKv returns the
// changelog's end offset, not a base offset; a batch that changes nothing
// still takes one changelog offset). Not done here: ARRAY, MAP and ROW
// columns in compacted rows, the indexed KV format, partial updates
// (target_columns) and lake-format key encodings; partitioned primary-key
// tables are supported by the API (PartitionID, PhysicalPrimaryKeys) but
// not yet tested against the cluster.
//
// Partitioned tables: package partitioning names the partition of each row
// of an Arrow record as the Java client does (TableInfo.PartitionGetter;
// FLOAT and DOUBLE keys refused, their names depend on the JVM), reads a
// table's auto-partitioning options (TableInfo.AutoPartition) and tells
// whether a partition name would be kept, refused, or created only to be
// dropped by retention (AutoPartition.Check). PartitionIDs turns names into
// partition ids, creating missing partitions when the caller asks (as the
// Java writer's dynamic partition creation does, tolerant of concurrent
// creators) and caching their placement for ProduceLog and PutKv. Tested
// against Fluss's own classes and, for a DAY auto-partitioned log table,
// against the cluster with a Java read-back; nothing in Ferry calls it yet.
// What issue #12 still has to wire: catalogsvc accepting partitioned tables
// as topics, transcodesvc or appendsvc splitting each Kafka batch by
// partition (one log batch per partition and bucket, each with its own
// writer sequence), the policy for rows whose partition is not Live (a
// Kafka error code for the producer), and re-resolving partitions that
// retention dropped.
//
// Errors from servers are *Error values carrying Fluss's error code (Code*
// constants, errors.Is by code, Retriable and StaleMetadata per Fluss's
// exception classes); transport failures wrap ErrUnreachable or
// ErrConnectionBroken. A Client is safe for concurrent use: requests to one
// server share a pipelined connection. Every call takes a context; when the
// context has no deadline, the client's request timeout applies.
package fluss

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

const instrumentationName = "github.com/ferrygw/ferry/services/fluss"

// Defaults for Options.
const (
	DefaultDialTimeout    = 10 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultClientName     = "ferry"
	DefaultClientVersion  = "0.1.0"
)

type options struct {
	logger         *slog.Logger
	tracer         trace.Tracer
	dialTimeout    time.Duration
	requestTimeout time.Duration
	maxFrameSize   int
	clientName     string
	clientVersion  string
	sasl           *saslPlain
}

// saslPlain are the credentials for a cluster whose listener runs SASL/PLAIN
// (Fluss's security.protocol.map LISTENER:SASL).
type saslPlain struct {
	username, password string
}

// Option configures Dial.
type Option func(*options)

// WithLogger sets the logger; the default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithTracerProvider sets where spans go; the default is the global provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracer = tp.Tracer(instrumentationName) }
}

// WithDialTimeout bounds each TCP connect.
func WithDialTimeout(d time.Duration) Option { return func(o *options) { o.dialTimeout = d } }

// WithRequestTimeout is the deadline given to calls whose context has none.
func WithRequestTimeout(d time.Duration) Option { return func(o *options) { o.requestTimeout = d } }

// WithMaxFrameSize bounds the size of a response frame the client accepts.
func WithMaxFrameSize(n int) Option { return func(o *options) { o.maxFrameSize = n } }

// WithClientSoftware sets the name and version the client announces in
// ApiVersions (visible in server logs).
func WithClientSoftware(name, version string) Option {
	return func(o *options) { o.clientName, o.clientVersion = name, version }
}

// WithSASLPlain authenticates every connection with SASL/PLAIN, as Fluss's
// Java client does with client.security.protocol=SASL and
// client.security.sasl.username/password.
func WithSASLPlain(username, password string) Option {
	return func(o *options) { o.sasl = &saslPlain{username: username, password: password} }
}

func (o *options) validate() error {
	switch {
	case o.logger == nil:
		return errors.New("fluss: option logger: nil")
	case o.dialTimeout <= 0:
		return fmt.Errorf("fluss: option dial timeout: %v is not positive", o.dialTimeout)
	case o.requestTimeout <= 0:
		return fmt.Errorf("fluss: option request timeout: %v is not positive", o.requestTimeout)
	case o.maxFrameSize < 1024:
		return fmt.Errorf("fluss: option max frame size: %d is below 1024", o.maxFrameSize)
	case o.clientName == "" || o.clientVersion == "":
		return errors.New("fluss: option client software: name and version must not be empty")
	case o.sasl != nil && (o.sasl.username == "" || o.sasl.password == ""):
		return errors.New("fluss: option SASL/PLAIN: user name and password must not be empty")
	case o.sasl != nil && strings.ContainsRune(o.sasl.username+o.sasl.password, 0):
		return errors.New("fluss: option SASL/PLAIN: user name and password must not contain NUL")
	}
	return nil
}

// Client talks to one Fluss cluster.
type Client struct {
	opts      options
	bootstrap []string

	closed          atomic.Bool
	lastCoordinator atomic.Value // string: the coordinator address that answered last

	poolMu sync.Mutex
	pool   map[string]*poolEntry

	meta metadataCache
}

// poolEntry holds the connection to one server address. Its mutex makes
// concurrent callers share one dial instead of racing.
type poolEntry struct {
	mu sync.Mutex
	c  *conn
}

// Dial connects to a Fluss cluster. bootstrap is the coordinator address
// (host:port), or several separated by commas; Dial fails unless one of them
// answers the ApiVersions handshake.
func Dial(ctx context.Context, bootstrap string, opts ...Option) (*Client, error) {
	o := options{
		logger:         slog.Default(),
		tracer:         otel.GetTracerProvider().Tracer(instrumentationName),
		dialTimeout:    DefaultDialTimeout,
		requestTimeout: DefaultRequestTimeout,
		maxFrameSize:   DefaultMaxFrameSize,
		clientName:     DefaultClientName,
		clientVersion:  DefaultClientVersion,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	var addrs []string
	for _, a := range strings.Split(bootstrap, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("fluss: bootstrap: no address in %q", bootstrap)
	}
	c := &Client{opts: o, bootstrap: addrs, pool: make(map[string]*poolEntry)}
	c.meta.init()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	if _, _, err := c.coordinatorConn(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// DialAuthorized is Dial followed by a metadata call: on a SASL listener
// the handshake passes without a login, so only a call proves that the
// client may use the cluster (IsAuthentication tells a refused login).
func DialAuthorized(ctx context.Context, bootstrap string, opts ...Option) (*Client, error) {
	c, err := Dial(ctx, bootstrap, opts...)
	if err != nil {
		return nil, err
	}
	if _, err := c.ListDatabases(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Ping checks that the coordinator answers, over a live connection (dialing
// one if needed). For readiness probes.
func (c *Client) Ping(ctx context.Context) (err error) {
	ctx, end := c.startSpan(ctx, "Ping")
	defer end(&err)
	req := &flussrpc.ApiVersionsRequest{
		ClientSoftwareName:    proto.String(c.opts.clientName),
		ClientSoftwareVersion: proto.String(c.opts.clientVersion),
	}
	return c.callCoordinator(ctx, APIVersions, true, req, &flussrpc.ApiVersionsResponse{})
}

// Close closes every connection and waits for their reader goroutines.
// Calls in flight fail with ErrClosed; later calls too.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.poolMu.Lock()
	entries := c.pool
	c.pool = map[string]*poolEntry{}
	c.poolMu.Unlock()
	for _, e := range entries {
		e.mu.Lock()
		if e.c != nil {
			e.c.shutdown()
			e.c = nil
		}
		e.mu.Unlock()
	}
	return nil
}

func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.opts.requestTimeout)
}

// connTo returns a live connection to addr, dialing if there is none or the
// last one broke.
func (c *Client) connTo(ctx context.Context, addr string) (*conn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	c.poolMu.Lock()
	e, ok := c.pool[addr]
	if !ok {
		e = &poolEntry{}
		c.pool[addr] = e
	}
	c.poolMu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c != nil && !e.c.broken() {
		return e.c, nil
	}
	if e.c != nil {
		e.c.shutdown() // reap the old reader goroutine
		e.c = nil
	}
	nc, err := dialConn(ctx, addr, &c.opts)
	if err != nil {
		return nil, err
	}
	if c.closed.Load() { // Close ran while we dialed
		nc.shutdown()
		return nil, ErrClosed
	}
	e.c = nc
	return nc, nil
}

// coordinatorConn returns a connection to the coordinator: the first
// bootstrap address that answers, else the address metadata advertised last.
// Bootstrap comes first because it is what the operator configured as
// reachable; advertised addresses may be names only the cluster resolves.
func (c *Client) coordinatorConn(ctx context.Context) (*conn, string, error) {
	addrs := c.bootstrap
	if known := c.meta.coordinatorAddr(); known != "" && !slices.Contains(addrs, known) {
		addrs = append(slices.Clone(addrs), known)
	}
	// The address that worked last goes first, so that a dead bootstrap
	// address costs one failed dial, not one per call.
	if last, _ := c.lastCoordinator.Load().(string); last != "" && last != addrs[0] {
		addrs = append([]string{last}, slices.DeleteFunc(slices.Clone(addrs), func(a string) bool { return a == last })...)
	}
	var errs []error
	for _, a := range addrs {
		cn, err := c.connTo(ctx, a)
		if err == nil {
			c.lastCoordinator.Store(a)
			return cn, a, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			break
		}
	}
	return nil, "", fmt.Errorf("fluss: no coordinator reachable: %w", errors.Join(errs...))
}

// callCoordinator runs one RPC against the coordinator. Read-only calls are
// retried once on a fresh connection when the pooled one turns out broken
// (e.g. the server closed it while idle): that cannot apply anything twice.
func (c *Client) callCoordinator(ctx context.Context, key APIKey, readOnly bool, req, resp proto.Message) error {
	for attempt := 0; ; attempt++ {
		cn, _, err := c.coordinatorConn(ctx)
		if err != nil {
			return err
		}
		err = cn.roundTrip(ctx, key, req, resp)
		if err == nil || !readOnly || attempt > 0 || !errors.Is(err, ErrConnectionBroken) || ctx.Err() != nil {
			return err
		}
		c.opts.logger.Debug("fluss: retrying read-only call on a fresh connection", "api", key.String(), "err", err)
	}
}

// callServer runs one RPC against the server at addr, with the same retry
// rule as callCoordinator.
func (c *Client) callServer(ctx context.Context, addr string, key APIKey, readOnly bool, req, resp proto.Message) error {
	for attempt := 0; ; attempt++ {
		cn, err := c.connTo(ctx, addr)
		if err != nil {
			return err
		}
		err = cn.roundTrip(ctx, key, req, resp)
		if err == nil || !readOnly || attempt > 0 || !errors.Is(err, ErrConnectionBroken) || ctx.Err() != nil {
			return err
		}
		c.opts.logger.Debug("fluss: retrying read-only call on a fresh connection", "api", key.String(), "server", addr, "err", err)
	}
}

// callServerParts sends a request already encoded as parts (see
// conn.roundTripParts) to the server at addr. It never retries: it carries
// writes.
func (c *Client) callServerParts(ctx context.Context, addr string, key APIKey, parts [][]byte, resp proto.Message) error {
	cn, err := c.connTo(ctx, addr)
	if err != nil {
		return err
	}
	return cn.roundTripParts(ctx, key, parts, resp)
}

// startSpan starts a client span for a public call and applies the default
// request timeout. The returned end function records err on the span.
func (c *Client) startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(*error)) {
	ctx, cancel := c.withTimeout(ctx)
	ctx, span := c.opts.tracer.Start(ctx, "fluss."+name,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, func(errp *error) {
		if err := *errp; err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
		cancel()
	}
}
