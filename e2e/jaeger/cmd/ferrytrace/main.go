// Command ferrytrace prints traces from a running Jaeger as span trees with per-span offsets and
// durations: the end-to-end view of a produce request (frontdoor → transcodesvc → appendsvc →
// Fluss) in a terminal. It queries Jaeger's api_v3 through package e2e/jaeger.
//
//	go run ./e2e/jaeger/cmd/ferrytrace                                   # 5 latest kafka.produce traces
//	go run ./e2e/jaeger/cmd/ferrytrace -min-duration 50ms -limit 20      # slow produce requests
//	go run ./e2e/jaeger/cmd/ferrytrace -trace 4bf92f3577b34da6a3ce929d0e0e4736
//	go run ./e2e/jaeger/cmd/ferrytrace -services                         # what Jaeger has seen
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/ferrygw/ferry/e2e/jaeger"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	url         string
	service     string
	operation   string
	minDuration time.Duration
	maxDuration time.Duration
	lookback    time.Duration
	limit       int
	traceID     string
	services    bool
	timeout     time.Duration
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("ferrytrace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "query", "http://127.0.0.1:16686", "Jaeger query service base URL")
	fs.StringVar(&o.service, "service", "frontdoor", "service whose spans select the traces")
	fs.StringVar(&o.operation, "operation", "kafka.produce", "span name within -service (empty: any)")
	fs.DurationVar(&o.minDuration, "min-duration", 0, "only traces whose matching span took at least this")
	fs.DurationVar(&o.maxDuration, "max-duration", 0, "only traces whose matching span took at most this")
	fs.DurationVar(&o.lookback, "lookback", time.Hour, "search window back from now")
	fs.IntVar(&o.limit, "limit", 5, "maximum number of traces")
	fs.StringVar(&o.traceID, "trace", "", "print this one trace (32 hex digits) instead of searching")
	fs.BoolVar(&o.services, "services", false, "list services and their operations instead")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "give up after this")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.limit <= 0:
		return o, fmt.Errorf("-limit %d must be positive", o.limit)
	case o.lookback <= 0:
		return o, fmt.Errorf("-lookback %v must be positive", o.lookback)
	case o.timeout <= 0:
		return o, fmt.Errorf("-timeout %v must be positive", o.timeout)
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "ferrytrace:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if err := query(ctx, jaeger.NewClient(o.url), o, stdout); err != nil {
		fmt.Fprintln(stderr, "ferrytrace:", err)
		return 1
	}
	return 0
}

func query(ctx context.Context, c *jaeger.Client, o options, w io.Writer) error {
	switch {
	case o.services:
		services, err := c.Services(ctx)
		if err != nil {
			return err
		}
		for _, s := range services {
			ops, err := c.Operations(ctx, s)
			if err != nil {
				return err
			}
			fmt.Fprintln(w, s)
			for _, op := range ops {
				fmt.Fprintf(w, "  %s (%s)\n", op.Name, op.SpanKind)
			}
		}
		return nil
	case o.traceID != "":
		t, err := c.Trace(ctx, o.traceID)
		if err != nil {
			return err
		}
		printTrace(w, t)
		return nil
	}
	q := jaeger.Query{Service: o.service, Operation: o.operation, Lookback: o.lookback,
		MinDuration: o.minDuration, MaxDuration: o.maxDuration, Limit: o.limit}
	traces, err := c.FindTraces(ctx, q)
	if err != nil {
		return err
	}
	if len(traces) == 0 {
		return fmt.Errorf("no traces of %s/%s in the last %v matched (is the stack exporting to this Jaeger? try -services)", o.service, o.operation, o.lookback)
	}
	for i, t := range traces {
		if i > 0 {
			fmt.Fprintln(w)
		}
		printTrace(w, t)
	}
	return nil
}

// printTrace writes the span tree and, per service, the summed duration of its top-level spans
// in the trace: where a request spent its time.
func printTrace(w io.Writer, t jaeger.Trace) {
	fmt.Fprint(w, t.Tree())
	total := map[string]time.Duration{}
	for _, s := range t.Spans {
		parent, ok := t.Span(s.ParentSpanID)
		// Only a service's outermost spans count, so nested spans are not added twice.
		if !ok || parent.Service != s.Service {
			total[s.Service] += s.Duration
		}
	}
	names := make([]string, 0, len(total))
	for n := range total {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprint(w, "time in service:")
	for _, n := range names {
		fmt.Fprintf(w, "  %s %v", n, total[n].Round(time.Microsecond))
	}
	fmt.Fprintln(w)
}
