// Command kafkacapture puts the capture proxy (package capture) between Kafka clients and one broker
// — the reference Kafka or Ferry — and prints every client request as a JSON line on stdout (API,
// version, client id, and for Produce: acks, codec, magic, producer id per batch):
//
//	go run ./e2e/clients/cmd/kafkacapture --listen 127.0.0.1:19192 --upstream 127.0.0.1:19092
//
// Clients bootstrap from --listen; broker addresses in Metadata/FindCoordinator/DescribeCluster
// answers are rewritten to it. Stops on SIGINT/SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ferrygw/ferry/e2e/clients/capture"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:19192", "address clients connect to")
	upstream := flag.String("upstream", "127.0.0.1:19092", "the broker (host:port) to forward to")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	px, err := capture.Start(*listen, *upstream, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	log.Info("capturing", "listen", px.Addr(), "upstream", *upstream)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	enc := json.NewEncoder(os.Stdout)
	printed := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := px.Close(); err != nil {
				log.Warn("close", "err", err)
			}
			return
		case <-tick.C:
			reqs := px.Requests()
			for _, r := range reqs[printed:] {
				if err := enc.Encode(r); err != nil {
					log.Error("stdout", "err", err)
					return
				}
			}
			printed = len(reqs)
		}
	}
}
