// Command gorunner runs one of the Go-reachable Kafka clients — franz-go kgo, IBM/sarama,
// segmentio/kafka-go, or kcat (librdkafka, the Debian package, driven as a subprocess) — under the
// harness's uniform contract (../../README.md):
//
//	gorunner --client franz|sarama|kafkago|kcat produce --bootstrap H:P --topic T ... < records.jsonl
//	gorunner --client franz|sarama|kafkago|kcat consume --bootstrap H:P --topic T --count N ...
//
// Each library is used as an application would use it: only the options a flag names are set, so
// everything else is the library's own default.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// producer sends recs and returns one Delivery per record, in index order.
type producer func(ctx context.Context, o protocol.Options, recs []protocol.Record, log *slog.Logger) ([]protocol.Delivery, error)

// client is one library's produce and consume.
type client struct {
	produce producer
	consume consumer
}

var clients = map[string]client{
	"franz":   {produceFranz, consumeFranz},
	"sarama":  {produceSarama, consumeSarama},
	"kafkago": {produceKafkaGo, consumeKafkaGo},
	"kcat":    {produceKcat, consumeKcat},
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if len(args) < 3 || args[0] != "--client" {
		fmt.Fprintln(os.Stderr, "usage: gorunner --client franz|sarama|kafkago|kcat produce|consume [flags]")
		return protocol.ExitUsage
	}
	name := args[1]
	c, ok := clients[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "gorunner: unknown --client %q (want franz, sarama, kafkago or kcat)\n", name)
		return protocol.ExitUsage
	}
	if args[2] == "consume" {
		return runConsume(name, c.consume, args[2:], log)
	}
	o, err := protocol.ParseArgs(args[2:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "gorunner: %v\n", err)
		return protocol.ExitUsage
	}
	recs, err := protocol.ReadRecords(os.Stdin, o.KeyField)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gorunner: stdin: %v\n", err)
		return protocol.ExitUsage
	}
	log = log.With("client", name, "topic", o.Topic)

	ctx, cancel := runContext(o.Timeout)
	defer cancel()
	ds, err := c.produce(ctx, o, recs, log)
	if err != nil {
		// A set-up failure (bad option combination the client rejects, unreachable binary): every
		// record reports it, so the caller sees why nothing was delivered.
		log.Error("producer failed", "err", err)
		ds = make([]protocol.Delivery, len(recs))
		for i := range ds {
			ds[i] = protocol.Delivery{Index: i, Error: err.Error()}
		}
		if len(recs) == 0 {
			fmt.Fprintf(os.Stderr, "gorunner: %v\n", err)
			return protocol.ExitFailed
		}
	}
	return emit(ds)
}

// runContext ends at the run's deadline or on SIGINT/SIGTERM.
func runContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, func() { cancel(); stop() }
}

// emit prints the deliveries and derives the exit code.
func emit(ds []protocol.Delivery) int {
	enc := json.NewEncoder(os.Stdout)
	code := protocol.ExitOK
	for _, d := range ds {
		if !d.OK() {
			code = protocol.ExitFailed
		}
		if err := enc.Encode(d); err != nil {
			fmt.Fprintf(os.Stderr, "gorunner: stdout: %v\n", err)
			return protocol.ExitFailed
		}
	}
	return code
}

// pending marks every record without a report as failed with the context's error: the run's
// deadline passed before the client answered for it.
func pending(ctx context.Context, ds []protocol.Delivery, done []bool) {
	for i := range ds {
		if !done[i] {
			msg := "no delivery report"
			if err := ctx.Err(); err != nil {
				msg = "no delivery report before the deadline: " + err.Error()
			}
			ds[i] = protocol.Delivery{Index: i, Error: msg}
		}
	}
}
