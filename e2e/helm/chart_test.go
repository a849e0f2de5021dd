package helm

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ferrygw/ferry/e2e/stack"
)

// workload is a Deployment or StatefulSet reduced to what the checks need.
type workload struct {
	kind, name string
	selector   map[string]string
	pod        corev1.PodTemplateSpec
	claims     []corev1.PersistentVolumeClaim
}

func workloads(objs []object) []workload {
	var out []workload
	for _, o := range objs {
		switch w := o.obj.(type) {
		case *appsv1.Deployment:
			out = append(out, workload{"Deployment", w.Name, w.Spec.Selector.MatchLabels, w.Spec.Template, nil})
		case *appsv1.StatefulSet:
			out = append(out, workload{"StatefulSet", w.Name, w.Spec.Selector.MatchLabels, w.Spec.Template, w.Spec.VolumeClaimTemplates})
		}
	}
	return out
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestChartObjectsAreValid renders every value set and checks each object against the rules the
// API server would apply to it (names, labels, ports, env names) and against each other
// (selectors, target ports, mounts, scale targets), plus the security baseline.
func TestChartObjectsAreValid(t *testing.T) {
	for name, vals := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			objs := render(t, vals)
			ws := workloads(objs)
			if len(ws) != 6 {
				t.Fatalf("%d workloads, want catalogsvc, transcodesvc, appendsvc, fetchsvc, schemasvc, frontdoor", len(ws))
			}
			for _, o := range objs {
				for _, msg := range validation.IsDNS1123Subdomain(o.name) {
					t.Errorf("%s %s: name: %s", o.kind, o.name, msg)
				}
			}
			for _, w := range ws {
				checkWorkload(t, w)
			}
			for _, o := range objs {
				switch x := o.obj.(type) {
				case *corev1.Service:
					checkService(t, x, ws)
				case *policyv1.PodDisruptionBudget:
					if matching(ws, x.Spec.Selector.MatchLabels) == nil {
						t.Errorf("PodDisruptionBudget %s selects no workload's pods", x.Name)
					}
					if (x.Spec.MinAvailable == nil) == (x.Spec.MaxUnavailable == nil) {
						t.Errorf("PodDisruptionBudget %s: exactly one of minAvailable and maxUnavailable", x.Name)
					}
				case *autoscalingv2.HorizontalPodAutoscaler:
					ref := x.Spec.ScaleTargetRef
					found := false
					for _, w := range ws {
						found = found || (w.kind == ref.Kind && w.name == ref.Name && ref.APIVersion == "apps/v1")
					}
					if !found {
						t.Errorf("HPA %s scales %s %s, which the chart does not create", x.Name, ref.Kind, ref.Name)
					}
					if x.Spec.MinReplicas == nil || *x.Spec.MinReplicas < 1 || x.Spec.MaxReplicas < *x.Spec.MinReplicas {
						t.Errorf("HPA %s: replicas %v..%d", x.Name, x.Spec.MinReplicas, x.Spec.MaxReplicas)
					}
				case *serviceMonitor:
					if matchingService(objs, x.Spec.Selector.MatchLabels, "metrics") == nil {
						t.Errorf("ServiceMonitor %s selects no Service with a metrics port", x.Metadata.Name)
					}
				}
			}
		})
	}
}

func checkLabels(t *testing.T, what string, labels map[string]string) {
	t.Helper()
	for k, v := range labels {
		for _, msg := range validation.IsQualifiedName(k) {
			t.Errorf("%s: label key %q: %s", what, k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			t.Errorf("%s: label %s value %q: %s", what, k, v, msg)
		}
	}
}

func checkWorkload(t *testing.T, w workload) {
	t.Helper()
	what := w.kind + " " + w.name
	checkLabels(t, what, w.pod.Labels)
	if !subset(w.selector, w.pod.Labels) {
		t.Errorf("%s: selector %v does not match its pod labels %v", what, w.selector, w.pod.Labels)
	}
	spec := w.pod.Spec
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil {
		t.Errorf("%s: pod must run as non-root with a seccomp profile", what)
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	for _, c := range w.claims {
		volumes[c.Name] = true
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", what, len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.Image == "" || c.ReadinessProbe == nil || c.LivenessProbe == nil {
		t.Errorf("%s: container needs an image and readiness and liveness probes", what)
	}
	if s := c.SecurityContext; s == nil || s.ReadOnlyRootFilesystem == nil || !*s.ReadOnlyRootFilesystem ||
		s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation || s.Capabilities == nil || len(s.Capabilities.Drop) == 0 {
		t.Errorf("%s: container must have a read-only root file system, no privilege escalation, capabilities dropped", what)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: container needs CPU and memory requests and a memory limit", what)
	}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			t.Errorf("%s: mounts volume %q, which the pod does not have", what, m.Name)
		}
	}
	for _, p := range c.Ports {
		for _, msg := range validation.IsValidPortName(p.Name) {
			t.Errorf("%s: port name %q: %s", what, p.Name, msg)
		}
		for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
			t.Errorf("%s: port %d: %s", what, p.ContainerPort, msg)
		}
	}
	defined := map[string]bool{}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for _, e := range c.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			t.Errorf("%s: env %q: %s", what, e.Name, msg)
		}
		// Kubernetes expands $(VAR) only for variables defined earlier in the list.
		for _, m := range ref.FindAllStringSubmatch(e.Value, -1) {
			if !defined[m[1]] {
				t.Errorf("%s: %s refers to $(%s), which is not defined before it", what, e.Name, m[1])
			}
		}
		defined[e.Name] = true
	}
}

