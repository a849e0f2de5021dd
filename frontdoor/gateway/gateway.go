// Package gateway wires frontdoor together: its settings, the gRPC clients
// of the backends, and the Kafka listener as a runtime component.
package gateway

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/certprincipal"
	"github.com/ferrygw/ferry/frontdoor/internal/fetchsession"
	"github.com/ferrygw/ferry/frontdoor/internal/idempotence"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/broker"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/produce"
	"github.com/ferrygw/ferry/frontdoor/internal/oauthbearer"
	"github.com/ferrygw/ferry/frontdoor/internal/reload"
	"github.com/ferrygw/ferry/frontdoor/internal/saslplain"
	"github.com/ferrygw/ferry/frontdoor/internal/saslscram"
	"github.com/ferrygw/ferry/frontdoor/internal/streampool"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
	"github.com/ferrygw/ferry/frontdoor/internal/txnlog"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
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
	EnvTxnLogTable    = "FERRY_TXN_LOG_TABLE"
	FlagTxnLogTable   = "txn-log-table"
	FlagStateDir      = "state-dir"
	EnvACLFile        = "FERRY_ACL_FILE"
	FlagACLFile       = "acl-file"
	EnvSCRAMFile      = "FERRY_SASL_SCRAM_FILE"
	FlagSCRAMFile     = "sasl-scram-file"
	EnvJWKSFile       = "FERRY_SASL_OAUTHBEARER_JWKS_FILE"
	FlagJWKSFile      = "sasl-oauthbearer-jwks-file"
	EnvTLSClientCA    = "FERRY_KAFKA_TLS_CLIENT_CA"
	FlagTLSClientCA   = "kafka-tls-client-ca"
	EnvTLSRules       = "FERRY_KAFKA_TLS_PRINCIPAL_RULES"
	FlagTLSRules      = "kafka-tls-principal-rules"
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
	FetchAddr                string // fetchsvc gRPC address(es), comma-separated; empty: consumers are not served

	SASLUsersFile string // users file for SASL/PLAIN; empty: no authentication
	// SCRAMFile holds SCRAM-SHA-256/512 credentials (saslscram); empty: no
	// SCRAM. It and JWKSFile are read again every SASLReloadInterval.
	SCRAMFile          string
	SASLReloadInterval time.Duration
	// OAUTHBEARER: tokens must be signed by a key of JWKSFile and match
	// the issuer, audience and principal claim.
	JWKSFile                   string
	TokenIssuer, TokenAudience string
	TokenPrincipalClaim        string
	ACLFile                    string // topic ACLs (frontdoor/internal/acl); empty: every principal may use every topic
	// ACLReloadInterval is how often ACLFile is checked for changes.
	ACLReloadInterval time.Duration
	TLSCertFile       string // PEM certificate for the Kafka listener; empty: plaintext
	TLSKeyFile        string
	// TLSClientCA, when set, requires every Kafka client to present a
	// certificate signed by these CAs (mTLS); TLSPrincipalRules names the
	// client from the certificate's subject.
	TLSClientCA       string
	TLSPrincipalRules string

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

	// Transactions (docs/transactions.md).
	TxnMaxTimeout          time.Duration
	TxnMaxStagedBytes      int
	TxnMaxTotalStagedBytes int
	// Fluss, when its bootstrap is set, keeps the transaction journal in
	// TxnLogTable (frontdoor/internal/txnlog); otherwise it is in StateDir.
	Fluss       *runtime.FlussConfig
	TxnLogTable string

	// Incremental fetch sessions (KIP-227).
	FetchSessionSlots int
}

