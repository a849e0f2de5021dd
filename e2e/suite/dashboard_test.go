package suite

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/stack"
)

// dashboardPath is the Grafana dashboard the Helm chart ships and compose provisions.
var dashboardPath = filepath.Join("deploy", "helm", "ferry", "dashboards", "ferry.json")

// dashboardQuery is one PromQL expression of a panel.
type dashboardQuery struct {
	panel, expr string
}

func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	root, err := stack.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, dashboardPath))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var out []dashboardQuery
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q queries nothing", dashboardPath, p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, dashboardQuery{p.Title, tg.Expr})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no queries", dashboardPath)
	}
	return out
}

// TestDashboardQueriesExportedMetrics produces records (and one refused batch, so the error
// series exist) through the stack, consumes them in a group, scrapes every service, and checks that each metric a panel
// of the Grafana dashboard queries is exported by the service its job="..." selector names,
// with the labels the query groups by.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "dashboard")
	topic := topicTable(t, f, db, "watched", jsonBuckets, jsonColumns, jsonProps)
	cl := newKgo(t, e.kafka, kgo.ProducerLinger(5*time.Millisecond))
	recs := make([]sent, 12)
	for i := range recs {
		recs[i] = jsonRecord("dashboard", i)
	}
	kgoProduce(t, cl, toKgo(topic, recs), 6)
	bad := []*kgo.Record{{Topic: topic, Partition: 0, Value: []byte(`{"id": "not a number"}`)}}
	if _, err := kgoProduceErr(cl, bad, 1); err == nil {
		t.Fatal("a record that does not convert was acknowledged")
	}
	// A consumer group reads and commits, so that the consume series exist; the lag gauge
	// appears once frontdoor refreshed it after the commit.
	g := newGroupConsumer(t, e.kafka, "g-"+db, topic)
	g.poll(t, 4*time.Second)
	g.cl.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, ok := scrapeService(t, e, stack.Frontdoor).sum("ferry_frontdoor_consumer_group_lag", map[string]string{"group": "g-" + db}); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no consumer group lag series 30 s after the group committed")
		}
		time.Sleep(time.Second)
	}

	// The job names of deploy/prometheus/prometheus.yml are the compose service names, which
	// are the service packages (every transcoder instance is in the transcodesvc job).
	pages := map[string]promPage{}
	for _, spec := range e.stack.Config().ServiceSpecs() {
		pages[spec.Package] = append(pages[spec.Package], scrapeService(t, e, spec.Name)...)
	}
	for _, q := range dashboardQueries(t) {
		sel, err := promqlSelectors(q.expr)
		if err != nil {
			t.Errorf("panel %q: %v", q.panel, err)
			continue
		}
		for _, s := range sel.metrics {
			page, ok := pages[s.job]
			if !ok {
				t.Errorf("panel %q: %s{job=%q}: no such service (jobs: %v)", q.panel, s.name, s.job, slices.Sorted(maps.Keys(pages)))
				continue
			}
			labels := map[string]bool{}
			found := false
			for _, smp := range page {
				if smp.name == s.name {
					found = true
					for k := range smp.labels {
						labels[k] = true
					}
				}
			}
			if !found {
				t.Errorf("panel %q: %s does not export %s", q.panel, s.job, s.name)
				continue
			}
			for _, l := range sel.groupBy {
				if l == "le" || l == "instance" || l == "job" {
					continue // set by the histogram or by Prometheus itself
				}
				if !labels[l] {
					t.Errorf("panel %q: groups by %q, which %s's %s does not carry (it has %v)", q.panel, l, s.job, s.name, slices.Sorted(maps.Keys(labels)))
				}
			}
		}
	}
}

// promqlSelection is what a PromQL expression reads: the metrics (each with the job its
// selector names) and the labels it groups by.
type promqlSelection struct {
	metrics []promqlMetric
	groupBy []string
}

type promqlMetric struct{ name, job string }

var (
	promIdent       = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promNumber      = regexp.MustCompile(`^[0-9][0-9.eE+-]*`)
	promJob         = regexp.MustCompile(`(?:^|[{,\s])job\s*=\s*"([^"]*)"`)
	promAggregation = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "count": true, "stddev": true,
		"stdvar": true, "topk": true, "bottomk": true, "quantile": true, "group": true, "count_values": true}
	promGroupBy = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
)

