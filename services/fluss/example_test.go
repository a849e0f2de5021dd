package fluss_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ferrygw/ferry/services/fluss"
)

// Example shows the calls appendsvc makes: look the table up once, then
// produce encoded log batches (see the logbatch package) per bucket.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	client, err := fluss.Dial(ctx, "127.0.0.1:29122")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	info, err := client.GetTableInfo(ctx, fluss.TablePath{Database: "ferry", Table: "events"})
	if errors.Is(err, &fluss.Error{Code: fluss.CodeTableNotExist}) {
		log.Fatal("no such table")
	} else if err != nil {
		log.Fatal(err)
	}
	compression, level, err := info.ArrowCompression()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.TableID, info.SchemaID, info.NumBuckets, compression, level)

	var records []byte // one log batch built with logbatch.Build for info.SchemaID
	results, err := client.ProduceLog(ctx, info.TableID, fluss.AcksAll, 30*time.Second,
		[]fluss.BucketBatch{{Bucket: 0, Records: records}})
	if err != nil {
		log.Fatal(err) // nothing was sent
	}
	for _, r := range results {
		switch {
		case r.Err == nil:
			fmt.Println("bucket", r.Bucket, "at offset", r.BaseOffset)
		case fluss.IsRetriable(r.Err):
			// Stale leaders were already dropped from the cache: a retry
			// goes to the new leader.
		default:
			log.Print(r.Err)
		}
	}
}
