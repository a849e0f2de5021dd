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
		check   func(t *testing.T, c stack.Config, envFile string)
	}{
		{name: "defaults are make up's stack", check: func(t *testing.T, c stack.Config, _ string) {
			if c.FlussOnly || c.ZooKeeperPort != 2181 || c.CoordinatorPort != 9123 || c.TabletPort != 9124 || c.Name != "dev" {
				t.Errorf("config = %+v", c)
			}
			if len(c.ServiceSpecs()) != 5 {
				t.Errorf("want all services (two transcoders), got %d", len(c.ServiceSpecs()))
			}
		}},
		{name: "test runner", args: []string{"-only", "fluss", "-test-ports", "-env-file", "/tmp/x.env"}, check: func(t *testing.T, c stack.Config, envFile string) {
			if !c.FlussOnly || c.ZooKeeperPort != 32181 || c.CoordinatorPort != 39122 || c.TabletPort != 39123 || c.Name != "test" {
				t.Errorf("config = %+v", c)
			}
			if envFile != "/tmp/x.env" {
				t.Errorf("env file = %q", envFile)
			}
			if c.FlussBootstrap() != "127.0.0.1:39122" {
				t.Errorf("bootstrap = %s", c.FlussBootstrap())
			}
		}},
		{name: "explicit ports win", args: []string{"-test-ports", "-coordinator-port", "40000", "-name", "mine"}, check: func(t *testing.T, c stack.Config, _ string) {
			if c.CoordinatorPort != 40000 || c.ZooKeeperPort != 32181 || c.Name != "mine" {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "service subset", args: []string{"-services", "catalogsvc,appendsvc"}, check: func(t *testing.T, c stack.Config, _ string) {
			if n := len(c.ServiceSpecs()); n != 2 {
				t.Errorf("%d services, want 2", n)
			}
		}},
		{name: "unknown part", args: []string{"-only", "kafka"}, wantErr: `-only "kafka"`},
		{name: "bad transcode port", args: []string{"-transcode-ports", "7102,x"}, wantErr: `"x" is not a port`},
		{name: "port clash", args: []string{"-kafka-port", "7101"}, wantErr: "KafkaPort 7101: already used by CatalogPort"},
		{name: "stray argument", args: []string{"fluss"}, wantErr: `unexpected argument "fluss"`},
		{name: "unknown service", args: []string{"-services", "nope"}, wantErr: `unknown service "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, envFile, err := parseFlags(tc.args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c, envFile)
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
