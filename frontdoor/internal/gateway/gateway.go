// Package gateway wires frontdoor together: its settings, the gRPC clients
// of the backends, and the Kafka listener as a runtime component.
package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/saslplain"
	"github.com/ferrygw/ferry/frontdoor/internal/streampool"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/runtime"
)

// Setting names shared with the stack launcher and deploy files.
const (
	EnvKafkaListen    = "FERRY_KAFKA_LISTEN"
	FlagKafkaListen   = "kafka-listen"
	EnvAdvertisedAddr = "FERRY_ADVERTISED_ADDR"
	EnvSASLUsersFile  = "FERRY_SASL_USERS_FILE"
	FlagSASLUsersFile = "sasl-users-file"
	EnvTLSCert        = "FERRY_KAFKA_TLS_CERT"
	FlagTLSCert       = "kafka-tls-cert"
	EnvTLSKey         = "FERRY_KAFKA_TLS_KEY"
	FlagTLSKey        = "kafka-tls-key"
	EnvStateDir       = "FERRY_STATE_DIR"
	FlagStateDir      = "state-dir"
)

// Config is frontdoor's own configuration.
type Config struct {
	KafkaListen    string // Kafka protocol listener host:port
	AdvertisedAddr string // host:port given to clients in Metadata; empty: derived from KafkaListen
	NodeID         int    // broker id this frontdoor presents to Kafka clients
	Rack           string // broker rack in Metadata; empty: none
	CatalogAddr    string // catalogsvc gRPC address
	TranscodeAddrs string // transcodesvc gRPC addresses, comma-separated; one stream per resolved address
	// TranscodeResolveInterval is how often TranscodeAddrs names are
	// resolved again (0: only at start).
	TranscodeResolveInterval time.Duration
	AppendAddr               string // appendsvc gRPC address(es), comma-separated

	SASLUsersFile string // users file for SASL/PLAIN; empty: no authentication
	TLSCertFile   string // PEM certificate for the Kafka listener; empty: plaintext
	TLSKeyFile    string

	MaxRequestBytes     int
	MaxMessageBytes     int
	IdleTimeout         time.Duration
	MaxConnections      int
	ConnInFlightBytes   int
	ServerInFlightBytes int
	MappingTTL          time.Duration
	HeartbeatLease      time.Duration

	// Idempotent producers (docs/idempotence.md).
	DisableIdempotence bool
	ProducerIdleExpiry time.Duration
	MaxProducers       int
	StateDir           string
}

