// Package deploy_test checks deploy/compose.yaml against the local launcher:
// the compose file is shipped to users but cannot be run here (no Docker
// engine), so its topology, ports and settings are compared with e2e/stack,
// which the test suite does run.
package deploy_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/ferrygw/ferry/e2e/stack"
)

func loadCompose(t *testing.T) (*types.Project, stack.Config) {
	t.Helper()
	root, err := stack.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "deploy", "compose.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path, Content: data}},
		Environment: types.Mapping{},
	}
	project, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("ferry", true)
	})
	if err != nil {
		t.Fatalf("compose.yaml does not load: %v", err)
	}
	cfg := stack.DefaultConfig()
	cfg.Root = root
	return project, cfg
}

// listenPorts says which port each compose service listens on, as the local
// stack runs it.
func listenPorts(cfg stack.Config) map[string][]int {
	ports := map[string][]int{
		"zookeeper":          {cfg.ZooKeeperPort},
		"coordinator-server": {cfg.CoordinatorPort},
		"tablet-server":      {cfg.TabletPort},
		"jaeger":             {4317, 16686},
	}
	for _, s := range cfg.ServiceSpecs() {
		for _, p := range s.Ports {
			ports[s.Package] = append(ports[s.Package], p)
		}
	}
	return ports
}

func TestComposeHasTheLocalTopology(t *testing.T) {
	project, cfg := loadCompose(t)
	for name := range listenPorts(cfg) {
		if _, err := project.GetService(name); err != nil {
			t.Errorf("compose.yaml lacks service %s that the local stack runs: %v", name, err)
		}
	}
	for _, s := range project.Services {
		if _, ok := listenPorts(cfg)[s.Name]; !ok {
			t.Errorf("compose.yaml has service %s that the local stack does not run", s.Name)
		}
	}
}

func TestComposeServicesMatchTheLauncher(t *testing.T) {
	project, cfg := loadCompose(t)
	seen := map[string]bool{}
	for _, spec := range cfg.ServiceSpecs() {
		if seen[spec.Package] {
			continue // further transcodesvc instances: compose scales one service instead
		}
		seen[spec.Package] = true
		svc, err := project.GetService(spec.Package)
		if err != nil {
			t.Errorf("%s: %v", spec.Package, err)
			continue
		}
		if svc.Build == nil || svc.Build.Args["SERVICE"] == nil || *svc.Build.Args["SERVICE"] != spec.Package {
			t.Errorf("%s: build arg SERVICE must be %q", spec.Package, spec.Package)
		}
		for key, want := range spec.Env {
			got := svc.Environment[key]
			switch {
			case want == "":
				continue // optional in the launcher too
			case got == nil:
				t.Errorf("%s: compose sets no %s (the launcher sets %q)", spec.Package, key, want)
			case key == "FERRY_LISTEN" || key == "FERRY_KAFKA_LISTEN" || key == "FERRY_METRICS_ADDR":
				if p := port(t, *got); p != port(t, want) {
					t.Errorf("%s: %s listens on port %d, the launcher on %d", spec.Package, key, p, port(t, want))
				}
			}
		}
		for key, val := range svc.Environment {
			if key == stack.EnvStateDir && spec.Package == stack.Frontdoor {
				// The launcher sets it per run directory when it starts the process.
				checkOnVolume(t, svc, stack.EnvStateDir, val)
				continue
			}
			if grpcSecurityKeys[key] {
				continue // the launcher sets them per run too; checked below
			}
			if _, ok := spec.Env[key]; !ok {
				t.Errorf("%s: compose sets %s, which the launcher does not", spec.Package, key)
			}
		}
		checkGRPCSecurity(t, spec.Package, svc.Environment)
		if spec.Package == stack.Frontdoor && svc.Environment[stack.EnvStateDir] == nil {
			t.Errorf("%s: compose sets no %s: a restart would lose the idempotent producer state", spec.Package, stack.EnvStateDir)
		}
		if metrics, ok := spec.Ports["metrics"]; !ok {
			t.Errorf("%s: the launcher gives it no metrics port", spec.Package)
		} else if !containsString(svc.Expose, strconv.Itoa(metrics)) {
			t.Errorf("%s: metrics port %d is not exposed (expose: %v)", spec.Package, metrics, svc.Expose)
		}
		if registry, ok := spec.Ports["registry"]; ok {
			published := false
			for _, p := range svc.Ports {
				if p.Target == uint32(registry) && p.Published == strconv.Itoa(registry) {
					published = true
				}
			}
			if !published || svc.Environment["FERRY_REGISTRY_LISTEN"] == nil || port(t, *svc.Environment["FERRY_REGISTRY_LISTEN"]) != registry {
				t.Errorf("%s: Schema Registry port %d is not published and listened on", spec.Package, registry)
			}
		}
		if kafka, ok := spec.Ports["kafka"]; ok {
			published := false
			for _, p := range svc.Ports {
				if p.Target == uint32(kafka) && p.Published == strconv.Itoa(kafka) {
					published = true
				}
			}
			if !published {
				t.Errorf("%s: Kafka port %d is not published", spec.Package, kafka)
			}
		}
	}
}

