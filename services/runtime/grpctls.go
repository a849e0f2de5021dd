package runtime

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Settings of internal gRPC transport security. Without -grpc-plaintext
// all three files are required: internal gRPC is mutual TLS by default.
const (
	FlagGRPCTLSCA     = "grpc-tls-ca"
	EnvGRPCTLSCA      = "FERRY_GRPC_TLS_CA"
	FlagGRPCTLSCert   = "grpc-tls-cert"
	EnvGRPCTLSCert    = "FERRY_GRPC_TLS_CERT"
	FlagGRPCTLSKey    = "grpc-tls-key"
	EnvGRPCTLSKey     = "FERRY_GRPC_TLS_KEY"
	FlagGRPCPlaintext = "grpc-plaintext"
	EnvGRPCPlaintext  = "FERRY_GRPC_PLAINTEXT"
)

// GRPCTLSConfig names the files of a service's internal mTLS identity: the
// CA every Ferry service certificate is issued by, and this service's own
// certificate and key, which it presents both as a server and as a client.
type GRPCTLSConfig struct {
	CAFile, CertFile, KeyFile string
	// Plaintext turns mTLS off for local development: no certificates are
	// asked for or presented, and anyone who reaches the port may call.
	Plaintext bool
}

func (c *GRPCTLSConfig) declare(s *Settings) {
	s.StringVar(&c.CAFile, Spec[string]{Flag: FlagGRPCTLSCA, Env: EnvGRPCTLSCA, Default: c.CAFile,
		Usage: "PEM file of the CA that issues Ferry's service certificates; peers must present a certificate from it (internal gRPC mTLS)"})
	s.StringVar(&c.CertFile, Spec[string]{Flag: FlagGRPCTLSCert, Env: EnvGRPCTLSCert, Default: c.CertFile,
		Usage: "PEM certificate of this service for internal gRPC, presented as server and client; must name the service as a DNS SAN (e.g. appendsvc); reloaded when the file changes"})
	s.StringVar(&c.KeyFile, Spec[string]{Flag: FlagGRPCTLSKey, Env: EnvGRPCTLSKey, Default: c.KeyFile,
		Usage: "PEM private key of -grpc-tls-cert; reloaded with it"})
	s.BoolVar(&c.Plaintext, Spec[bool]{Flag: FlagGRPCPlaintext, Env: EnvGRPCPlaintext, Default: c.Plaintext,
		Usage: "internal gRPC without TLS or client certificates (local development only: anyone who reaches a port can call it)"})
}

// Validate checks that exactly one of plaintext and the three files is chosen.
func (c GRPCTLSConfig) Validate() error {
	files := []struct{ env, flag, value string }{
		{EnvGRPCTLSCA, FlagGRPCTLSCA, c.CAFile},
		{EnvGRPCTLSCert, FlagGRPCTLSCert, c.CertFile},
		{EnvGRPCTLSKey, FlagGRPCTLSKey, c.KeyFile},
	}
	for _, f := range files {
		switch {
		case c.Plaintext && f.value != "":
			return &SettingError{Env: f.env, Flag: f.flag, Value: f.value,
				Err: fmt.Errorf("set together with %s=true: choose mutual TLS or plaintext", EnvGRPCPlaintext)}
		case !c.Plaintext && f.value == "":
			return &SettingError{Env: f.env, Flag: f.flag, Value: f.value,
				Err: fmt.Errorf("required: internal gRPC uses mutual TLS unless %s=true (local development only)", EnvGRPCPlaintext)}
		}
	}
	return nil
}

// TransportSecurity is how a service's internal gRPC connections are
// protected: mutual TLS with certificates reloaded from files, or explicit
// plaintext. Servers accept only clients whose certificate comes from the
// CA; clients present their certificate and accept only a server whose
// certificate comes from the CA and names the service they meant to reach.
// Names, not addresses, are checked, so a transcodesvc dialled by IP after
// DNS expansion is verified the same as one dialled by name.
type TransportSecurity struct {
	store    *certStore // nil: plaintext
	log      *slog.Logger
	failures metric.Int64Counter // nil: not counted
}

// Plaintext is TransportSecurity without TLS, for tests and local development.
func Plaintext() *TransportSecurity { return &TransportSecurity{} }