func matching(ws []workload, sel map[string]string) *workload {
	for i := range ws {
		if subset(sel, ws[i].pod.Labels) {
			return &ws[i]
		}
	}
	return nil
}

func matchingService(objs []object, sel map[string]string, port string) *corev1.Service {
	for _, o := range objs {
		if s, ok := o.obj.(*corev1.Service); ok && subset(sel, s.Labels) {
			for _, p := range s.Spec.Ports {
				if p.Name == port {
					return s
				}
			}
		}
	}
	return nil
}

func checkService(t *testing.T, s *corev1.Service, ws []workload) {
	t.Helper()
	for _, msg := range validation.IsDNS1035Label(s.Name) {
		t.Errorf("Service %s: name: %s", s.Name, msg)
	}
	var pod *corev1.PodTemplateSpec
	if w := matching(ws, s.Spec.Selector); w != nil {
		pod = &w.pod
	} else if name := s.Spec.Selector["statefulset.kubernetes.io/pod-name"]; name != "" && len(s.Spec.Selector) == 1 {
		// A per-pod Service: the pod is <statefulset>-<ordinal>.
		for i := range ws {
			if ws[i].kind == "StatefulSet" && strings.HasPrefix(name, ws[i].name+"-") {
				pod = &ws[i].pod
			}
		}
	}
	if pod == nil {
		t.Errorf("Service %s: selector %v matches no pods of the chart", s.Name, s.Spec.Selector)
		return
	}
	for _, p := range s.Spec.Ports {
		for _, msg := range validation.IsValidPortNum(int(p.Port)) {
			t.Errorf("Service %s: port %d: %s", s.Name, p.Port, msg)
		}
		found := false
		for _, cp := range pod.Spec.Containers[0].Ports {
			found = found || cp.Name == p.TargetPort.String() || strconv.Itoa(int(cp.ContainerPort)) == p.TargetPort.String()
		}
		if !found {
			t.Errorf("Service %s: targetPort %s is no port of its pods", s.Name, p.TargetPort.String())
		}
	}
}

// documentedSettings reads docs/configuration.md (generated from the binaries and checked by
// e2e/docs) into each service's environment variable names (each service's table lists all of
// its settings, the shared ones included).
func documentedSettings(t *testing.T) map[string]map[string]bool {
	t.Helper()
	root, err := stack.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]bool{}
	section := ""
	row := regexp.MustCompile("^\\| `-[a-z0-9-]+` \\| `(FERRY_[A-Z0-9_]+)` \\|")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			section = strings.TrimPrefix(line, "## ")
			continue
		}
		if strings.HasPrefix(line, "### ") {
			section = "" // subcommands (frontdoor hash-password) are not the server's settings
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch section {
		case stack.Frontdoor, stack.Catalog, stack.Transcode, stack.Append, stack.Fetch, stack.Schema:
			if out[section] == nil {
				out[section] = map[string]bool{}
			}
			out[section][m[1]] = true
		}
	}
	for _, svc := range []string{stack.Frontdoor, stack.Catalog, stack.Transcode, stack.Append, stack.Fetch, stack.Schema} {
		if !out[svc]["FERRY_LISTEN"] {
			t.Fatalf("docs/configuration.md: no settings table for %s (found %v)", svc, out)
		}
	}
	return out
}

