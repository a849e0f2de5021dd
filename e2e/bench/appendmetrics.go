package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// appendsvc's ferry_append_request_jobs histogram (docs/observability.md) tells how many jobs
// (Kafka batches of one bucket) each Fluss ProduceLog request carried: how much coalescing found
// to put together during a produce run.

// errNoRequestJobs: the histogram is not in the metrics, as before appendsvc's first request.
var errNoRequestJobs = errors.New("no ferry_append_request_jobs in appendsvc's metrics")

// appendMetricsPort is where appendsvc (or, with -single, the one process) serves /metrics.
func (c *config) appendMetricsPort() int { return c.ServicePortBase + 53 }

// requestJobs is a reading of the histogram: jobs and requests so far.
type requestJobs struct{ jobs, requests float64 }

// perRequest is the jobs per request between an earlier reading and this one (0: none sent).
func (r requestJobs) perRequest(before requestJobs) float64 {
	if n := r.requests - before.requests; n > 0 {
		return (r.jobs - before.jobs) / n
	}
	return 0
}

// parseRequestJobs sums ferry_append_request_jobs_sum and _count over their series in a
// Prometheus text exposition.
func parseRequestJobs(r io.Reader) (requestJobs, error) {
	var rj requestJobs
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into *float64
		switch {
		case strings.HasPrefix(line, "ferry_append_request_jobs_sum"):
			into = &rj.jobs
		case strings.HasPrefix(line, "ferry_append_request_jobs_count"):
			into = &rj.requests
		default:
			continue
		}
		// name{labels} value [timestamp], or name value [timestamp]
		rest := line
		if i := strings.LastIndexByte(line, '}'); i >= 0 {
			rest = line[i+1:]
		} else if i := strings.IndexByte(line, ' '); i >= 0 {
			rest = line[i:]
		} else {
			rest = ""
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return rj, fmt.Errorf("metrics line %q has no value", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return rj, fmt.Errorf("metrics line %q: %w", line, err)
		}
		*into += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return rj, err
	}
	if !found {
		return rj, errNoRequestJobs
	}
	return rj, nil
}

// scrapeRequestJobs reads the histogram from appendsvc's /metrics on port.
func scrapeRequestJobs(ctx context.Context, port int) (requestJobs, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		return requestJobs{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return requestJobs{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return requestJobs{}, fmt.Errorf("GET /metrics on port %d: %s", port, resp.Status)
	}
	return parseRequestJobs(resp.Body)
}
