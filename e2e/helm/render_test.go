package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferrygw/ferry/e2e/stack"
)

// object is one rendered manifest, decoded into its typed form.
type object struct {
	file, kind, name string
	obj              any
}

// serviceMonitor is the part of the Prometheus operator's ServiceMonitor the chart writes; its
// Go types are not in k8s.io/api, so this strict mirror stands in for them.
type serviceMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		JobLabel string `json:"jobLabel"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

func chartDir(t *testing.T) string {
	t.Helper()
	root, err := stack.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "deploy", "helm", "ferry")
}

// render renders the chart as `helm template` does, with values over the chart's defaults.
func render(t *testing.T, values map[string]any) []object {
	t.Helper()
	chrt, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	vals, err := util.ToRenderValues(chrt, values, common.ReleaseOptions{Name: "ferry", Namespace: "streaming", IsInstall: true}, common.DefaultCapabilities)
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []object
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for i, doc := range strings.Split(files[n], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			out = append(out, decode(t, fmt.Sprintf("%s#%d", n, i), doc))
		}
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// decode turns one YAML document into its typed object, refusing unknown fields (a misspelled
// or misplaced key is an error, not silently dropped as kubectl apply would).
func decode(t *testing.T, file, doc string) object {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("%s: not YAML: %v\n%s", file, err, doc)
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(js, &meta); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var obj any
	switch meta.APIVersion + " " + meta.Kind {
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "apps/v1 StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		obj = &serviceMonitor{}
	default:
		t.Fatalf("%s: unexpected object %s %s", file, meta.APIVersion, meta.Kind)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		t.Fatalf("%s (%s %s): %v\n%s", file, meta.Kind, meta.Metadata.Name, err, doc)
	}
	return object{file: file, kind: meta.Kind, name: meta.Metadata.Name, obj: obj}
}

// valueSets are the value files the chart is checked with: the defaults (plus the one required
// value) and one with external access, SASL, ACLs, autoscaling, a ServiceMonitor and tracing.
func valueSets(t *testing.T) map[string]map[string]any {
	t.Helper()
	full := map[string]any{}
	data, err := os.ReadFile(filepath.Join("testdata", "external-sasl-autoscaling.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &full); err != nil {
		t.Fatal(err)
	}
	return map[string]map[string]any{
		"defaults":                  {"fluss": map[string]any{"bootstrap": "fluss-coordinator:9123"}},
		"external-sasl-autoscaling": full,
		"plaintext-loadbalancer": {
			"fluss": map[string]any{"bootstrap": "fluss-coordinator:9123"},
			"grpc":  map[string]any{"plaintext": true},
			"frontdoor": map[string]any{"externalAccess": map[string]any{
				"enabled": true, "mode": "loadBalancer", "domain": "kafka.example.com"}},
		},
	}
}