// NewTransportSecurity loads cfg's files (failing with a *SettingError if
// they are unusable) or returns Plaintext when cfg.Plaintext. meter, when
// non-nil, gets the handshake failure counter and the certificate expiry.
func NewTransportSecurity(cfg GRPCTLSConfig, logger *slog.Logger, meter metric.Meter) (*TransportSecurity, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Plaintext {
		return &TransportSecurity{log: logger}, nil
	}
	store := &certStore{caFile: cfg.CAFile, certFile: cfg.CertFile, keyFile: cfg.KeyFile, log: logger}
	if err := store.load(); err != nil {
		return nil, err
	}
	ts := &TransportSecurity{store: store, log: logger}
	if meter != nil {
		var err error
		ts.failures, err = meter.Int64Counter("ferry.grpc.tls.handshake.failures",
			metric.WithDescription("internal gRPC TLS handshakes that failed (side=server: a caller was refused; side=client: a peer was not trusted)"))
		if err != nil {
			return nil, err
		}
		_, err = meter.Float64ObservableGauge("ferry.grpc.tls.certificate.not_after",
			metric.WithUnit("s"),
			metric.WithDescription("expiry (Unix time) of the internal gRPC certificate in use; alert well before it passes"),
			metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
				o.Observe(float64(store.notAfter().Unix()))
				return nil
			}))
		if err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// IsPlaintext reports whether TLS is off.
func (t *TransportSecurity) IsPlaintext() bool { return t.store == nil }

// LogMode logs, once the service runs, how its internal gRPC is protected:
// a warning in plaintext, the certificate in use otherwise.
func (t *TransportSecurity) LogMode(logger *slog.Logger) {
	if t.store == nil {
		logger.Warn("internal gRPC is plaintext and unauthenticated (" + EnvGRPCPlaintext + "=true): anyone who reaches the port can call it; for local development only")
		return
	}
	leaf := t.store.leafInfo()
	logger.Info("internal gRPC uses mutual TLS", "cert", t.store.certFile, "subject", leaf.Subject.CommonName,
		"dns_names", leaf.DNSNames, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
}

// ServerCredentials are the credentials of the service's gRPC server.
func (t *TransportSecurity) ServerCredentials() credentials.TransportCredentials {
	if t.store == nil {
		return insecure.NewCredentials()
	}
	st := t.store
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		// Chains are checked in VerifyConnection against the CA as loaded
		// now, so a rotated CA file applies without a restart.
		ClientAuth: tls.RequireAnyClientCert,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			cert, _ := st.current()
			return cert, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, roots := st.current()
			return verifyPeer(cs.PeerCertificates, roots, "", x509.ExtKeyUsageClientAuth)
		},
	}
	return &observedCreds{TransportCredentials: credentials.NewTLS(cfg), ts: t, side: "server"}
}

// ClientCredentials are the credentials for calling the Ferry service
// named peer ("catalogsvc", "transcodesvc", "appendsvc", ...): its
// certificate must carry that name as a DNS SAN.
func (t *TransportSecurity) ClientCredentials(peer string) credentials.TransportCredentials {
	if t.store == nil {
		return insecure.NewCredentials()
	}
	st := t.store
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		// Not skipped: VerifyConnection below verifies the chain against
		// the current CA and the peer's service name instead of the dialled
		// host, which may be an IP from DNS expansion.
		InsecureSkipVerify: true,
		ServerName:         peer, // SNI only
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _ := st.current()
			return cert, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, roots := st.current()
			return verifyPeer(cs.PeerCertificates, roots, peer, x509.ExtKeyUsageServerAuth)
		},
	}
	return &observedCreds{TransportCredentials: credentials.NewTLS(cfg), ts: t, side: "client", peer: peer}
}

// verifyPeer checks the peer's chain against roots for usage and, when name
// is set, that the leaf names it.
func verifyPeer(certs []*x509.Certificate, roots *x509.CertPool, name string, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return errors.New("peer presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: inter, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage},
	})
	if err != nil {
		return fmt.Errorf("peer certificate %q refused: %w", certs[0].Subject.CommonName, err)
	}
	return nil
}

// observedCreds logs and counts failed handshakes, which gRPC itself only
// reports through its own logger: a refused caller must show up in the
// service's log with its address. Its connections send each write's TLS
// records together (corkconn.go).
type observedCreds struct {
	credentials.TransportCredentials
	ts   *TransportSecurity
	side string
	peer string
}

func (c *observedCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	raw := newCorkConn(conn)
	out, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		c.failed(err, "internal gRPC caller refused: TLS handshake failed", "remote", conn.RemoteAddr().String())
		return out, info, err
	}
	return &tlsWriteConn{Conn: out, raw: raw}, info, nil
}

