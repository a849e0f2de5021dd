package reader

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/services/fluss"
)

// readErrors is what a failed bucket read means to a Kafka consumer. The
// codes are the ones consumers handle in a Fetch or ListOffsets answer:
// NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR make them refresh
// metadata and try again, OFFSET_OUT_OF_RANGE applies auto.offset.reset,
// UNKNOWN_TOPIC_OR_PARTITION waits for the topic to come back.
var readErrors = map[fluss.ErrorCode]*kerr.Error{
	fluss.CodeTableNotExist:        kerr.UnknownTopicOrPartition,
	fluss.CodeDatabaseNotExist:     kerr.UnknownTopicOrPartition,
	fluss.CodeUnknownTableOrBucket: kerr.UnknownTopicOrPartition,
	fluss.CodePartitionNotExists:   kerr.UnknownTopicOrPartition,
	fluss.CodeSchemaNotExist:       kerr.UnknownTopicOrPartition,
	fluss.CodeLogOffsetOutOfRange:  kerr.OffsetOutOfRange,
	fluss.CodeNotLeaderOrFollower:  kerr.NotLeaderForPartition,
	fluss.CodeFencedLeaderEpoch:    kerr.NotLeaderForPartition,
	fluss.CodeLeaderNotAvailable:   kerr.NotLeaderForPartition,
	fluss.CodeNetwork:              kerr.NotLeaderForPartition,
	fluss.CodeRequestTimeOut:       kerr.NotLeaderForPartition,
	fluss.CodeLogStorage:           kerr.KafkaStorageError,
	fluss.CodeStorage:              kerr.KafkaStorageError,
	fluss.CodeAuthorization:        kerr.TopicAuthorizationFailed,
	fluss.CodeAuthenticate:         kerr.TopicAuthorizationFailed,
	fluss.CodeCorruptMessage:       kerr.CorruptMessage,
	fluss.CodeCorruptRecord:        kerr.CorruptMessage,
}

// kafkaError is the Kafka error for a failed read of a bucket: a Fluss
// error by its code, a table that is gone as an unknown topic, and a
// transport failure (the tablet server is unreachable or the call was cut)
// as a lost leader, which consumers retry after refreshing metadata.
func kafkaError(err error) *kerr.Error {
	var gone errTableGone
	if errors.As(err, &gone) {
		return kerr.UnknownTopicOrPartition
	}
	var fe *fluss.Error
	if errors.As(err, &fe) {
		if k, ok := readErrors[fe.Code]; ok {
			return k
		}
		return kerr.UnknownServerError
	}
	if errors.Is(err, fluss.ErrRemoteLog) {
		// Tiered log segments are not read (docs/limits.md): the log starts,
		// for Kafka, at its first local offset, and the consumer resets.
		return kerr.OffsetOutOfRange
	}
	if errors.Is(err, fluss.ErrUnknownTable) {
		return kerr.UnknownTopicOrPartition
	}
	return kerr.NotLeaderForPartition
}
