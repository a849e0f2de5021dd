package main

import (
	"io"
	"strings"
	"testing"

	"github.com/ferrygw/ferry/e2e/stack"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, c stack.Config, o cliOptions)
	}{
		{name: "defaults are make up's stack", check: func(t *testing.T, c stack.Config, _ cliOptions) {
			if c.FlussOnly || c.ZooKeeperPort != 2181 || c.CoordinatorPort != 9123 || c.TabletPort != 9124 || c.Name != "dev" {
				t.Errorf("config = %+v", c)
			}
			if len(c.ServiceSpecs()) != 7 {
				t.Errorf("want all services (two transcoders, schemasvc), got %d", len(c.ServiceSpecs()))
			}
		}},
		{name: "test runner", args: []string{"-only", "fluss", "-test-ports", "-env-file", "/tmp/x.env"}, check: func(t *testing.T, c stack.Config, o cliOptions) {
			if !c.FlussOnly || c.ZooKeeperPort != 28181 || c.CoordinatorPort != 28122 || c.TabletPort != 28123 || c.Name != "test" {
				t.Errorf("config = %+v", c)
			}
			if o.envFile != "/tmp/x.env" || o.jaeger {
				t.Errorf("options = %+v", o)
			}
			if c.FlussBootstrap() != "127.0.0.1:28122" {
				t.Errorf("bootstrap = %s", c.FlussBootstrap())
			}
		}},
		{name: "secured Fluss", args: []string{"-fluss-sasl", "ferry:s3cret"}, check: func(t *testing.T, c stack.Config, _ cliOptions) {
			if c.FlussSASL == nil || c.FlussSASL.User != "ferry" || c.FlussSASL.Users["ferry"] != "s3cret" ||
				c.CoordinatorInternalPort != 10123 || c.TabletInternalPort != 10124 {
				t.Errorf("config = %+v, sasl %+v", c, c.FlussSASL)
			}
			if c.FlussClientConf()["client.security.sasl.password"] != "s3cret" {
				t.Errorf("client conf = %v", c.FlussClientConf())
			}
		}},
		{name: "secured Fluss needs a password", args: []string{"-fluss-sasl", "ferry"}, wantErr: "USER:PASSWORD"},
		{name: "explicit ports win", args: []string{"-test-ports", "-coordinator-port", "40000", "-name", "mine"}, check: func(t *testing.T, c stack.Config, _ cliOptions) {
			if c.CoordinatorPort != 40000 || c.ZooKeeperPort != 28181 || c.Name != "mine" {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "service subset", args: []string{"-services", "catalogsvc,appendsvc"}, check: func(t *testing.T, c stack.Config, _ cliOptions) {
			if n := len(c.ServiceSpecs()); n != 2 {
				t.Errorf("%d services, want 2", n)
			}
		}},
		{name: "jaeger", args: []string{"-jaeger"}, check: func(t *testing.T, c stack.Config, o cliOptions) {
			if !o.jaeger || c.OTLPEndpoint != "" {
				t.Errorf("options = %+v, endpoint %q", o, c.OTLPEndpoint)
			}
		}},
		{name: "external fluss", args: []string{"-external-fluss", "127.0.0.1:29122"}, check: func(t *testing.T, c stack.Config, _ cliOptions) {
			if c.FlussBootstrap() != "127.0.0.1:29122" {
				t.Errorf("bootstrap = %s", c.FlussBootstrap())
			}
			if _, ok := c.Ports()["CoordinatorPort"]; ok {
				t.Error("external Fluss: the stack must not claim Fluss ports")
			}
		}},
		{name: "jaeger and otlp", args: []string{"-jaeger", "-otlp-endpoint", "http://x:4317"}, wantErr: "choose one"},
		{name: "jaeger for fluss only", args: []string{"-jaeger", "-only", "fluss"}, wantErr: "Fluss exports no traces"},
		{name: "unknown part", args: []string{"-only", "kafka"}, wantErr: `-only "kafka"`},
		{name: "bad transcode port", args: []string{"-transcode-ports", "7102,x"}, wantErr: `"x" is not a port`},
		{name: "port clash", args: []string{"-kafka-port", "7101"}, wantErr: "KafkaPort 7101: already used by CatalogPort"},
		{name: "stray argument", args: []string{"fluss"}, wantErr: `unexpected argument "fluss"`},
		{name: "unknown service", args: []string{"-services", "nope"}, wantErr: `unknown service "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, o, err := parseFlags(tc.args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c, o)
		})
	}
}

func TestRunUsageErrorExitCode(t *testing.T) {
	var stderr strings.Builder
	if code := run([]string{"-only", "nope"}, io.Discard, &stderr); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "ferrystack:") {
		t.Errorf("stderr = %q", stderr.String())
	}
}