// TestChartAgreesWithServices: every FERRY_* variable the chart sets is a setting of the
// service it is given to, every port is the one the service listens on in the local stack
// (whose ports compose.yaml shares), and every address frontdoor is given names a Service of
// the chart with that port.
func TestChartAgreesWithServices(t *testing.T) {
	settings := documentedSettings(t)
	ports := map[string]map[string]int{}
	for _, spec := range stack.DefaultConfig().ServiceSpecs() {
		if ports[spec.Package] == nil {
			ports[spec.Package] = spec.Ports
		}
	}
	for name, vals := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			objs := render(t, vals)
			services := map[string]*corev1.Service{}
			for _, o := range objs {
				if s, ok := o.obj.(*corev1.Service); ok {
					services[s.Name] = s
				}
			}
			for _, w := range workloads(objs) {
				svc := w.pod.Labels["app.kubernetes.io/component"]
				known, ok := settings[svc]
				if !ok {
					t.Fatalf("%s %s: component %q is no Ferry service", w.kind, w.name, svc)
				}
				c := w.pod.Spec.Containers[0]
				for _, e := range c.Env {
					if strings.HasPrefix(e.Name, "FERRY_") && !known[e.Name] {
						t.Errorf("%s: sets %s, which is not a setting of %s", w.name, e.Name, svc)
					}
					if e.Name == "FERRY_LISTEN" || e.Name == "FERRY_METRICS_ADDR" || e.Name == "FERRY_KAFKA_LISTEN" {
						checkListenPort(t, w.name, e, c.Ports)
					}
					if strings.HasSuffix(e.Name, "_ADDR") && e.Name != "FERRY_METRICS_ADDR" && e.Name != "FERRY_ADVERTISED_ADDR" {
						checkAddressNamesService(t, w.name, e, services)
					}
				}
				if !hasEnv(c.Env, "FERRY_GRPC_PLAINTEXT") && !(hasEnv(c.Env, "FERRY_GRPC_TLS_CA") && hasEnv(c.Env, "FERRY_GRPC_TLS_CERT") && hasEnv(c.Env, "FERRY_GRPC_TLS_KEY")) {
					t.Errorf("%s: neither plaintext nor all internal gRPC TLS files: the service would not start", w.name)
				}
				checkGOMAXPROCS(t, w.name, c)
				for role, want := range ports[svc] {
					found := false
					for _, p := range c.Ports {
						found = found || (p.Name == role && int(p.ContainerPort) == want)
					}
					if !found {
						t.Errorf("%s: no container port %s=%d (the service's %s port in the local stack); has %v", w.name, role, want, role, c.Ports)
					}
				}
			}
		})
	}
}

// checkGOMAXPROCS: the container's Go threads follow its CPU request, which
// it must have (without one Kubernetes would give 0, and Go all the node's
// cores).
func checkGOMAXPROCS(t *testing.T, name string, c corev1.Container) {
	t.Helper()
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
		t.Errorf("%s: no CPU request for GOMAXPROCS to follow", name)
	}
	for _, e := range c.Env {
		if e.Name != "GOMAXPROCS" {
			continue
		}
		ref := e.ValueFrom
		if ref == nil || ref.ResourceFieldRef == nil || ref.ResourceFieldRef.Resource != "requests.cpu" ||
			ref.ResourceFieldRef.Divisor.String() != "1" {
			t.Errorf("%s: GOMAXPROCS is %+v, want the CPU request in whole cores", name, e)
		}
		return
	}
	t.Errorf("%s: no GOMAXPROCS: Go would run on every core of the node", name)
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name && (e.Value != "" || e.ValueFrom != nil) {
			return true
		}
	}
	return false
}

func checkListenPort(t *testing.T, workload string, e corev1.EnvVar, ports []corev1.ContainerPort) {
	t.Helper()
	_, p, err := net.SplitHostPort(e.Value)
	if err != nil {
		t.Errorf("%s: %s=%q: %v", workload, e.Name, e.Value, err)
		return
	}
	for _, cp := range ports {
		if strconv.Itoa(int(cp.ContainerPort)) == p {
			return
		}
	}
	t.Errorf("%s: %s listens on %s, which is no container port", workload, e.Name, p)
}

func checkAddressNamesService(t *testing.T, workload string, e corev1.EnvVar, services map[string]*corev1.Service) {
	t.Helper()
	for _, addr := range strings.Split(e.Value, ",") {
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Errorf("%s: %s=%q: %v", workload, e.Name, e.Value, err)
			continue
		}
		s, ok := services[host]
		if !ok {
			if !strings.Contains(host, ".") { // a name outside the chart (e.g. Fluss) is the user's
				t.Errorf("%s: %s names %s, which is no Service of the chart", workload, e.Name, host)
			}
			continue
		}
		found := false
		for _, sp := range s.Spec.Ports {
			found = found || strconv.Itoa(int(sp.Port)) == p
		}
		if !found {
			t.Errorf("%s: %s names port %s of Service %s, which does not have it", workload, e.Name, p, host)
		}
	}
}
