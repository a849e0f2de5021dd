package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// envMap looks settings up in m. Unless m chooses internal gRPC transport
// security itself, it asks for plaintext, which most tests are not about
// (grpctls_test.go covers mutual TLS).
func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		if !ok && k == EnvGRPCPlaintext && m[EnvGRPCTLSCA] == "" {
			return "true", true
		}
		return v, ok
	}
}

// plainConfig is DefaultConfig with internal gRPC in plaintext.
func plainConfig(service, listen string) Config {
	c := DefaultConfig(service, listen)
	c.GRPCTLS.Plaintext = true
	return c
}

func TestSettingsPrecedence(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantListen string
		wantSource string
		wantTO     time.Duration
	}{
		{name: "default", wantListen: "127.0.0.1:7101", wantSource: "default", wantTO: 15 * time.Second},
		{name: "env over default", env: map[string]string{EnvListen: "0.0.0.0:9000", EnvShutdownTimeout: "3s"},
			wantListen: "0.0.0.0:9000", wantSource: "env", wantTO: 3 * time.Second},
		{name: "flag over env", args: []string{"-listen", "127.0.0.1:9001", "-shutdown-timeout=4s"},
			env:        map[string]string{EnvListen: "0.0.0.0:9000", EnvShutdownTimeout: "3s"},
			wantListen: "127.0.0.1:9001", wantSource: "flag", wantTO: 4 * time.Second},
		{name: "flag without env", args: []string{"--listen=:9002"},
			wantListen: ":9002", wantSource: "flag", wantTO: 15 * time.Second},
		{name: "env trimmed", env: map[string]string{EnvListen: " 127.0.0.1:9003 "},
			wantListen: "127.0.0.1:9003", wantSource: "env", wantTO: 15 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig("catalogsvc", "127.0.0.1:7101")
			s := NewSettings("catalogsvc")
			cfg.Declare(s)
			if err := s.Parse(tt.args, envMap(tt.env), nil); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if cfg.Listen != tt.wantListen {
				t.Errorf("Listen = %q, want %q", cfg.Listen, tt.wantListen)
			}
			if got := s.Source(FlagListen); got != tt.wantSource {
				t.Errorf("Source(listen) = %q, want %q", got, tt.wantSource)
			}
			if cfg.ShutdownTimeout != tt.wantTO {
				t.Errorf("ShutdownTimeout = %v, want %v", cfg.ShutdownTimeout, tt.wantTO)
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate after successful Parse: %v", err)
			}
		})
	}
}

func TestSettingsErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantMsg  string // exact error text
		wantKind string // "setting" or "usage"
	}{
		{name: "listen missing port", env: map[string]string{EnvListen: "nonsense"},
			wantMsg: `invalid setting FERRY_LISTEN (-listen): "nonsense": missing port`, wantKind: "setting"},
		{name: "listen bad port via flag", args: []string{"-listen", "127.0.0.1:http"},
			wantMsg: `invalid setting FERRY_LISTEN (-listen): "127.0.0.1:http": invalid port "http"`, wantKind: "setting"},
		{name: "listen port out of range", env: map[string]string{EnvListen: "127.0.0.1:70000"},
			wantMsg: `invalid setting FERRY_LISTEN (-listen): "127.0.0.1:70000": port 70000 out of range 0..65535`, wantKind: "setting"},
		{name: "log level", env: map[string]string{EnvLogLevel: "verbose"},
			wantMsg: `invalid setting FERRY_LOG_LEVEL (-log-level): "verbose": must be one of debug|info|warn|error`, wantKind: "setting"},
		{name: "log format", args: []string{"-log-format=xml"},
			wantMsg: `invalid setting FERRY_LOG_FORMAT (-log-format): "xml": must be one of text|json`, wantKind: "setting"},
		{name: "bad duration env", env: map[string]string{EnvShutdownTimeout: "soon"},
			wantMsg: `invalid setting FERRY_SHUTDOWN_TIMEOUT (-shutdown-timeout): "soon": not a duration (use e.g. 10s, 1m30s)`, wantKind: "setting"},
		{name: "bad duration flag", args: []string{"-shutdown-timeout", "soon"},
			wantMsg: `invalid setting FERRY_SHUTDOWN_TIMEOUT (-shutdown-timeout): "soon": not a duration (use e.g. 10s, 1m30s)`, wantKind: "setting"},
		{name: "zero duration", env: map[string]string{EnvShutdownTimeout: "0s"},
			wantMsg: `invalid setting FERRY_SHUTDOWN_TIMEOUT (-shutdown-timeout): "0s": must be positive`, wantKind: "setting"},
		{name: "otlp scheme", env: map[string]string{EnvOTLPEndpoint: "ftp://collector:4317"},
			wantMsg: `invalid setting OTEL_EXPORTER_OTLP_ENDPOINT (-otlp-endpoint): "ftp://collector:4317": scheme must be http or https`, wantKind: "setting"},
		{name: "otlp no host", env: map[string]string{EnvOTLPEndpoint: ":4317"},
			wantMsg: `invalid setting OTEL_EXPORTER_OTLP_ENDPOINT (-otlp-endpoint): ":4317": missing host`, wantKind: "setting"},
		{name: "flag beats bad env", args: []string{"-listen=127.0.0.1:1"}, env: map[string]string{EnvListen: "nonsense"}},
		{name: "unknown flag", args: []string{"-nope"},
			wantMsg: "flag provided but not defined: -nope", wantKind: "usage"},
		{name: "stray argument", args: []string{"serve"},
			wantMsg: `unexpected argument "serve" (settings are flags or environment variables)`, wantKind: "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig("catalogsvc", "127.0.0.1:7101")
			s := NewSettings("catalogsvc")
			cfg.Declare(s)
			err := s.Parse(tt.args, envMap(tt.env), nil)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("Parse: unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse: no error, want %q", tt.wantMsg)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("error = %q\nwant    %q", err, tt.wantMsg)
			}
			var se *SettingError
			var ue *UsageError
			switch tt.wantKind {
			case "setting":
				if !errors.As(err, &se) {
					t.Errorf("error %T is not a *SettingError", err)
				}
			case "usage":
				if !errors.As(err, &ue) {
					t.Errorf("error %T is not a *UsageError", err)
				}
			}
			if got := ExitCode(err); got != ExitConfig {
				t.Errorf("ExitCode = %d, want %d", got, ExitConfig)
			}
		})
	}
}

func TestSettingsTypedAndCustom(t *testing.T) {
	s := NewSettings("svc")
	var n int
	var on bool
	var list string
	s.IntVar(&n, Spec[int]{Flag: "workers", Env: "SVC_WORKERS", Default: 4, Validate: func(v int) error {
		if v < 1 {
			return errors.New("must be >= 1")
		}
		return nil
	}})
	s.BoolVar(&on, Spec[bool]{Flag: "fast", Env: "SVC_FAST"})
	s.StringVar(&list, Spec[string]{Flag: "peers", Env: "SVC_PEERS", Validate: DialAddrList})

	if err := s.Parse([]string{"-fast"}, envMap(map[string]string{"SVC_WORKERS": "8", "SVC_PEERS": "a:1, b:2,"}), nil); err != nil {
		t.Fatal(err)
	}
	if n != 8 || !on || len(SplitList(list)) != 2 {
		t.Fatalf("got workers=%d fast=%v peers=%q", n, on, list)
	}

	s2 := NewSettings("svc")
	s2.IntVar(&n, Spec[int]{Flag: "workers", Env: "SVC_WORKERS", Default: 4, Validate: func(v int) error {
		if v < 1 {
			return errors.New("must be >= 1")
		}
		return nil
	}})
	err := s2.Parse(nil, envMap(map[string]string{"SVC_WORKERS": "0"}), nil)
	if want := `invalid setting SVC_WORKERS (-workers): "0": must be >= 1`; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

func TestSettingsHelp(t *testing.T) {
	cfg := DefaultConfig("catalogsvc", "127.0.0.1:7101")
	s := NewSettings("catalogsvc")
	cfg.Declare(s)
	DeclareFluss(s)
	var out bytes.Buffer
	err := s.Parse([]string{"-h"}, nil, &out)
	if !errors.Is(err, ErrHelp) {
		t.Fatalf("err = %v, want ErrHelp", err)
	}
	for _, want := range []string{"-listen / FERRY_LISTEN", `"127.0.0.1:7101"`, "-fluss-bootstrap / FERRY_FLUSS_BOOTSTRAP", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSettingsDuplicatePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("declaring -listen twice with two defaults did not panic")
		}
	}()
	s := NewSettings("svc")
	var a, b string
	s.StringVar(&a, Spec[string]{Flag: "listen"})
	s.StringVar(&b, Spec[string]{Flag: "listen", Default: ":1"})
}