// Declare registers frontdoor's settings on s and returns the config they
// fill in.
func Declare(s *runtime.Settings) *Config {
	c := &Config{}
	kd := kafka.DefaultConfig()
	pd := produce.DefaultProduceConfig()
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
	s.StringVar(&c.FetchAddr, runtime.Spec[string]{Flag: "fetch-addr", Env: "FERRY_FETCH_ADDR",
		Usage:    "fetchsvc gRPC address host:port[,host:port...] serving consumers (Fetch, ListOffsets); empty: consumers are not served (a Fetch closes the connection)",
		Validate: runtime.OptionalDialAddrList})
	s.StringVar(&c.SASLUsersFile, runtime.Spec[string]{Flag: FlagSASLUsersFile, Env: EnvSASLUsersFile,
		Usage: "SASL/PLAIN users file (lines user:bcrypt-hash[:topic,...]; hashes from `frontdoor hash-password`); empty: no authentication"})
	s.StringVar(&c.SCRAMFile, runtime.Spec[string]{Flag: FlagSCRAMFile, Env: EnvSCRAMFile,
		Usage: "SASL/SCRAM-SHA-256/512 credentials file (salted keys; edit with `frontdoor scram-users`); empty: no SCRAM"})
	s.DurationVar(&c.SASLReloadInterval, runtime.Spec[time.Duration]{Flag: "sasl-reload-interval", Env: "FERRY_SASL_RELOAD_INTERVAL",
		Default: 5 * time.Second, Validate: runtime.PositiveDuration, Usage: "how often -sasl-scram-file and -sasl-oauthbearer-jwks-file are read again; a changed file that does not parse keeps the one in force"})
	s.StringVar(&c.JWKSFile, runtime.Spec[string]{Flag: FlagJWKSFile, Env: EnvJWKSFile,
		Usage: "JSON Web Key Set whose keys sign the OAUTHBEARER tokens frontdoor accepts (RS256/384/512, ES256/384/512); empty: no OAUTHBEARER"})
	s.StringVar(&c.TokenIssuer, runtime.Spec[string]{Flag: "sasl-oauthbearer-issuer", Env: "FERRY_SASL_OAUTHBEARER_ISSUER",
		Usage: "the iss an OAUTHBEARER token must carry; empty: any"})
	s.StringVar(&c.TokenAudience, runtime.Spec[string]{Flag: "sasl-oauthbearer-audience", Env: "FERRY_SASL_OAUTHBEARER_AUDIENCE",
		Usage: "an aud an OAUTHBEARER token must carry; empty: any"})
	s.StringVar(&c.TokenPrincipalClaim, runtime.Spec[string]{Flag: "sasl-oauthbearer-principal-claim", Env: "FERRY_SASL_OAUTHBEARER_PRINCIPAL_CLAIM",
		Default: "sub", Usage: "the token claim whose string value is the user (the ACL principal User:<value>)"})
	s.StringVar(&c.ACLFile, runtime.Spec[string]{Flag: FlagACLFile, Env: EnvACLFile,
		Usage: "topic and group ACLs, lines `allow|deny User:<name>|User:* READ|WRITE|DESCRIBE|DELETE|ALL topic:<name>|topic:<prefix>*|topic:*` or the same with `group:` (docs/security.md); empty: no ACLs"})
	s.DurationVar(&c.ACLReloadInterval, runtime.Spec[time.Duration]{Flag: "acl-reload-interval", Env: "FERRY_ACL_RELOAD_INTERVAL",
		Default: 5 * time.Second, Validate: runtime.PositiveDuration, Usage: "how often -acl-file is read again; a changed file that does not parse keeps the rules in force"})
	s.StringVar(&c.TLSCertFile, runtime.Spec[string]{Flag: FlagTLSCert, Env: EnvTLSCert, Usage: "PEM certificate for the Kafka listener; empty: plaintext"})
	s.StringVar(&c.TLSKeyFile, runtime.Spec[string]{Flag: FlagTLSKey, Env: EnvTLSKey, Usage: "PEM private key for -kafka-tls-cert"})
	s.StringVar(&c.TLSClientCA, runtime.Spec[string]{Flag: FlagTLSClientCA, Env: EnvTLSClientCA,
		Usage: "PEM CA certificates Kafka clients' certificates must chain to (mTLS; needs -kafka-tls-cert); empty: no client certificates"})
	s.StringVar(&c.TLSPrincipalRules, runtime.Spec[string]{Flag: FlagTLSRules, Env: EnvTLSRules, Default: "DEFAULT",
		Usage: "how a client certificate's subject becomes the user, as Kafka's ssl.principal.mapping.rules: RULE:pattern/replacement/[LU],...,DEFAULT"})
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
	id := idempotence.DefaultConfig()
	s.BoolVar(&c.DisableIdempotence, runtime.Spec[bool]{Flag: "disable-idempotence", Env: "FERRY_DISABLE_IDEMPOTENCE",
		Usage: "do not serve InitProducerId: idempotent producers (the Java and franz-go default) fail or fall back"})
	s.DurationVar(&c.ProducerIdleExpiry, runtime.Spec[time.Duration]{Flag: "producer-idle-expiry", Env: "FERRY_PRODUCER_IDLE_EXPIRY",
		Default: id.ProducerIdleExpiry, Validate: runtime.PositiveDuration,
		Usage: "forget an idempotent producer's sequences after this long without a batch; keep below Fluss's server.writer-id.expiration-time"})
	s.IntVar(&c.MaxProducers, runtime.Spec[int]{Flag: "max-producers", Env: "FERRY_MAX_PRODUCERS",
		Default: id.MaxProducers, Validate: positive, Usage: "idempotent producers with state; beyond it the longest idle is forgotten"})
	tx := txn.DefaultConfig()
	s.DurationVar(&c.TxnMaxTimeout, runtime.Spec[time.Duration]{Flag: "txn-max-timeout", Env: "FERRY_TXN_MAX_TIMEOUT",
		Default: tx.MaxTimeout, Validate: runtime.PositiveDuration,
		Usage: "the longest transaction.timeout.ms a transactional producer may ask for (Kafka's transaction.max.timeout.ms)"})
	s.IntVar(&c.TxnMaxStagedBytes, runtime.Spec[int]{Flag: "txn-max-staged-bytes", Env: "FERRY_TXN_MAX_STAGED_BYTES",
		Default: int(tx.MaxStagedBytes), Validate: positive,
		Usage: "bytes of transcoded batches one transaction may stage; past it a batch gets MESSAGE_TOO_LARGE"})
	s.IntVar(&c.TxnMaxTotalStagedBytes, runtime.Spec[int]{Flag: "txn-max-total-staged-bytes", Env: "FERRY_TXN_MAX_TOTAL_STAGED_BYTES",
		Default: int(tx.MaxTotalStagedBytes), Validate: positive,
		Usage: "bytes of transcoded batches all open transactions of this frontdoor may stage together"})
	s.IntVar(&c.FetchSessionSlots, runtime.Spec[int]{Flag: "fetch-session-cache-slots", Env: "FERRY_FETCH_SESSION_CACHE_SLOTS",
		Default: fetchsession.DefaultConfig().Slots, Validate: nonNegative,
		Usage: "incremental fetch sessions kept (Kafka's max.incremental.fetch.session.cache.slots); 0: every fetch is a full one"})
	c.Fluss = runtime.DeclareOptionalFluss(s, "Fluss coordinator address(es) host:port[,host:port] for the transaction journal; empty: the journal is in -state-dir (lost with the disk, no failover)")
	s.StringVar(&c.TxnLogTable, runtime.Spec[string]{Flag: FlagTxnLogTable, Env: EnvTxnLogTable, Default: txnlog.DefaultTable,
		Usage: "Fluss table database.table keeping the transaction journal when FERRY_FLUSS_BOOTSTRAP is set; created (with its database) when first needed"})
	s.StringVar(&c.StateDir, runtime.Spec[string]{Flag: FlagStateDir, Env: EnvStateDir,
		Usage: "directory (one frontdoor's own, kept across restarts) for anchors that let idempotent producer state be rebuilt from the Fluss log after a restart, and for the journal of the transactions this frontdoor coordinates; empty: state in memory only, lost on restart"})
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
	if c.Fluss.Bootstrap != "" {
		if err := c.Fluss.Validate(); err != nil {
			return err
		}
	}
	if err := (idempotence.Config{ProducerIdleExpiry: c.ProducerIdleExpiry, MaxProducers: c.MaxProducers}).Validate(); err != nil {
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

// Peers are the clients of the services frontdoor calls, one Backend per
// instance: gRPC clients dialled from the -*-addr settings, or in-process
// ones in the single-process mode. No Fetch instance: consumers are not
// served.
type Peers struct {
	Catalog   catalogv1.CatalogServiceClient
	Transcode []streampool.Backend[transcodev1.TranscodeServiceClient]
	Append    []streampool.Backend[appendv1.AppendServiceClient]
	Fetch     []streampool.Backend[fetchv1.FetchServiceClient]
}

// InProcessPeers are Peers of one instance each, calling servers in this
// process; the -catalog-addr, -transcode-addr, -append-addr and
// -fetch-addr settings are then not used.
func InProcessPeers(cat catalogv1.CatalogServiceClient, tc transcodev1.TranscodeServiceClient, ap appendv1.AppendServiceClient, fe fetchv1.FetchServiceClient) *Peers {
	const addr = "in-process"
	return &Peers{
		Catalog:   cat,
		Transcode: []streampool.Backend[transcodev1.TranscodeServiceClient]{{Addr: addr, Client: tc}},
		Append:    []streampool.Backend[appendv1.AppendServiceClient]{{Addr: addr, Client: ap}},
		Fetch:     []streampool.Backend[fetchv1.FetchServiceClient]{{Addr: addr, Client: fe}},
	}
}

// dial connects to the services at the configured addresses. Transcoders
// are stateless and scaled out: each name stands for every address it
// resolves to, kept up to date by the returned set.
func (c *Config) dial(ctx context.Context, app *runtime.App) (*Peers, *transcoderSet, error) {
	catConn, err := app.Dial("catalogsvc", c.CatalogAddr)
	if err != nil {
		return nil, nil, err
	}
	p := &Peers{Catalog: catalogv1.NewCatalogServiceClient(catConn)}
	tcSet := newTranscoderSet(runtime.SplitList(c.TranscodeAddrs), c.TranscodeResolveInterval, app.Telemetry, app.Security, app.Logger)
	if p.Transcode, err = tcSet.backends(ctx); err != nil {
		return nil, nil, err
	}
	// One connection per instance: the pools balance by themselves and
	// must see each instance fail on its own.
	for _, a := range runtime.SplitList(c.AppendAddr) {
		cc, err := app.Dial("appendsvc", a)
		if err != nil {
			return nil, nil, err
		}
		p.Append = append(p.Append, streampool.Backend[appendv1.AppendServiceClient]{Addr: a, Client: appendv1.NewAppendServiceClient(cc)})
	}
	for _, a := range runtime.SplitList(c.FetchAddr) {
		cc, err := app.Dial("fetchsvc", a)
		if err != nil {
			return nil, nil, err
		}
		p.Fetch = append(p.Fetch, streampool.Backend[fetchv1.FetchServiceClient]{Addr: a, Client: fetchv1.NewFetchServiceClient(cc)})
	}
	return p, tcSet, nil
}

// Setup dials the backends and adds the pools, the registration heartbeat
// and the Kafka listener to app. The listener is added last so that it
// stops first: it drains its connections while the backends still work.
func Setup(ctx context.Context, app *runtime.App, c *Config) error {
	return setup(ctx, app, c, nil)
}

// SetupInProcess is Setup with peers in this process instead of dialled
// ones (the single-process mode).
func SetupInProcess(ctx context.Context, app *runtime.App, c *Config, peers *Peers) error {
	return setup(ctx, app, c, peers)
}

func setup(ctx context.Context, app *runtime.App, c *Config, inProcess *Peers) error {
	log := app.Logger
	var tlsCfg *tls.Config
	if c.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return &runtime.SettingError{Env: EnvTLSCert, Flag: FlagTLSCert, Value: c.TLSCertFile, Action: "cannot load", Err: err}
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	certPrincipal, err := c.clientCerts(tlsCfg)
	if err != nil {
		return err
	}
	var users *saslplain.Users
	if c.SASLUsersFile != "" {
		var err error
		if users, err = saslplain.LoadFile(c.SASLUsersFile); err != nil {
			return &runtime.SettingError{Env: EnvSASLUsersFile, Flag: FlagSASLUsersFile, Value: c.SASLUsersFile, Action: "cannot use", Err: err}
		}
		log.Info("sasl/plain enabled", "users", users.Len())
	}
	var scram *reload.File[*saslscram.Store]
	if c.SCRAMFile != "" {
		var err error
		if scram, err = reload.Load(c.SCRAMFile, "scram credentials file", saslscram.Parse, log); err != nil {
			return &runtime.SettingError{Env: EnvSCRAMFile, Flag: FlagSCRAMFile, Value: c.SCRAMFile, Action: "cannot use", Err: err}
		}
		log.Info("sasl/scram enabled", "users", scram.Value().Len(), "reload_interval", c.SASLReloadInterval)
	}
	var jwks *reload.File[*oauthbearer.KeySet]
	if c.JWKSFile != "" {
		var err error
		if jwks, err = reload.Load(c.JWKSFile, "jwks file", oauthbearer.ParseKeySet, log); err != nil {
			return &runtime.SettingError{Env: EnvJWKSFile, Flag: FlagJWKSFile, Value: c.JWKSFile, Action: "cannot use", Err: err}
		}
		log.Info("sasl/oauthbearer enabled", "keys", jwks.Value().Len(), "issuer", c.TokenIssuer, "audience", c.TokenAudience,
			"principal_claim", c.TokenPrincipalClaim)
	}
	var acls *reload.File[*acl.Rules]
	if c.ACLFile != "" {
		var err error
		if acls, err = reload.Load(c.ACLFile, "acl file", acl.ParseBytes, log); err != nil {
			return &runtime.SettingError{Env: EnvACLFile, Flag: FlagACLFile, Value: c.ACLFile, Action: "cannot use", Err: err}
		}
		if users == nil && scram == nil && jwks == nil && c.TLSClientCA == "" {
			log.Warn("acl file without SASL or client certificates: every client is " + acl.Anonymous)
		}
		log.Info("topic acls enabled", "rules", acls.Value().Len(), "reload_interval", c.ACLReloadInterval)
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

	self := &catalogv1.Broker{NodeId: int32(c.NodeID), Host: host, Port: int32(port), Rack: c.Rack}
	var peers *Peers
	var tcSet *transcoderSet
	if inProcess != nil {
		peers = inProcess
	} else if peers, tcSet, err = c.dial(ctx, app); err != nil {
		return err
	}
	catalog, err := backends.NewCatalog(backends.CatalogConfig{
		TTL: c.MappingTTL, NegativeTTL: time.Second, CallTimeout: 5 * time.Second, Lease: c.HeartbeatLease, Self: self,
	}, peers.Catalog, log)
	if err != nil {
		return err
	}
	prop := app.Telemetry.Propagator
	poolCfg := streampool.Config{Name: "transcode", MinBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second}
	tc, err := backends.NewTranscoder(poolCfg, peers.Transcode, prop, log)
	if err != nil {
		return err
	}
	poolCfg.Name = "append"
	ap, err := backends.NewAppender(poolCfg, peers.Append, prop, log)
	if err != nil {
		return err
	}

	var fetcher *backends.Fetcher
	if len(peers.Fetch) > 0 {
		fetcher = backends.NewFetcher(peers.Fetch)
	}

	kcfg := kafka.DefaultConfig()
	kcfg.Listen = c.KafkaListen
	kcfg.TLS = tlsCfg
	kcfg.MaxRequestBytes = int32(c.MaxRequestBytes)
	kcfg.IdleTimeout = c.IdleTimeout
	kcfg.MaxConnections = c.MaxConnections
	kcfg.ConnInFlightBytes = int64(c.ConnInFlightBytes)
	kcfg.ServerInFlightBytes = int64(c.ServerInFlightBytes)
	pcfg := produce.DefaultProduceConfig()
	pcfg.MaxMessageBytes = c.MaxMessageBytes
	deps := broker.Deps{
		Catalog: catalog, Transcoder: tc, Appender: ap, Fetcher: fetcher, Produce: pcfg,
		TracerProvider: app.Telemetry.TracerProvider, MeterProvider: app.Telemetry.MeterProvider, Logger: log, Listener: ln,
		Idempotence:        idempotence.Config{ProducerIdleExpiry: c.ProducerIdleExpiry, MaxProducers: c.MaxProducers},
		DisableIdempotence: c.DisableIdempotence,
		StateDir:           c.StateDir,
		Transactions: txn.Config{MaxTimeout: c.TxnMaxTimeout, MaxStagedBytes: int64(c.TxnMaxStagedBytes),
			MaxTotalStagedBytes: int64(c.TxnMaxTotalStagedBytes)},
		FetchSessions: fetchsession.Config{Slots: c.FetchSessionSlots, EvictAfter: fetchsession.DefaultConfig().EvictAfter},
	}
	if users != nil {
		deps.SASL = users
	}
	deps.CertPrincipal = certPrincipal
	if scram != nil {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		deps.Scram = reloadedSCRAM{f: scram, fakeKey: key}
		if err := watchFile(app, scram, "scram", c.SASLReloadInterval); err != nil {
			return err
		}
	}
	if jwks != nil {
		deps.Token = reloadedJWKS{f: jwks, rules: oauthbearer.Rules{Issuer: c.TokenIssuer, Audience: c.TokenAudience,
			PrincipalClaim: c.TokenPrincipalClaim, Leeway: 30 * time.Second}}
		if err := watchFile(app, jwks, "jwks", c.SASLReloadInterval); err != nil {
			return err
		}
	}
	if acls != nil {
		deps.Authorizer = reloadedACLs{acls}
		if err := watchFile(app, acls, "acl", c.ACLReloadInterval); err != nil {
			return err
		}
	}
	if c.Fluss.Bootstrap != "" {
		store, err := c.txnLog(ctx, app)
		if err != nil {
			return err
		}
		deps.Transactions.Store = store
		log.Info("transaction journal in Fluss", "table", c.TxnLogTable)
	}
	srv, err := broker.NewFrontdoor(kcfg, deps)
	if err != nil {
		return err
	}

	if tcSet != nil {
		tcSet.pool = tc
		app.Add(tcSet) // before the pool, so it stops after it
	}
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

// clientCerts turns on mTLS in tlsCfg when a client CA is set, and returns
// how a verified certificate names its user (nil without mTLS).
func (c *Config) clientCerts(tlsCfg *tls.Config) (func(*x509.Certificate) (string, error), error) {
	rules, err := certprincipal.Parse(c.TLSPrincipalRules)
	if err != nil {
		return nil, &runtime.SettingError{Env: EnvTLSRules, Flag: FlagTLSRules, Value: c.TLSPrincipalRules, Err: err}
	}
	if c.TLSClientCA == "" {
		return nil, nil
	}
	if tlsCfg == nil {
		return nil, &runtime.SettingError{Env: EnvTLSClientCA, Flag: FlagTLSClientCA, Value: c.TLSClientCA,
			Err: fmt.Errorf("client certificates need TLS: set %s and %s", EnvTLSCert, EnvTLSKey)}
	}
	pem, err := os.ReadFile(c.TLSClientCA)
	if err != nil {
		return nil, &runtime.SettingError{Env: EnvTLSClientCA, Flag: FlagTLSClientCA, Value: c.TLSClientCA, Action: "cannot load", Err: err}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, &runtime.SettingError{Env: EnvTLSClientCA, Flag: FlagTLSClientCA, Value: c.TLSClientCA,
			Action: "cannot load", Err: errors.New("no PEM certificate in the file")}
	}
	tlsCfg.ClientCAs = pool
	tlsCfg.ClientAuth = tls.RequireAndVerifyClientCert
	return func(cert *x509.Certificate) (string, error) { return rules.Name(certprincipal.Subject(cert)) }, nil
}
