package deploy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v4"
)

// loadWithProfile loads deploy/compose.yaml with a profile enabled.
func loadWithProfile(t *testing.T, profile string) *types.Project {
	t.Helper()
	base, cfg := loadCompose(t)
	path := filepath.Join(cfg.Root, "deploy", "compose.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	project, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path, Content: data}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) {
		o.SetProjectName("ferry", true)
		o.Profiles = []string{profile}
	})
	if err != nil {
		t.Fatalf("compose.yaml does not load with --profile %s: %v", profile, err)
	}
	if len(project.Services) <= len(base.Services) {
		t.Fatalf("--profile %s adds no service", profile)
	}
	return project
}

// ferryMetricsPorts maps each Ferry service of compose.yaml to the port of its FERRY_METRICS_ADDR.
func ferryMetricsPorts(t *testing.T, project *types.Project) map[string]int {
	t.Helper()
	ports := map[string]int{}
	for _, s := range project.Services {
		if v := s.Environment["FERRY_METRICS_ADDR"]; v != nil {
			ports[s.Name] = port(t, *v)
		}
	}
	if len(ports) != 6 {
		t.Fatalf("want 6 Ferry services with metrics, got %v", ports)
	}
	return ports
}

// bindSource is the repository file or directory a service mounts at target.
func bindSource(t *testing.T, svc types.ServiceConfig, target string) string {
	t.Helper()
	for _, v := range svc.Volumes {
		if v.Target == target {
			if v.Type != types.VolumeTypeBind {
				t.Fatalf("%s: %s is not a bind mount of a repository file", svc.Name, target)
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Fatalf("%s: mounts %s at %s: %v", svc.Name, v.Source, target, err)
			}
			return v.Source
		}
	}
	t.Fatalf("%s mounts nothing at %s", svc.Name, target)
	return ""
}

