package kafka

import "github.com/twmb/franz-go/pkg/kerr"

// LeaderEpoch is every partition's Kafka leader epoch, in Metadata, in the
// record batches fetchsvc builds, in ListOffsets and in
// OffsetForLeaderEpoch. An epoch fences readers of a log that a new leader
// may have cut short. Consumers see only what is below Fluss's high
// watermark, which a Fluss leader change keeps (the new leader is one of
// the in-sync replicas), and a partition led by another frontdoor reads the
// same Fluss bucket, so there is one epoch for a partition's whole life.
// Clients still validate their position against it when the leading
// frontdoor changes (KIP-320).
const LeaderEpoch int32 = 0

// CheckLeaderEpoch is the error for a request that says it knows leader
// epoch current (-1: it does not say), as a broker answers it: a client
// behind the broker is fenced, a client ahead must refresh its metadata.
func CheckLeaderEpoch(current int32) int16 {
	switch {
	case current < 0 || current == LeaderEpoch:
		return 0
	case current < LeaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}
