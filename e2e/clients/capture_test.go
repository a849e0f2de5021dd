package clients

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/e2e/clients/capture"
)

// TestCaptureDefaults runs every client with nothing but --bootstrap/--topic through the capture
// proxy in front of the real broker and reports what each sends by default: the API versions it
// negotiates and uses, and what its Produce requests carry. It checks the observations against the
// clients' documented defaults (acks, idempotence ⇔ InitProducerId) and, with
// FERRY_CLIENTS_CAPTURE_OUT=file, writes the Markdown table used in README.md.
func TestCaptureDefaults(t *testing.T) {
	b := testBroker(t)
	ctx := t.Context()
	var rows []string
	scenarios := []struct {
		name string
		opts func(Client) (Options, bool)
	}{
		{"defaults", func(Client) (Options, bool) { return Options{}, true }},
		{"--idempotent true", func(c Client) (Options, bool) {
			return Options{Acks: "all", Idempotent: ptr(true)}, !c.NoIdempotence
		}},
		{"SASL/PLAIN", func(Client) (Options, bool) {
			return Options{SASLUser: b.SASLUser, SASLPassword: b.SASLPass}, b.SASL != ""
		}},
	}
	for _, c := range selectedClients(t) {
		for _, sc := range scenarios {
			opts, ok := sc.opts(c)
			if !ok {
				t.Logf("%s/%s: not applicable", c.Name, sc.name)
				continue
			}
			t.Run(c.Name+"/"+sc.name, func(t *testing.T) {
				upstream := b.Bootstrap
				if opts.SASLUser != "" {
					upstream = b.SASL
				}
				if err := c.Available(ctx); err != nil {
					if requireClients() {
						t.Fatal(err)
					}
					t.Skipf("skipping: %v; set FERRY_TEST_REQUIRE_CLIENTS=1 to make this fatal", err)
				}
				px, err := capture.Start("127.0.0.1:0", upstream, slog.New(slog.NewTextHandler(os.Stderr, nil)))
				if err != nil {
					t.Fatal(err)
				}
				defer px.Close()
				topic := fmt.Sprintf("capture-%s-%d", c.Name, time.Now().UnixNano())
				if err := CreateTopic(ctx, b.Bootstrap, topic, 1); err != nil {
					t.Fatal(err)
				}
				recs := testRecords("capture/"+c.Name, 3, !c.NoTimestamps)
				opts.Bootstrap, opts.Topic, opts.Timeout = px.Addr(), topic, 60*time.Second
				res, err := c.Produce(ctx, opts, recs)
				if err != nil {
					t.Fatalf("%v\nstderr: %s", err, res.Stderr)
				}
				if err := res.Err(); err != nil {
					t.Fatalf("through the proxy: %v", err)
				}
				idle, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if err := px.WaitIdle(idle); err != nil {
					t.Fatal(err)
				}
				reqs := px.Requests()
				var apis []string
				var produce []capture.Request
				initPID := false
				for _, r := range reqs {
					a := fmt.Sprintf("%s v%d", r.API, r.Version)
					if !slices.Contains(apis, a) {
						apis = append(apis, a)
					}
					if r.APIKey == 0 {
						produce = append(produce, r)
					}
					initPID = initPID || r.APIKey == 22
				}
				if len(produce) == 0 {
					t.Fatalf("no Produce request went through the proxy; saw %v", apis)
				}
				acks := map[int16]bool{}
				codecs := map[string]bool{}
				magic := map[int8]bool{}
				idem := map[bool]bool{}
				for _, r := range produce {
					acks[r.Produce.Acks] = true
					for _, bt := range r.Produce.Batches {
						codecs[bt.Codec] = true
						magic[bt.Magic] = true
						idem[bt.ProducerID >= 0] = true
					}
				}
				ackFlag := opts.Acks
				if ackFlag == "" {
					ackFlag = c.DefaultAcks
				}
				wantAcks := map[string]int16{"0": 0, "1": 1, "all": -1}[ackFlag]
				if len(acks) != 1 || !acks[wantAcks] {
					t.Errorf("Produce acks %v, want the client default %d", keys(acks), wantAcks)
				}
				if opts.Idempotent != nil && (len(idem) != 1 || !idem[true]) {
					t.Errorf("--idempotent true but batches with producer ids: %v", keys(idem))
				}
				if idem[true] != initPID {
					t.Errorf("batches with producer ids: %v, InitProducerId sent: %v (must agree)", keys(idem), initPID)
				}
				row := fmt.Sprintf("| %s | %s | %s | %s | %v | %v | %v | %v |", c.Name, sc.name, clientIDs(reqs), strings.Join(apis, ", "),
					keys(acks), keys(codecs), keys(magic), initPID)
				t.Log(row)
				rows = append(rows, row)
			})
		}
	}
	if out := os.Getenv("FERRY_CLIENTS_CAPTURE_OUT"); out != "" && len(rows) > 0 {
		table := "| client | flags | client.id | requests in order of first use (API vVersion) | Produce acks | codec | magic | idempotent (InitProducerId) |\n|---|---|---|---|---|---|---|---|\n" +
			strings.Join(rows, "\n") + "\n"
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func clientIDs(reqs []capture.Request) string {
	var ids []string
	for _, r := range reqs {
		id := fmt.Sprintf("%q", r.ClientID)
		if r.APIKey >= 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return strings.Join(ids, " ")
}
