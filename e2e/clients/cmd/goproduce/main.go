// Command goproduce runs one of the Go-reachable Kafka producers — franz-go kgo, IBM/sarama,
// segmentio/kafka-go, or kcat (librdkafka, the Debian package, driven as a subprocess) — under the
// harness's uniform contract (../../README.md):
//
//	goproduce --client franz|sarama|kafkago|kcat produce --bootstrap H:P --topic T ... < records.jsonl
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

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// producer sends recs and returns one Delivery per record, in index order.
type producer func(ctx context.Context, o protocol.Options, recs []protocol.Record, log *slog.Logger) ([]protocol.Delivery, error)

var producers = map[string]producer{
	"franz":   produceFranz,
	"sarama":  produceSarama,
	"kafkago": produceKafkaGo,
	"kcat":    produceKcat,
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if len(args) < 2 || args[0] != "--client" {
		fmt.Fprintln(os.Stderr, "usage: goproduce --client franz|sarama|kafkago|kcat produce [flags] < records.jsonl")
		return protocol.ExitUsage
	}
	name := args[1]
	p, ok := producers[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "goproduce: unknown --client %q (want franz, sarama, kafkago or kcat)\n", name)
		return protocol.ExitUsage
	}
	o, err := protocol.ParseArgs(args[2:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "goproduce: %v\n", err)
		return protocol.ExitUsage
	}
	recs, err := protocol.ReadRecords(os.Stdin, o.KeyField)
	if err != nil {
		fmt.Fprintf(os.Stderr, "goproduce: stdin: %v\n", err)
		return protocol.ExitUsage
	}
	log = log.With("client", name, "topic", o.Topic)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	ds, err := p(ctx, o, recs, log)
	if err != nil {
		// A set-up failure (bad option combination the client rejects, unreachable binary): every
		// record reports it, so the caller sees why nothing was delivered.
		log.Error("producer failed", "err", err)
		ds = make([]protocol.Delivery, len(recs))
		for i := range ds {
			ds[i] = protocol.Delivery{Index: i, Error: err.Error()}
		}
		if len(recs) == 0 {
			fmt.Fprintf(os.Stderr, "goproduce: %v\n", err)
			return protocol.ExitFailed
		}
	}
	return emit(ds)
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
			fmt.Fprintf(os.Stderr, "goproduce: stdout: %v\n", err)
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