func TestConfigValidate(t *testing.T) {
	base := plainConfig("svc", "127.0.0.1:0")
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantEnv string // "" means valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"listen all interfaces", func(c *Config) { c.Listen = ":7101" }, ""},
		{"listen ipv6", func(c *Config) { c.Listen = "[::1]:7101" }, ""},
		{"listen empty", func(c *Config) { c.Listen = "" }, EnvListen},
		{"listen no port", func(c *Config) { c.Listen = "localhost" }, EnvListen},
		{"level", func(c *Config) { c.Log.Level = "trace" }, EnvLogLevel},
		{"format", func(c *Config) { c.Log.Format = "logfmt" }, EnvLogFormat},
		{"otlp host:port", func(c *Config) { c.Telemetry.OTLPEndpoint = "127.0.0.1:4317" }, ""},
		{"otlp url", func(c *Config) { c.Telemetry.OTLPEndpoint = "http://jaeger:4317" }, ""},
		{"otlp url without port", func(c *Config) { c.Telemetry.OTLPEndpoint = "http://jaeger" }, EnvOTLPEndpoint},
		{"otlp garbage", func(c *Config) { c.Telemetry.OTLPEndpoint = "jaeger" }, EnvOTLPEndpoint},
		{"shutdown timeout", func(c *Config) { c.ShutdownTimeout = -time.Second }, EnvShutdownTimeout},
		{"neither mtls nor plaintext", func(c *Config) { c.GRPCTLS.Plaintext = false }, EnvGRPCTLSCA},
		{"mtls without key", func(c *Config) {
			c.GRPCTLS = GRPCTLSConfig{CAFile: "ca.pem", CertFile: "svc.pem"}
		}, EnvGRPCTLSKey},
		{"mtls files", func(c *Config) {
			c.GRPCTLS = GRPCTLSConfig{CAFile: "ca.pem", CertFile: "svc.pem", KeyFile: "svc-key.pem"}
		}, ""},
		{"plaintext and files", func(c *Config) { c.GRPCTLS.CertFile = "svc.pem" }, EnvGRPCTLSCert},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantEnv == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var se *SettingError
			if !errors.As(err, &se) || se.Env != tt.wantEnv {
				t.Fatalf("Validate = %v, want a SettingError naming %s", err, tt.wantEnv)
			}
			if !strings.Contains(err.Error(), tt.wantEnv) {
				t.Errorf("message %q does not name %s", err, tt.wantEnv)
			}
		})
	}
}

