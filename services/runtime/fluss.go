package runtime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// Names of the Fluss settings shared by catalogsvc and appendsvc.
const (
	FlagFlussBootstrap      = "fluss-bootstrap"
	EnvFlussBootstrap       = "FERRY_FLUSS_BOOTSTRAP"
	FlagFlussConnectTimeout = "fluss-connect-timeout"
	EnvFlussConnectTimeout  = "FERRY_FLUSS_CONNECT_TIMEOUT"
	FlagFlussSASLUsername   = "fluss-sasl-username"
	EnvFlussSASLUsername    = "FERRY_FLUSS_SASL_USERNAME"
	FlagFlussSASLPassword   = "fluss-sasl-password-file"
	EnvFlussSASLPassword    = "FERRY_FLUSS_SASL_PASSWORD_FILE"
)

// FlussConfig says where the Fluss cluster is.
type FlussConfig struct {
	// Bootstrap is a comma-separated list of coordinator host:port
	// addresses (plain host:port, as Fluss's bootstrap.servers).
	Bootstrap string
	// ConnectTimeout bounds the startup reachability check.
	ConnectTimeout time.Duration
	// SASLUsername and SASLPasswordFile, both set or both empty, are the
	// SASL/PLAIN credentials for a cluster whose client listener requires
	// them. The password is read from a file so that it never appears in
	// flags, environment listings or logs.
	SASLUsername     string
	SASLPasswordFile string
}

// DeclareFluss registers the Fluss settings and returns the config they
// fill in. FERRY_FLUSS_BOOTSTRAP has no default: it is required.
func DeclareFluss(s *Settings) *FlussConfig {
	return declareFluss(s, "Fluss coordinator address(es) host:port[,host:port] (required)", DialAddrList)
}

// DeclareOptionalFluss is DeclareFluss for a service that uses Fluss only
// when FERRY_FLUSS_BOOTSTRAP is set.
func DeclareOptionalFluss(s *Settings, usage string) *FlussConfig {
	return declareFluss(s, usage, func(v string) error {
		if v == "" {
			return nil
		}
		return DialAddrList(v)
	})
}

func declareFluss(s *Settings, usage string, validate func(string) error) *FlussConfig {
	c := &FlussConfig{}
	s.StringVar(&c.Bootstrap, Spec[string]{Flag: FlagFlussBootstrap, Env: EnvFlussBootstrap,
		Usage: usage, Validate: validate})
	s.DurationVar(&c.ConnectTimeout, Spec[time.Duration]{Flag: FlagFlussConnectTimeout, Env: EnvFlussConnectTimeout,
		Default: 10 * time.Second, Validate: PositiveDuration,
		Usage: "how long startup waits for Fluss to become reachable"})
	s.StringVar(&c.SASLUsername, Spec[string]{Flag: FlagFlussSASLUsername, Env: EnvFlussSASLUsername,
		Usage: "SASL/PLAIN user for a Fluss cluster with authentication; empty: none (needs the password file)"})
	s.StringVar(&c.SASLPasswordFile, Spec[string]{Flag: FlagFlussSASLPassword, Env: EnvFlussSASLPassword,
		Usage: "file holding the Fluss SASL/PLAIN password (first line); set with the user"})
	return c
}

// Validate names the bad field, for configs built in code.
func (c *FlussConfig) Validate() error {
	if err := DialAddrList(c.Bootstrap); err != nil {
		return &SettingError{Env: EnvFlussBootstrap, Flag: FlagFlussBootstrap, Value: c.Bootstrap, Err: err}
	}
	if err := PositiveDuration(c.ConnectTimeout); err != nil {
		return &SettingError{Env: EnvFlussConnectTimeout, Flag: FlagFlussConnectTimeout,
			Value: c.ConnectTimeout.String(), Err: err}
	}
	if (c.SASLUsername == "") != (c.SASLPasswordFile == "") {
		return &SettingError{Env: EnvFlussSASLUsername, Flag: FlagFlussSASLUsername, Value: c.SASLUsername,
			Err: fmt.Errorf("set it together with %s, or neither", EnvFlussSASLPassword)}
	}
	if _, err := c.SASLPassword(); err != nil {
		return err
	}
	return nil
}

