package stack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// buildServices compiles each distinct service package into ServiceBinDir, one `go build` for all,
// so `make up` always runs the code in the tree.
func buildServices(ctx context.Context, c Config, specs []ServiceSpec) error {
	pkgs := map[string]string{} // package: binary name
	for _, s := range specs {
		pkgs[s.Package] = s.BinaryName()
	}
	if len(pkgs) == 0 {
		return nil
	}
	binDir := c.ServiceBinDir()
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		// Separate builds so the error names the broken service.
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(binDir, pkgs[p]), "./"+p)
		cmd.Dir = c.Root
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", p, err, indent(strings.TrimSpace(out.String())))
		}
	}
	return nil
}

// ServiceEnv is the parent environment without any Ferry or OTel setting (so a developer's
// shell cannot leak into the stack), plus the spec's non-empty values.
func ServiceEnv(spec ServiceSpec) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "FERRY_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := spec.Env[k]; v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// waitHealthy polls the gRPC health service (overall status, service "") until SERVING.
func waitHealthy(ctx context.Context, p *Process, addr string, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("%s: dial %s: %w", p.Name, addr, err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := "no answer yet"
	for {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := client.Check(callCtx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = "status " + resp.GetStatus().String()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s at %s not SERVING (%s): %w; log %s:\n%s", p.Name, addr, last, ctx.Err(), p.LogPath, indent(p.LogTail(20)))
		case <-p.Done():
			return fmt.Errorf("%s exited (%v) before SERVING on %s; log %s:\n%s", p.Name, p.ExitErr(), addr, p.LogPath, indent(p.LogTail(30)))
		case <-tick.C:
		}
	}
}