// Declare registers frontdoor's settings on s and returns the config they
// fill in.
func Declare(s *runtime.Settings) *Config {
	c := &Config{}
	kd := kafka.DefaultConfig()
	pd := kafka.DefaultProduceConfig()
	s.StringVar(&c.KafkaListen, runtime.Spec[string]{Flag: FlagKafkaListen, Env: EnvKafkaListen,
		Default: ":9092", Usage: "Kafka protocol listen address host:port", Validate: runtime.ListenAddr})
	s.StringVar(&c.AdvertisedAddr, runtime.Spec[string]{Flag: "advertised-addr", Env: EnvAdvertisedAddr,
		Usage:    "host:port Kafka clients are told to connect to (empty: derived from -kafka-listen)",
		Validate: runtime.OptionalDialAddr})
	s.IntVar(&c.NodeID, runtime.Spec[int]{Flag: "node-id", Env: "FERRY_NODE_ID",
		Usage: "broker node id presented to Kafka clients (unique per frontdoor)", Validate: nonNegative})
	s.StringVar(&c.Rack, runtime.Spec[string]{Flag: "rack", Env: "FERRY_RACK", Usage: "broker rack presented to Kafka clients"})
	s.StringVar(&c.CatalogAddr, runtime.Spec[string]{Flag: "catalog-addr", Env: "FERRY_CATALOG_ADDR",
		Default: "127.0.0.1:7101", Usage: "catalogsvc gRPC address host:port", Validate: runtime.DialAddr})
	s.StringVar(&c.TranscodeAddrs, runtime.Spec[string]{Flag: "transcode-addr", Env: "FERRY_TRANSCODE_ADDR",
		Default: "127.0.0.1:7102", Usage: "transcodesvc gRPC addresses host:port[,host:port...]; a name stands for every address it resolves to; jobs go to the least busy instance",
		Validate: runtime.DialAddrList})
	s.DurationVar(&c.TranscodeResolveInterval, runtime.Spec[time.Duration]{Flag: "transcode-resolve-interval", Env: "FERRY_TRANSCODE_RESOLVE_INTERVAL",
		Default: 10 * time.Second, Validate: nonNegativeDuration,
		Usage: "how often the -transcode-addr names are resolved again; each address a name resolves to is one transcodesvc instance (0: only at start)"})
	s.StringVar(&c.AppendAddr, runtime.Spec[string]{Flag: "append-addr", Env: "FERRY_APPEND_ADDR",
		Default: "127.0.0.1:7103", Usage: "appendsvc gRPC address host:port[,host:port...]", Validate: runtime.DialAddrList})
	s.StringVar(&c.SASLUsersFile, runtime.Spec[string]{Flag: FlagSASLUsersFile, Env: EnvSASLUsersFile,
		Usage: "SASL/PLAIN users file (lines user:bcrypt-hash[:topic,...]; hashes from `frontdoor hash-password`); empty: no authentication"})
	s.StringVar(&c.TLSCertFile, runtime.Spec[string]{Flag: FlagTLSCert, Env: EnvTLSCert, Usage: "PEM certificate for the Kafka listener; empty: plaintext"})
	s.StringVar(&c.TLSKeyFile, runtime.Spec[string]{Flag: FlagTLSKey, Env: EnvTLSKey, Usage: "PEM private key for -kafka-tls-cert"})
	s.IntVar(&c.MaxRequestBytes, runtime.Spec[int]{Flag: "kafka-max-request-bytes", Env: "FERRY_KAFKA_MAX_REQUEST_BYTES",
		Default: int(kd.MaxRequestBytes), Validate: positive, Usage: "largest Kafka request frame; larger ones close the connection"})
	s.IntVar(&c.MaxMessageBytes, runtime.Spec[int]{Flag: "kafka-max-message-bytes", Env: "FERRY_KAFKA_MAX_MESSAGE_BYTES",
		Default: pd.MaxMessageBytes, Validate: positive, Usage: "largest record batch per partition (MESSAGE_TOO_LARGE beyond)"})
	s.DurationVar(&c.IdleTimeout, runtime.Spec[time.Duration]{Flag: "kafka-idle-timeout", Env: "FERRY_KAFKA_IDLE_TIMEOUT",
		Default: kd.IdleTimeout, Validate: runtime.PositiveDuration, Usage: "close Kafka connections idle this long"})
	s.IntVar(&c.MaxConnections, runtime.Spec[int]{Flag: "kafka-max-connections", Env: "FERRY_KAFKA_MAX_CONNECTIONS",
		Default: kd.MaxConnections, Validate: positive, Usage: "concurrent Kafka connections"})
	s.IntVar(&c.ConnInFlightBytes, runtime.Spec[int]{Flag: "kafka-conn-inflight-bytes", Env: "FERRY_KAFKA_CONN_INFLIGHT_BYTES",
		Default: int(kd.ConnInFlightBytes), Validate: positive, Usage: "request bytes in flight per connection before it stops reading"})
	s.IntVar(&c.ServerInFlightBytes, runtime.Spec[int]{Flag: "kafka-inflight-bytes", Env: "FERRY_KAFKA_INFLIGHT_BYTES",
		Default: int(kd.ServerInFlightBytes), Validate: positive, Usage: "request bytes in flight over all connections before reading stops"})
	s.DurationVar(&c.MappingTTL, runtime.Spec[time.Duration]{Flag: "mapping-ttl", Env: "FERRY_MAPPING_TTL",
		Default: 30 * time.Second, Validate: runtime.PositiveDuration, Usage: "how long a topic mapping is cached"})
	s.DurationVar(&c.HeartbeatLease, runtime.Spec[time.Duration]{Flag: "broker-lease", Env: "FERRY_BROKER_LEASE",
		Default: 15 * time.Second, Validate: runtime.PositiveDuration, Usage: "registration lease with catalogsvc; renewed every third of it"})
	id := kafka.DefaultIdempotenceConfig()
	s.BoolVar(&c.DisableIdempotence, runtime.Spec[bool]{Flag: "disable-idempotence", Env: "FERRY_DISABLE_IDEMPOTENCE",
		Usage: "do not serve InitProducerId: idempotent producers (the Java and franz-go default) fail or fall back"})
	s.DurationVar(&c.ProducerIdleExpiry, runtime.Spec[time.Duration]{Flag: "producer-idle-expiry", Env: "FERRY_PRODUCER_IDLE_EXPIRY",
		Default: id.ProducerIdleExpiry, Validate: runtime.PositiveDuration,
		Usage: "forget an idempotent producer's sequences after this long without a batch; keep below Fluss's server.writer-id.expiration-time"})
	s.IntVar(&c.MaxProducers, runtime.Spec[int]{Flag: "max-producers", Env: "FERRY_MAX_PRODUCERS",
		Default: id.MaxProducers, Validate: positive, Usage: "idempotent producers with state; beyond it the longest idle is forgotten"})
	s.StringVar(&c.StateDir, runtime.Spec[string]{Flag: FlagStateDir, Env: EnvStateDir,
		Usage: "directory (one frontdoor's own, kept across restarts) for anchors that let idempotent producer state be rebuilt from the Fluss log after a restart; empty: state in memory only, lost on restart"})
	return c
}

