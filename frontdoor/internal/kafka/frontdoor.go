package kafka

import (
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"path/filepath"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/fetchsession"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Deps are the backends and policies the handlers use.
type Deps struct {
	Catalog    *backends.Catalog
	Transcoder *backends.Transcoder
	Appender   *backends.Appender
	// Fetcher serves Fetch, ListOffsets and (keeping their offsets)
	// consumer groups; nil leaves them unserved and makes a Fetch close
	// its connection.
	Fetcher *backends.Fetcher
	// FetchSessions bounds the incremental fetch session cache (KIP-227);
	// its zero value means fetchsession.DefaultConfig.
	FetchSessions fetchsession.Config
	// Groups tunes the consumer group coordinator.
	Groups  groups.Config
	Produce ProduceConfig
	// Idempotence tunes idempotent produce; its zero value means
	// idempotence.DefaultConfig. DisableIdempotence leaves InitProducerId
	// unserved (and unadvertised), so clients with idempotence fail fast
	// and batches with a producer id are refused.
	Idempotence        idempotence.Config
	DisableIdempotence bool
	// Transactions bounds the transaction coordinator (served with
	// idempotence and Fetcher); its zero value means txn.DefaultConfig.
	Transactions txn.Config
	// StateDir, when set, keeps anchors of the idempotent producer state in
	// this directory so that it can be rebuilt from the Fluss log after a
	// restart (docs/idempotence.md); empty keeps the state in memory only.
	StateDir string
	// SASL, when set, requires SASL/PLAIN authentication on every
	// connection and registers the SASL APIs.
	SASL PlainAuthenticator
	// Scram, when set, requires SASL authentication on every connection
	// and offers SCRAM-SHA-256/512 (beside PLAIN when SASL is set too).
	Scram ScramAuthenticator
	// Token, when set, requires SASL authentication on every connection
	// and offers OAUTHBEARER; sessions end with their token (KIP-368).
	Token TokenAuthenticator
	// Authorizer, when set, checks every topic of Produce and Metadata
	// (WithAuthorizer).
	Authorizer Authorizer
	// CertPrincipal, when set, names a connection's user from its verified
	// client certificate (WithClientCertPrincipal).
	CertPrincipal  func(*x509.Certificate) (string, error)
	TracerProvider trace.TracerProvider
	// MeterProvider receives the frontdoor's metrics (default: no-op).
	MeterProvider metric.MeterProvider
	Logger        *slog.Logger
	// Listener, when set, is served instead of binding Config.Listen.
	Listener net.Listener
}

// NewFrontdoor builds the registry of every served API and the server.
func NewFrontdoor(cfg Config, d Deps) (*Server, error) {
	if d.Catalog == nil || d.Transcoder == nil || d.Appender == nil {
		return nil, errors.New("kafka: Deps needs Catalog, Transcoder and Appender")
	}
	if err := d.Produce.Validate(); err != nil {
		return nil, err
	}
	if d.TracerProvider == nil {
		d.TracerProvider = noop.NewTracerProvider()
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	tracer := d.TracerProvider.Tracer("github.com/ferrygw/ferry/frontdoor/internal/kafka")
	var states *idempotence.States
	if !d.DisableIdempotence {
		if d.Idempotence == (idempotence.Config{}) {
			d.Idempotence = idempotence.DefaultConfig()
		}
		var err error
		if states, err = idempotence.New(d.Idempotence, d.Appender.InitWriter); err != nil {
			return nil, err
		}
		if d.StateDir != "" {
			if err := states.Persist(d.StateDir, d.Appender, d.Logger); err != nil {
				return nil, err
			}
		}
	}
	ok := false
	defer func() {
		if !ok && states != nil {
			_ = states.StopPersisting()
		}
	}()
	metrics, err := newServerMetrics(d.MeterProvider)
	if err != nil {
		return nil, err
	}
	if d.FetchSessions == (fetchsession.Config{}) {
		d.FetchSessions = fetchsession.DefaultConfig()
	}
	fh := &fetchHandler{catalog: d.Catalog, fetcher: d.Fetcher, sessions: fetchsession.New(d.FetchSessions)}
	if err := registerFetchSessionMetrics(metrics.meter, fh); err != nil {
		return nil, err
	}
	var reg *Registry
	apis := []API{
		apiVersionsAPI(func() *Registry { return reg }),
		(&metadataHandler{catalog: d.Catalog}).api(),
		fh.api(),
	}
	prod := &producer{cfg: d.Produce, catalog: d.Catalog, tc: d.Transcoder, ap: d.Appender, seq: NewSequencer(), idem: states, tracer: tracer, metrics: metrics}
	var gh *groupHandlers
	if d.Fetcher != nil {
		gcfg := d.Groups
		gcfg.OnRebalance = metrics.rebalanced
		gh = &groupHandlers{coord: groups.New(gcfg, d.Fetcher, d.Logger), catalog: d.Catalog}
		if err := registerGroupLag(metrics.meter, &groupLag{coord: gh.coord, catalog: d.Catalog, fetcher: d.Fetcher}); err != nil {
			return nil, err
		}
		apis = append(apis, (&listOffsetsHandler{catalog: d.Catalog, fetcher: d.Fetcher}).api())
		apis = append(apis, (&offsetForLeaderEpochHandler{catalog: d.Catalog, fetcher: d.Fetcher}).api())
		apis = append(apis, gh.apis()...)
	}
	var th *txnHandlers
	if gh != nil && states != nil {
		tcfg := d.Transactions
		if d.StateDir != "" && tcfg.StateDir == "" {
			// Beside the idempotence anchors: one directory per frontdoor.
			tcfg.StateDir = filepath.Join(d.StateDir, "transactions")
		}
		coord, err := txn.New(tcfg, txnBackend{ap: d.Appender, groups: gh.coord}, d.Logger, d.TracerProvider, d.MeterProvider)
		if err != nil {
			return nil, err
		}
		defer func() {
			if !ok {
				coord.Close()
			}
		}()
		th = &txnHandlers{coord: coord, groups: gh}
		gh.pendingTxnOffset = coord.PendingOffset
		apis = append(apis, th.apis()...)
	}
	apis = append(apis, (&findCoordinatorHandler{groups: gh, txns: th != nil}).api())
	if states != nil {
		ih := &initProducerIDHandler{states: states}
		if th != nil {
			ih.txns, prod.txns = th, th.coord
		}
		apis = append(apis, ih.api())
	}
	apis = append(apis, prod.api())
	apis = append(apis, adminAPIs(cfg, d, states)...)
	opts := []Option{WithLogger(d.Logger), WithTracerProvider(d.TracerProvider), withMetrics(metrics), withProducerStates(states)}
	if th != nil {
		opts = append(opts, withTxnCoordinator(th.coord))
	}
	if d.Listener != nil {
		opts = append(opts, WithListener(d.Listener))
	}
	if d.SASL != nil || d.Scram != nil || d.Token != nil {
		apis = append(apis, (&saslHandler{auth: d.SASL, scram: d.Scram, token: d.Token}).apis()...)
	}
	if d.SASL != nil {
		opts = append(opts, WithSASLPlain(d.SASL))
	}
	if d.Scram != nil || d.Token != nil {
		opts = append(opts, requireSASL())
	}
	if d.Authorizer != nil {
		opts = append(opts, WithAuthorizer(d.Authorizer))
	}
	if d.CertPrincipal != nil {
		opts = append(opts, WithClientCertPrincipal(d.CertPrincipal))
	}
	if reg, err = NewRegistry(apis...); err != nil {
		return nil, err
	}
	srv, err := NewServer(cfg, reg, opts...)
	if err != nil {
		return nil, err
	}
	ok = true
	return srv, nil
}