// SASLPassword reads the password file: its first line, without the line
// end. It returns "" when no credentials are configured.
func (c *FlussConfig) SASLPassword() (string, error) {
	if c.SASLPasswordFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.SASLPasswordFile)
	if err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		if line = strings.TrimSuffix(line, "\r"); line != "" {
			return line, nil
		}
		err = errors.New("the file's first line is empty")
	}
	return "", &SettingError{Env: EnvFlussSASLPassword, Flag: FlagFlussSASLPassword, Value: c.SASLPasswordFile, Err: err}
}

// LoginError is the start-up error for a Fluss cluster that refused this
// service's login (err): it names the credential settings, so that wrong or
// missing credentials stop the service at start rather than at first use.
func (c *FlussConfig) LoginError(err error) error {
	if c.SASLUsername == "" {
		return &SettingError{Env: EnvFlussSASLUsername, Flag: FlagFlussSASLUsername,
			Err: fmt.Errorf("the Fluss cluster at %s requires a login; set it and %s: %w", c.Bootstrap, EnvFlussSASLPassword, err)}
	}
	return &SettingError{Env: EnvFlussSASLUsername, Flag: FlagFlussSASLUsername, Value: c.SASLUsername,
		Action: "Fluss refused the login of", Err: err}
}

// Addrs returns the bootstrap addresses.
func (c *FlussConfig) Addrs() []string { return SplitList(c.Bootstrap) }

// flussRetryInterval spaces reachability attempts: Fluss started by the same
// compose file usually needs a few seconds, so retrying beats failing fast.
const flussRetryInterval = 500 * time.Millisecond

// CheckFlussReachable waits until a TCP connection to one of the bootstrap
// addresses succeeds, retrying until c.ConnectTimeout (or ctx) ends. On
// failure it returns a *SettingError naming FERRY_FLUSS_BOOTSTRAP.
//
// This is deliberately only a TCP check: it proves the address is right and
// something listens there, not that it is a Fluss coordinator. It is the
// honest minimum until the services do the real Fluss handshake with the
// client in services/fluss, at which point they should call that instead.
func CheckFlussReachable(ctx context.Context, c *FlussConfig) error {
	ctx, cancel := context.WithTimeout(ctx, c.ConnectTimeout)
	defer cancel()
	log := LoggerFrom(ctx)
	var lastErr error
	var d net.Dialer
	for attempt := 1; ; attempt++ {
		for _, addr := range c.Addrs() {
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				_ = conn.Close()
				log.Debug("fluss reachable", "addr", addr, "attempt", attempt)
				return nil
			}
			// A dial cut short by our own deadline says nothing about
			// Fluss; keep the previous, more telling reason if there is one.
			var ne net.Error
			cutShort := ctx.Err() != nil || errors.As(err, &ne) && ne.Timeout()
			if !cutShort || lastErr == nil {
				lastErr = err
			}
			log.Debug("fluss not reachable yet", "addr", addr, "attempt", attempt, "err", err)
		}
		select {
		case <-ctx.Done():
			reason := fmt.Errorf("no coordinator answered within %s: %w", c.ConnectTimeout, dialReason(lastErr))
			if errors.Is(ctx.Err(), context.Canceled) {
				reason = fmt.Errorf("startup cancelled before a coordinator answered: %w", dialReason(lastErr))
			}
			return &SettingError{Env: EnvFlussBootstrap, Flag: FlagFlussBootstrap, Value: c.Bootstrap,
				Action: "cannot reach", Err: reason}
		case <-time.After(flussRetryInterval):
		}
	}
}

// dialReason strips "dial tcp a:b:" from net errors; the caller names the address.
func dialReason(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return listenReason(op.Err)
	}
	if err == nil {
		return context.DeadlineExceeded
	}
	return err
}