func nonNegativeDuration(d time.Duration) error {
	if d < 0 {
		return errors.New("must be >= 0")
	}
	return nil
}

func nonNegative(n int) error {
	if n < 0 {
		return errors.New("must be >= 0")
	}
	return nil
}

func positive(n int) error {
	if n <= 0 {
		return errors.New("must be positive")
	}
	return nil
}

// Validate checks what single settings cannot: combinations.
func (c *Config) Validate() error {
	if err := (kafka.IdempotenceConfig{ProducerIdleExpiry: c.ProducerIdleExpiry, MaxProducers: c.MaxProducers}).Validate(); err != nil {
		return &runtime.SettingError{Env: "FERRY_PRODUCER_IDLE_EXPIRY", Flag: "producer-idle-expiry", Value: c.ProducerIdleExpiry.String(), Err: err}
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return &runtime.SettingError{Env: EnvTLSKey, Flag: FlagTLSKey, Value: c.TLSKeyFile,
			Err: errors.New("set both -kafka-tls-cert and -kafka-tls-key, or neither")}
	}
	if c.ConnInFlightBytes < c.MaxRequestBytes {
		return &runtime.SettingError{Env: "FERRY_KAFKA_CONN_INFLIGHT_BYTES", Flag: "kafka-conn-inflight-bytes",
			Value: strconv.Itoa(c.ConnInFlightBytes), Err: fmt.Errorf("below -kafka-max-request-bytes %d", c.MaxRequestBytes)}
	}
	if c.ServerInFlightBytes < c.ConnInFlightBytes {
		return &runtime.SettingError{Env: "FERRY_KAFKA_INFLIGHT_BYTES", Flag: "kafka-inflight-bytes",
			Value: strconv.Itoa(c.ServerInFlightBytes), Err: fmt.Errorf("below -kafka-conn-inflight-bytes %d", c.ConnInFlightBytes)}
	}
	if c.MaxRequestBytes > 1<<30 {
		return &runtime.SettingError{Env: "FERRY_KAFKA_MAX_REQUEST_BYTES", Flag: "kafka-max-request-bytes",
			Value: strconv.Itoa(c.MaxRequestBytes), Err: errors.New("above 1 GiB")}
	}
	return nil
}

