package suite

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProduceConcurrent: four producers (three franz-go, one sarama; separate connections) write
// the same partitions at once. Every acknowledged offset must be unique, each partition's
// offsets must be exactly 0..n-1, and every row must be the record acknowledged there.
func TestProduceConcurrent(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "concurrent")
	topic := topicTable(t, f, db, "shared", jsonBuckets, jsonColumns, jsonProps)
	const producers, per = 4, 120

	results := make([][]sent, producers)
	errs := make([]error, producers)
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		recs := make([]sent, per)
		for i := range recs {
			recs[i] = jsonRecord("shared", p*per+i)
		}
		// Clients are made here, on the test goroutine, where t.Fatal may run.
		var cl *kgo.Client
		if p < producers-1 {
			cl = newKgo(t, e.kafka, kgo.ProducerLinger(time.Millisecond))
		}
		wg.Add(1)
		go func(p int, cl *kgo.Client) {
			defer wg.Done()
			// Each goroutine ends when its produce calls return (bounded by their contexts).
			if cl != nil {
				results[p], errs[p] = kgoProduceErr(cl, toKgo(topic, recs), 20)
			} else {
				results[p], errs[p] = saramaProduceErr(e.kafka, topic, recs, 20)
			}
		}(p, cl)
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			t.Fatalf("producer %d: %v", p, err)
		}
	}
	var acked []sent
	for _, r := range results {
		acked = append(acked, r...)
	}
	verifyRows(t, f, db, "shared", acked, jsonRow(producers*per))
}