func (c *observedCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	raw := newCorkConn(conn)
	out, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		if ctx.Err() == nil {
			c.failed(err, "internal gRPC peer not trusted: TLS handshake failed", "peer", c.peer, "remote", conn.RemoteAddr().String())
		}
		return out, info, err
	}
	return &tlsWriteConn{Conn: out, raw: raw}, info, nil
}

func (c *observedCreds) Clone() credentials.TransportCredentials {
	return &observedCreds{TransportCredentials: c.TransportCredentials.Clone(), ts: c.ts, side: c.side, peer: c.peer}
}

func (c *observedCreds) failed(err error, msg string, args ...any) {
	if c.ts.log != nil {
		c.ts.log.Warn(msg, append(args, "err", err)...)
	}
	if c.ts.failures != nil {
		c.ts.failures.Add(context.Background(), 1, metric.WithAttributes(attribute.String("side", c.side)))
	}
}

// certStore holds the current certificate and CA pool and reloads them
// when one of the files changes (checked at each handshake, which is rare
// on long-lived connections). A reload that fails, e.g. because the key
// and certificate were caught half-replaced, keeps the previous pair and
// is retried once the files change again.
type certStore struct {
	caFile, certFile, keyFile string
	log                       *slog.Logger

	mu     sync.Mutex
	stamps [3]fileStamp // of the last load attempt
	cert   *tls.Certificate
	roots  *x509.CertPool
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func (s *certStore) stat() ([3]fileStamp, error) {
	var out [3]fileStamp
	for i, f := range []string{s.caFile, s.certFile, s.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return out, err
		}
		out[i] = fileStamp{fi.ModTime(), fi.Size()}
	}
	return out, nil
}

// load reads the files for the first time; any problem is a setting error.
func (s *certStore) load() error {
	stamps, _ := s.stat()
	cert, roots, err := s.read()
	if err != nil {
		return err
	}
	s.stamps, s.cert, s.roots = stamps, cert, roots
	return nil
}

// read loads and cross-checks the three files.
func (s *certStore) read() (*tls.Certificate, *x509.CertPool, error) {
	caPEM, err := os.ReadFile(s.caFile)
	if err != nil {
		return nil, nil, &SettingError{Env: EnvGRPCTLSCA, Flag: FlagGRPCTLSCA, Value: s.caFile, Action: "cannot load", Err: err}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, nil, &SettingError{Env: EnvGRPCTLSCA, Flag: FlagGRPCTLSCA, Value: s.caFile, Action: "cannot load",
			Err: errors.New("no PEM certificate in the file")}
	}
	pair, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		return nil, nil, &SettingError{Env: EnvGRPCTLSCert, Flag: FlagGRPCTLSCert, Value: s.certFile, Action: "cannot load", Err: err}
	}
	// A certificate the peers would refuse is caught here, not at the
	// first call.
	chain := make([]*x509.Certificate, 0, len(pair.Certificate))
	for _, der := range pair.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, nil, &SettingError{Env: EnvGRPCTLSCert, Flag: FlagGRPCTLSCert, Value: s.certFile, Action: "cannot load", Err: err}
		}
		chain = append(chain, c)
	}
	if err := verifyPeer(chain, roots, "", x509.ExtKeyUsageAny); err != nil {
		return nil, nil, &SettingError{Env: EnvGRPCTLSCert, Flag: FlagGRPCTLSCert, Value: s.certFile, Action: "cannot use",
			Err: fmt.Errorf("not valid under %s: %w", s.caFile, err)}
	}
	return &pair, roots, nil
}

// current returns the certificate and CA pool to use now, reloading them
// first if a file changed since the last attempt.
func (s *certStore) current() (*tls.Certificate, *x509.CertPool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stamps, err := s.stat()
	if err != nil || stamps == s.stamps {
		// A missing file mid-rotation: keep serving with what we have.
		return s.cert, s.roots
	}
	s.stamps = stamps
	cert, roots, err := s.read()
	if err != nil {
		s.log.Warn("internal gRPC certificate reload failed; keeping the previous one", "err", err)
		return s.cert, s.roots
	}
	s.cert, s.roots = cert, roots
	s.log.Info("internal gRPC certificate reloaded", "cert", s.certFile, "not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	return s.cert, s.roots
}

func (s *certStore) leafInfo() *x509.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cert.Leaf
}

func (s *certStore) notAfter() time.Time { return s.leafInfo().NotAfter }