// advertised returns the broker address clients are given: the configured
// one, or the listener's with an unspecified host replaced by loopback.
func (c *Config) advertised(bound net.Addr) (string, int, error) {
	addr := c.AdvertisedAddr
	if addr == "" {
		addr = bound.String()
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 {
		port = bound.(*net.TCPAddr).Port
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return host, port, nil
}

// Setup dials the backends and adds the pools, the registration heartbeat
// and the Kafka listener to app. The listener is added last so that it
// stops first: it drains its connections while the backends still work.
func Setup(ctx context.Context, app *runtime.App, c *Config) error {
	log := app.Logger
	var tlsCfg *tls.Config
	if c.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return &runtime.SettingError{Env: EnvTLSCert, Flag: FlagTLSCert, Value: c.TLSCertFile, Action: "cannot load", Err: err}
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	var users *saslplain.Users
	if c.SASLUsersFile != "" {
		var err error
		if users, err = saslplain.LoadFile(c.SASLUsersFile); err != nil {
			return &runtime.SettingError{Env: EnvSASLUsersFile, Flag: FlagSASLUsersFile, Value: c.SASLUsersFile, Action: "cannot use", Err: err}
		}
		log.Info("sasl/plain enabled", "users", users.Len())
	}

	ln, err := runtime.ListenTCP(c.KafkaListen, EnvKafkaListen, FlagKafkaListen)
	if err != nil {
		return err
	}
	closeLn := true
	defer func() {
		if closeLn {
			_ = ln.Close()
		}
	}()
	host, port, err := c.advertised(ln.Addr())
	if err != nil {
		return &runtime.SettingError{Env: EnvAdvertisedAddr, Flag: "advertised-addr", Value: c.AdvertisedAddr, Err: err}
	}
	if c.AdvertisedAddr == "" {
		log.Info("advertising the Kafka listener as "+net.JoinHostPort(host, strconv.Itoa(port))+"; set FERRY_ADVERTISED_ADDR for remote clients",
			"kafka_listen", ln.Addr().String())
	}

	catConn, err := app.Dial("catalogsvc", c.CatalogAddr)
	if err != nil {
		return err
	}
	self := &catalogv1.Broker{NodeId: int32(c.NodeID), Host: host, Port: int32(port), Rack: c.Rack}
	catalog, err := backends.NewCatalog(backends.CatalogConfig{
		TTL: c.MappingTTL, NegativeTTL: time.Second, CallTimeout: 5 * time.Second, Lease: c.HeartbeatLease, Self: self,
	}, catConn, log)
	if err != nil {
		return err
	}
	dialAll := func(peer, list string) ([]streampool.Backend, error) {
		var out []streampool.Backend
		for _, a := range runtime.SplitList(list) {
			// One connection per instance: the pool balances by itself
			// and must see each instance fail on its own.
			cc, err := app.Dial(peer, a)
			if err != nil {
				return nil, err
			}
			out = append(out, streampool.Backend{Addr: a, Conn: cc})
		}
		return out, nil
	}
	// Transcoders are stateless and scaled out: each name stands for every
	// address it resolves to (see transcoderSet).
	tcSet := newTranscoderSet(runtime.SplitList(c.TranscodeAddrs), c.TranscodeResolveInterval, app.Telemetry, app.Security, log)
	tcBackends, err := tcSet.backends(ctx)
	if err != nil {
		return err
	}
	apBackends, err := dialAll("appendsvc", c.AppendAddr)
	if err != nil {
		return err
	}
	prop := app.Telemetry.Propagator
	poolCfg := streampool.Config{Name: "transcode", MinBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second}
	tc, err := backends.NewTranscoder(poolCfg, tcBackends, prop, log)
	if err != nil {
		return err
	}
	tcSet.pool = tc
	poolCfg.Name = "append"
	ap, err := backends.NewAppender(poolCfg, apBackends, prop, log)
	if err != nil {
		return err
	}

	kcfg := kafka.DefaultConfig()
	kcfg.Listen = c.KafkaListen
	kcfg.TLS = tlsCfg
	kcfg.MaxRequestBytes = int32(c.MaxRequestBytes)
	kcfg.IdleTimeout = c.IdleTimeout
	kcfg.MaxConnections = c.MaxConnections
	kcfg.ConnInFlightBytes = int64(c.ConnInFlightBytes)
	kcfg.ServerInFlightBytes = int64(c.ServerInFlightBytes)
	pcfg := kafka.DefaultProduceConfig()
	pcfg.MaxMessageBytes = c.MaxMessageBytes
	deps := kafka.Deps{
		Catalog: catalog, Transcoder: tc, Appender: ap, Produce: pcfg,
		TracerProvider: app.Telemetry.TracerProvider, MeterProvider: app.Telemetry.MeterProvider, Logger: log, Listener: ln,
		Idempotence:        kafka.IdempotenceConfig{ProducerIdleExpiry: c.ProducerIdleExpiry, MaxProducers: c.MaxProducers},
		DisableIdempotence: c.DisableIdempotence,
		StateDir:           c.StateDir,
	}
	if users != nil {
		deps.SASL = users
	}
	srv, err := kafka.NewFrontdoor(kcfg, deps)
	if err != nil {
		return err
	}

	app.Add(tcSet) // before the pool, so it stops after it
	app.Add(runtime.ComponentFuncs{ComponentName: "transcode-pool", StartFunc: func(ctx context.Context, _ runtime.Host) error { return tc.Start(ctx) }, ShutdownFunc: tc.Shutdown})
	app.Add(runtime.ComponentFuncs{ComponentName: "append-pool", StartFunc: func(ctx context.Context, _ runtime.Host) error { return ap.Start(ctx) }, ShutdownFunc: ap.Shutdown})
	app.Add(runtime.ComponentFuncs{ComponentName: "catalog-heartbeat", StartFunc: func(ctx context.Context, _ runtime.Host) error { return catalog.StartHeartbeat(ctx) }, ShutdownFunc: catalog.ShutdownHeartbeat})
	app.Add(runtime.ComponentFuncs{
		ComponentName: srv.Name(),
		StartFunc:     func(ctx context.Context, host runtime.Host) error { return srv.Start(ctx, host.ReportFatal) },
		ShutdownFunc:  srv.Shutdown,
	})
	closeLn = false
	return nil
}