func TestFlussConfigValidate(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\r\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sasl := func(user, file string) FlussConfig {
		return FlussConfig{Bootstrap: "a:1", ConnectTimeout: time.Second, SASLUsername: user, SASLPasswordFile: file}
	}
	tests := []struct {
		name string
		cfg  FlussConfig
		want string
	}{
		{"ok", FlussConfig{Bootstrap: "127.0.0.1:9123", ConnectTimeout: time.Second}, ""},
		{"list", FlussConfig{Bootstrap: "a:1,b:2", ConnectTimeout: time.Second}, ""},
		{"empty", FlussConfig{ConnectTimeout: time.Second}, EnvFlussBootstrap},
		{"scheme", FlussConfig{Bootstrap: "FLUSS://127.0.0.1:9123", ConnectTimeout: time.Second}, EnvFlussBootstrap},
		{"bad item", FlussConfig{Bootstrap: "a:1,b", ConnectTimeout: time.Second}, EnvFlussBootstrap},
		{"timeout", FlussConfig{Bootstrap: "a:1"}, EnvFlussConnectTimeout},
		{"sasl", sasl("ferry", pw), ""},
		{"sasl user only", sasl("ferry", ""), EnvFlussSASLUsername},
		{"sasl file only", sasl("", pw), EnvFlussSASLUsername},
		{"sasl file missing", sasl("ferry", filepath.Join(dir, "nope")), EnvFlussSASLPassword},
		{"sasl file empty", sasl("ferry", empty), EnvFlussSASLPassword},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var se *SettingError
			if !errors.As(err, &se) || se.Env != tt.want {
				t.Fatalf("Validate = %v, want SettingError naming %s", err, tt.want)
			}
		})
	}
}

func TestFlussSASLPasswordIsFirstLine(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret\r\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := FlussConfig{SASLUsername: "ferry", SASLPasswordFile: pw}
	if got, err := c.SASLPassword(); err != nil || got != "s3cret" {
		t.Fatalf("SASLPassword = %q, %v", got, err)
	}
	if got, err := (&FlussConfig{}).SASLPassword(); err != nil || got != "" {
		t.Fatalf("no credentials: SASLPassword = %q, %v", got, err)
	}
}

// Services of one process declare a shared setting each: both configs get
// the value, from the flag or the environment, and a second meaning for a
// name already taken is a programming error.
func TestSettingsSharedDeclaration(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{name: "flag", args: []string{"-fluss-bootstrap", "fluss:9123", "-fluss-connect-timeout=3s"}},
		{name: "env", env: map[string]string{EnvFlussBootstrap: "fluss:9123", EnvFlussConnectTimeout: "3s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSettings("ferry")
			a, b := DeclareFluss(s), DeclareFluss(s)
			if err := s.Parse(tc.args, envMap(tc.env), nil); err != nil {
				t.Fatal(err)
			}
			for i, c := range []*FlussConfig{a, b} {
				if c.Bootstrap != "fluss:9123" || c.ConnectTimeout != 3*time.Second {
					t.Errorf("config %d: %+v", i, *c)
				}
			}
		})
	}
	t.Run("defaults and validation", func(t *testing.T) {
		s := NewSettings("ferry")
		a, b := DeclareFluss(s), DeclareFluss(s)
		if a.ConnectTimeout != 10*time.Second || b.ConnectTimeout != 10*time.Second {
			t.Errorf("defaults %v %v", a.ConnectTimeout, b.ConnectTimeout)
		}
		var se *SettingError
		if err := s.Parse(nil, envMap(nil), nil); !errors.As(err, &se) || se.Env != EnvFlussBootstrap {
			t.Errorf("missing bootstrap: %v", err)
		}
	})
	for name, again := range map[string]func(s *Settings){
		"other env": func(s *Settings) { var v string; s.StringVar(&v, Spec[string]{Flag: FlagFlussBootstrap, Env: "OTHER"}) },
		"other type": func(s *Settings) {
			var v int
			s.IntVar(&v, Spec[int]{Flag: FlagFlussBootstrap, Env: EnvFlussBootstrap})
		},
		"other default": func(s *Settings) {
			var v string
			s.StringVar(&v, Spec[string]{Flag: FlagFlussBootstrap, Env: EnvFlussBootstrap, Default: "x:1"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := NewSettings("ferry")
			DeclareFluss(s)
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "declared twice with different meanings") {
					t.Errorf("panic %v", r)
				}
			}()
			again(s)
		})
	}
}
