package broker

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
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/admin"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/consume"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/groupapi"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/produce"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/txnapi"
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
	Produce produce.ProduceConfig
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
	SASL kafka.PlainAuthenticator
	// Scram, when set, requires SASL authentication on every connection
	// and offers SCRAM-SHA-256/512 (beside PLAIN when SASL is set too).
	Scram kafka.ScramAuthenticator
	// Token, when set, requires SASL authentication on every connection
	// and offers OAUTHBEARER; sessions end with their token (KIP-368).
	Token kafka.TokenAuthenticator
	// Authorizer, when set, checks every topic of Produce and Metadata
	// (WithAuthorizer).
	Authorizer kafka.Authorizer
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
func NewFrontdoor(cfg kafka.Config, d Deps) (*kafka.Server, error) {
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
	metrics, err := kafka.NewServerMetrics(d.MeterProvider)
	if err != nil {
		return nil, err
	}
	if d.FetchSessions == (fetchsession.Config{}) {
		d.FetchSessions = fetchsession.DefaultConfig()
	}
	consumeAPIs, err := consume.APIs(metrics.Meter(), d.Catalog, d.Fetcher, d.FetchSessions)
	if err != nil {
		return nil, err
	}
	gcfg := d.Groups
	gcfg.OnRebalance = metrics.Rebalanced
	gh, err := groupapi.New(metrics.Meter(), gcfg, d.Catalog, d.Fetcher, d.Logger)
	if err != nil {
		return nil, err
	}
	var th *txnapi.Handlers
	var txns *produce.Transactions
	if gh != nil && states != nil {
		tcfg := d.Transactions
		if d.StateDir != "" && tcfg.StateDir == "" {
			// Beside the idempotence anchors: one directory per frontdoor.
			tcfg.StateDir = filepath.Join(d.StateDir, "transactions")
		}
		if th, err = txnapi.New(tcfg, d.Catalog, d.Appender, gh, d.Logger, d.TracerProvider, d.MeterProvider); err != nil {
			return nil, err
		}
		defer func() {
			if !ok {
				th.Coordinator().Close()
			}
		}()
		txns = &produce.Transactions{Coordinator: th.Coordinator(), Owned: th.Owned}
	}
	var reg *kafka.Registry
	apis := kafka.APIs(func() *kafka.Registry { return reg }, d.Catalog, d.SASL, d.Scram, d.Token)
	apis = append(apis, produce.APIs(d.Produce, d.Catalog, d.Transcoder, d.Appender, states, tracer, metrics, txns)...)
	apis = append(apis, consumeAPIs...)
	apis = append(apis, groupapi.APIs(gh)...)
	if th != nil {
		apis = append(apis, th.APIs()...)
	}
	apis = append(apis, admin.APIs(cfg, admin.Deps{Catalog: d.Catalog, Produce: d.Produce, SASL: d.SASL, Scram: d.Scram, Token: d.Token}, states)...)
	opts := []kafka.Option{kafka.WithLogger(d.Logger), kafka.WithTracerProvider(d.TracerProvider), kafka.WithMetrics(metrics), kafka.WithProducerStates(states)}
	if th != nil {
		opts = append(opts, kafka.WithTxnCoordinator(th.Coordinator()))
	}
	if d.Listener != nil {
		opts = append(opts, kafka.WithListener(d.Listener))
	}
	if d.SASL != nil {
		opts = append(opts, kafka.WithSASLPlain(d.SASL))
	}
	if d.Scram != nil || d.Token != nil {
		opts = append(opts, kafka.RequireSASL())
	}
	if d.Authorizer != nil {
		opts = append(opts, kafka.WithAuthorizer(d.Authorizer))
	}
	if d.CertPrincipal != nil {
		opts = append(opts, kafka.WithClientCertPrincipal(d.CertPrincipal))
	}
	if reg, err = kafka.NewRegistry(apis...); err != nil {
		return nil, err
	}
	srv, err := kafka.NewServer(cfg, reg, opts...)
	if err != nil {
		return nil, err
	}
	ok = true
	return srv, nil
}
