package kafka

import "github.com/twmb/franz-go/pkg/kerr"

// leaderEpoch is every partition's Kafka leader epoch, in Metadata, in the
// record batches fetchsvc builds, and in OffsetForLeaderEpoch. An epoch
// fences readers of a log that a new leader may have cut short. Below
// Fluss's high watermark, the only part consumers see, Fluss never cuts a
// bucket's log (it elects leaders from the in-sync replicas), and a
// partition led by another frontdoor reads the same Fluss bucket, so there
// is one epoch for a partition's whole life. Clients still validate their
// position against it when the leading frontdoor changes (KIP-320), which
// catches a table dropped and created again under the same name.
const leaderEpoch int32 = 0

// checkLeaderEpoch is the error for a request that says it knows leader
// epoch current (-1: it does not say), as a broker answers it: a client
// behind the broker is fenced, a client ahead must refresh its metadata.
func checkLeaderEpoch(current int32) int16 {
	switch {
	case current < 0 || current == leaderEpoch:
		return 0
	case current < leaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}