// promqlSelectors reads the metric selectors of a PromQL expression written in the
// dashboard's style: every metric is a selector with braces holding a job="..." matcher;
// identifiers followed by "(" are functions or aggregations, and the parenthesised list after
// by/without/on/ignoring holds label names. Anything else (a bare metric name, a selector
// without a job) is an error, so a query the check cannot read fails instead of passing.
func promqlSelectors(expr string) (promqlSelection, error) {
	var out promqlSelection
	s := expr
	skipSpace := func() { s = strings.TrimLeft(s, " \t\n") }
	for skipSpace(); s != ""; skipSpace() {
		switch c := s[0]; {
		case c == '"':
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return out, fmt.Errorf("unterminated string in %q", expr)
			}
			s = s[end+2:]
		case c == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return out, fmt.Errorf("unterminated range in %q", expr)
			}
			s = s[end+1:]
		case c == '{':
			return out, fmt.Errorf("a selector without a metric name in %q", expr)
		case strings.ContainsRune("(),+-*/%^<>=!", rune(c)):
			s = s[1:]
		case promNumber.MatchString(s):
			s = s[len(promNumber.FindString(s)):]
		case promIdent.MatchString(s):
			id := promIdent.FindString(s)
			s = s[len(id):]
			skipSpace()
			switch {
			case promGroupBy[id]:
				if !strings.HasPrefix(s, "(") {
					return out, fmt.Errorf("%s without a label list in %q", id, expr)
				}
				end := strings.IndexByte(s, ')')
				if end < 0 {
					return out, fmt.Errorf("unterminated label list in %q", expr)
				}
				for _, l := range strings.Split(s[1:end], ",") {
					if l = strings.TrimSpace(l); l != "" {
						out.groupBy = append(out.groupBy, l)
					}
				}
				s = s[end+1:]
			case strings.HasPrefix(s, "("), promAggregation[id] && (strings.HasPrefix(s, "by") || strings.HasPrefix(s, "without")):
				// a function or an aggregation; its arguments (or its grouping) follow
			case strings.HasPrefix(s, "{"):
				end := strings.IndexByte(s, '}')
				if end < 0 {
					return out, fmt.Errorf("unterminated selector in %q", expr)
				}
				m := promJob.FindStringSubmatch(s[1:end])
				if m == nil {
					return out, fmt.Errorf("%s has no job=\"...\" matcher in %q", id, expr)
				}
				out.metrics = append(out.metrics, promqlMetric{id, m[1]})
				s = s[end+1:]
			default:
				return out, fmt.Errorf("%s is neither a selector with a job matcher nor a function in %q", id, expr)
			}
		default:
			return out, fmt.Errorf("unexpected %q in %q", s[:1], expr)
		}
	}
	if len(out.metrics) == 0 {
		return out, fmt.Errorf("no metric in %q", expr)
	}
	return out, nil
}

func TestPromQLSelectors(t *testing.T) {
	got, err := promqlSelectors(`histogram_quantile(0.99, sum by (le, api) (rate(ferry_x_seconds_bucket{job="frontdoor", api!="Fetch"}[1m]))) / 2`)
	if err != nil {
		t.Fatal(err)
	}
	want := promqlSelection{metrics: []promqlMetric{{"ferry_x_seconds_bucket", "frontdoor"}}, groupBy: []string{"le", "api"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	got, err = promqlSelectors(`sum(rate(a_total{job="appendsvc"}[5m])) + max without (x) (b{job="catalogsvc"})`)
	if err != nil || len(got.metrics) != 2 || got.metrics[1] != (promqlMetric{"b", "catalogsvc"}) || !reflect.DeepEqual(got.groupBy, []string{"x"}) {
		t.Errorf("two selectors: %+v, %v", got, err)
	}
	got, err = promqlSelectors(`label_replace(x{job="a"}, "dst", "$1", "src", "(.*)")`)
	if err != nil || len(got.metrics) != 1 || got.metrics[0].name != "x" {
		t.Errorf("strings with parentheses must be skipped: %+v, %v", got, err)
	}
	for _, bad := range []string{
		`rate(ferry_x_total[1m])`,          // a bare metric name: its service is unknown
		`sum(ferry_x_total{instance="a"})`, // no job
		`sum by le (x{job="a"})`,           // no label list
		`{job="frontdoor"}`,                // no metric name
		`x{job="a"`,                        // unterminated selector
		`1 + 2`,                            // no metric
	} {
		if _, err := promqlSelectors(bad); err == nil {
			t.Errorf("promqlSelectors(%q) accepted it", bad)
		}
	}
}
