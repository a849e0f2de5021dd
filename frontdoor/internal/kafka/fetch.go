package kafka

import (
	"context"
	"errors"
)

// Fetch v4-v10 is advertised but not served. librdkafka enables record
// batch v2 only when the broker lists Produce v3 and Fetch v4, and zstd
// only with Produce v7 and Fetch v10 (rdkafka_feature.c); without Fetch in
// ApiVersions it falls back to magic 0/1 message sets, which Ferry refuses.
// Ferry has no consumers: a Fetch request closes the connection with a
// log line, the same as an API that is not advertised.
const (
	fetchKey int16 = 1
	fetchMin       = 4
	fetchMax       = 10
)

var errFetchNotServed = errors.New("fetch is not served: ferry accepts produce only (Fetch is advertised so librdkafka producers use record batch v2)")

func fetchAPI() API {
	return API{
		Key:        fetchKey,
		MinVersion: fetchMin,
		MaxVersion: fetchMax,
		Serve: func(context.Context, *Session, Request) (Reply, error) {
			return Reply{}, errFetchNotServed
		},
	}
}