// checkOnVolume: a directory that must outlive the container (what names the setting), such
// as frontdoor's state dir, is (inside) a named volume's mount.
func checkOnVolume(t *testing.T, svc types.ServiceConfig, what string, dir *string) {
	t.Helper()
	if dir == nil || *dir == "" {
		t.Errorf("%s: %s is empty", svc.Name, what)
		return
	}
	for _, v := range svc.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Source != "" && (*dir == v.Target || strings.HasPrefix(*dir, v.Target+"/")) {
			return
		}
	}
	t.Errorf("%s: %s=%s is not on a named volume", svc.Name, what, *dir)
}

// Every host:port a service is told to reach must name a compose service
// that listens on that port.
func TestComposeAddressesPointAtListeners(t *testing.T) {
	project, cfg := loadCompose(t)
	listens := listenPorts(cfg)
	for _, s := range project.Services {
		for key, val := range s.Environment {
			if val == nil || key == "FERRY_ADVERTISED_ADDR" {
				continue
			}
			for _, addr := range addresses(*val) {
				host, p, err := net.SplitHostPort(addr)
				if err != nil || host == "0.0.0.0" {
					continue
				}
				ports, ok := listens[host]
				if !ok {
					t.Errorf("%s: %s names %s, which is no compose service", s.Name, key, addr)
					continue
				}
				n, _ := strconv.Atoi(p)
				if !containsInt(ports, n) {
					t.Errorf("%s: %s names %s, but %s listens on %v", s.Name, key, addr, host, ports)
				}
			}
		}
	}
}

func TestComposeTranscoderScales(t *testing.T) {
	project, _ := loadCompose(t)
	svc, err := project.GetService("transcodesvc")
	if err != nil {
		t.Fatal(err)
	}
	if svc.ContainerName != "" || len(svc.Ports) > 0 {
		t.Errorf("transcodesvc must not fix a container name or host ports, or --scale fails")
	}
}

// addresses finds host:port pairs in a setting: a comma list, a URL, or Fluss
// properties ("bind.listeners: FLUSS://host:port").
func addresses(val string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(val, func(r rune) bool { return r == ',' || r == '\n' || r == ' ' }) {
		if i := strings.Index(f, "://"); i >= 0 {
			f = f[i+3:]
		}
		if _, p, err := net.SplitHostPort(f); err == nil {
			if _, err := strconv.Atoi(p); err == nil {
				out = append(out, f)
			}
		}
	}
	return out
}

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("bad address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("bad port in %q", addr)
	}
	return n
}

func containsInt(list []int, n int) bool {
	for _, v := range list {
		if v == n {
			return true
		}
	}
	return false
}

func containsString(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// grpcSecurityKeys are the internal gRPC security settings, which the launcher gives each
// process when it starts it (certificates in the run directory).
var grpcSecurityKeys = map[string]bool{stack.EnvGRPCPlaintext: true, stack.EnvGRPCTLSCA: true,
	stack.EnvGRPCTLSCert: true, stack.EnvGRPCTLSKey: true}

// checkGRPCSecurity: a service without plaintext or all three TLS files does not start
// (mutual TLS is the default), so compose must choose one for every service.
func checkGRPCSecurity(t *testing.T, name string, env types.MappingWithEquals) {
	t.Helper()
	set := func(k string) bool { return env[k] != nil && *env[k] != "" }
	plaintext := env[stack.EnvGRPCPlaintext] != nil && *env[stack.EnvGRPCPlaintext] == "true"
	tls := set(stack.EnvGRPCTLSCA) && set(stack.EnvGRPCTLSCert) && set(stack.EnvGRPCTLSKey)
	if plaintext == tls {
		t.Errorf("%s: compose must set either %s=true or all of %s, %s, %s", name, stack.EnvGRPCPlaintext,
			stack.EnvGRPCTLSCA, stack.EnvGRPCTLSCert, stack.EnvGRPCTLSKey)
	}
}