// TestComposeObservabilityProfile: Prometheus and Grafana come only with --profile
// observability; Prometheus scrapes exactly the Ferry services, each at its metrics port, under
// a job named as the service (the dashboard's queries select by it); Grafana is provisioned
// with that Prometheus and the dashboard, whose datasource is the provisioned one.
func TestComposeObservabilityProfile(t *testing.T) {
	base, _ := loadCompose(t)
	for _, name := range []string{"prometheus", "grafana"} {
		if _, err := base.GetService(name); err == nil {
			t.Errorf("%s runs without --profile observability", name)
		}
	}
	project := loadWithProfile(t, "observability")
	prom, err := project.GetService("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	graf, err := project.GetService("grafana")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []types.ServiceConfig{prom, graf} {
		if !slices.Equal(s.Profiles, []string{"observability"}) {
			t.Errorf("%s: profiles %v, want [observability]", s.Name, s.Profiles)
		}
	}
	checkPersistent(t, prom, "/prometheus")
	checkPersistent(t, graf, "/var/lib/grafana")

	// Prometheus: its config file, one job per Ferry service.
	configFile := bindSource(t, prom, "/etc/prometheus/prometheus.yml")
	if !slices.Contains(prom.Command, "--config.file=/etc/prometheus/prometheus.yml") {
		t.Errorf("prometheus: command %v does not read the mounted config", prom.Command)
	}
	data, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	// Strict: a misspelled key would be a setting Prometheus refuses or ignores.
	var cfg struct {
		Global        map[string]string `yaml:"global"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
			DNSSDConfigs []struct {
				Names []string `yaml:"names"`
				Type  string   `yaml:"type"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("%s: %v", configFile, err)
	}
	want := ferryMetricsPorts(t, project)
	jobs := map[string]bool{}
	for _, sc := range cfg.ScrapeConfigs {
		jobs[sc.JobName] = true
		p, ok := want[sc.JobName]
		if !ok {
			t.Errorf("prometheus job %q is no Ferry service of compose.yaml", sc.JobName)
			continue
		}
		n := 0
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				n++
				if target != sc.JobName+":"+strconv.Itoa(p) {
					t.Errorf("prometheus job %s scrapes %s, want %s:%d", sc.JobName, target, sc.JobName, p)
				}
			}
		}
		for _, d := range sc.DNSSDConfigs {
			n++
			if !slices.Equal(d.Names, []string{sc.JobName}) || d.Port != p || d.Type != "A" {
				t.Errorf("prometheus job %s: DNS discovery %+v, want names [%s] type A port %d", sc.JobName, d, sc.JobName, p)
			}
		}
		if n == 0 {
			t.Errorf("prometheus job %s has no target", sc.JobName)
		}
	}
	for name := range want {
		if !jobs[name] {
			t.Errorf("prometheus does not scrape %s", name)
		}
	}
	if svc, _ := project.GetService("transcodesvc"); len(svc.Ports) == 0 {
		for _, sc := range cfg.ScrapeConfigs {
			if sc.JobName == "transcodesvc" && len(sc.DNSSDConfigs) == 0 {
				t.Errorf("prometheus scrapes transcodesvc by name only: a scaled transcoder would be missed")
			}
		}
	}

	// Grafana: datasource and dashboards provisioned from the repository.
	provisioning := bindSource(t, graf, "/etc/grafana/provisioning")
	dashboards := bindSource(t, graf, "/var/lib/grafana/dashboards")
	var ds struct {
		Datasources []struct {
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join(provisioning, "datasources", "prometheus.yaml"), &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" {
		t.Fatalf("grafana datasources %+v, want the compose Prometheus at http://prometheus:9090", ds.Datasources)
	}
	if !slices.ContainsFunc(prom.Ports, func(p types.ServicePortConfig) bool { return p.Target == 9090 && p.Published == "9090" }) {
		t.Errorf("prometheus: port 9090 not published: %+v", prom.Ports)
	}
	var providers struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join(provisioning, "dashboards", "ferry.yaml"), &providers)
	if len(providers.Providers) != 1 || providers.Providers[0].Options.Path != "/var/lib/grafana/dashboards" {
		t.Errorf("grafana dashboard providers %+v, want one reading /var/lib/grafana/dashboards", providers.Providers)
	}
	raw, err := os.ReadFile(filepath.Join(dashboards, "ferry.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("ferry.json: %v", err)
	}
	for _, p := range dash.Panels {
		if p.Datasource.UID != ds.Datasources[0].UID {
			t.Errorf("dashboard panel %q uses datasource %q, not the provisioned %q", p.Title, p.Datasource.UID, ds.Datasources[0].UID)
		}
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// checkPersistent: dir is a named volume's mount, so it outlives the container.
func checkPersistent(t *testing.T, svc types.ServiceConfig, dir string) {
	t.Helper()
	checkOnVolume(t, svc, "data directory", &dir)
}

// TestComposeDataOnVolumes: ZooKeeper's and Fluss's data directories are named volumes (not
// the container's file system, lost when it is recreated), and the Fluss servers, which run as
// user fluss, hand the volume over to that user before they start.
func TestComposeDataOnVolumes(t *testing.T) {
	project, _ := loadCompose(t)
	zk, err := project.GetService("zookeeper")
	if err != nil {
		t.Fatal(err)
	}
	checkPersistent(t, zk, "/data")
	checkPersistent(t, zk, "/datalog")
	for _, name := range []string{"coordinator-server", "tablet-server"} {
		svc, err := project.GetService(name)
		if err != nil {
			t.Fatal(err)
		}
		props := svc.Environment["FLUSS_PROPERTIES"]
		if props == nil {
			t.Fatalf("%s: no FLUSS_PROPERTIES", name)
		}
		dirs := 0
		for _, line := range strings.Split(*props, "\n") {
			key, val, ok := strings.Cut(line, ":")
			if !ok || !strings.HasSuffix(strings.TrimSpace(key), ".dir") {
				continue
			}
			dirs++
			val = strings.TrimSpace(val)
			checkOnVolume(t, svc, strings.TrimSpace(key), &val)
			if !strings.HasPrefix(val, "/var/lib/fluss/") {
				t.Errorf("%s: %s is outside /var/lib/fluss, which the entrypoint hands to user fluss", name, line)
			}
		}
		if dirs == 0 {
			t.Errorf("%s: FLUSS_PROPERTIES sets no data directory", name)
		}
		entry := strings.Join(svc.Entrypoint, " ")
		if !strings.Contains(entry, "chown -R fluss:fluss /var/lib/fluss") || !strings.Contains(entry, "exec /docker-entrypoint.sh \"$@\"") {
			t.Errorf("%s: entrypoint %q must chown /var/lib/fluss and then run the image's entrypoint with the command", name, entry)
		}
	}
	// Both Fluss servers see the same remote data (KV snapshots, tiered logs).
	coord, _ := project.GetService("coordinator-server")
	tablet, _ := project.GetService("tablet-server")
	if src := volumeAt(coord, "/var/lib/fluss/remote-data"); src == "" || src != volumeAt(tablet, "/var/lib/fluss/remote-data") {
		t.Errorf("coordinator and tablet server must share the remote data volume")
	}
}

func volumeAt(svc types.ServiceConfig, target string) string {
	for _, v := range svc.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Target == target {
			return v.Source
		}
	}
	return ""
}
