package appender

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/services/fluss"
)

// produceError is what an append failure with one Fluss code means to a
// Kafka producer.
type produceError struct {
	// kafka is the error the producer acts on correctly: retriable Fluss
	// conditions become retriable Kafka codes that make clients refresh
	// metadata or retry.
	kafka *kerr.Error
	// refused: Fluss refuses the batch with this code before appending it,
	// so the batch was certainly not stored. Every other code may come
	// after the append (a lost answer, a leader lost while waiting for
	// replicas), so an idempotent batch's sequence must not be reused.
	refused bool
}

// produceErrors covers every Fluss code a ProduceLog (or appendsvc's own
// checks before it) can end with. Codes not listed map by retriability:
// see kafkaCodeFor.
var produceErrors = map[fluss.ErrorCode]produceError{
	fluss.CodeNetwork:                      {kerr.NetworkException, false},
	fluss.CodeCorruptMessage:               {kerr.CorruptMessage, true},
	fluss.CodeCorruptRecord:                {kerr.CorruptMessage, true},
	fluss.CodeTableNotExist:                {kerr.UnknownTopicOrPartition, true},
	fluss.CodeSchemaNotExist:               {kerr.UnknownTopicOrPartition, true},
	fluss.CodeUnknownTableOrBucket:         {kerr.UnknownTopicOrPartition, true},
	fluss.CodePartitionNotExists:           {kerr.UnknownTopicOrPartition, true},
	fluss.CodeLogStorage:                   {kerr.KafkaStorageError, false},
	fluss.CodeStorage:                      {kerr.KafkaStorageError, false},
	fluss.CodeNotLeaderOrFollower:          {kerr.NotLeaderForPartition, false},
	fluss.CodeFencedLeaderEpoch:            {kerr.NotLeaderForPartition, false},
	fluss.CodeRecordTooLarge:               {kerr.MessageTooLarge, true},
	fluss.CodeInvalidRequiredAcks:          {kerr.InvalidRequiredAcks, true},
	fluss.CodeRequestTimeOut:               {kerr.RequestTimedOut, false},
	fluss.CodeNotEnoughReplicasAfterAppend: {kerr.NotEnoughReplicasAfterAppend, false},
	fluss.CodeNotEnoughReplicas:            {kerr.NotEnoughReplicas, false},
	fluss.CodeOutOfOrderSequence:           {kerr.OutOfOrderSequenceNumber, true},
	fluss.CodeDuplicateSequence:            {kerr.DuplicateSequenceNumber, false},
	fluss.CodeUnknownWriterId:              {kerr.UnknownProducerID, false},
	fluss.CodeInvalidTimestamp:             {kerr.InvalidTimestamp, true},
	fluss.CodeLeaderNotAvailable:           {kerr.LeaderNotAvailable, false},
	fluss.CodeAuthenticate:                 {kerr.TopicAuthorizationFailed, true},
	fluss.CodeAuthorization:                {kerr.TopicAuthorizationFailed, true},
	// appendsvc's refusals of a request it cannot send (bad compression or
	// writer fields, a table whose schema it cannot use): a Ferry fault the
	// producer cannot fix.
	fluss.CodeInvalidConfig: {kerr.UnknownServerError, true},
	fluss.CodeInvalidTable:  {kerr.UnknownServerError, true},
}

// kafkaCodeFor is the Kafka error code for a failed append. For an
// idempotent batch that may be stored, only a retry can tell the producer
// whether it was (the retry is resent with the same Fluss sequence and
// Fluss settles it), so a code the producer would give up on becomes
// REQUEST_TIMED_OUT, which every client retries.
func kafkaCodeFor(code fluss.ErrorCode, retriable, possiblyStored, idempotent bool) int16 {
	var ke *kerr.Error
	switch pe, ok := produceErrors[code]; {
	case ok:
		ke = pe.kafka
	case retriable:
		// Unknown but retriable: a retriable Kafka code the client retries.
		ke = kerr.RequestTimedOut
	default:
		ke = kerr.UnknownServerError
	}
	if idempotent && possiblyStored && !ke.Retriable {
		ke = kerr.RequestTimedOut
	}
	return ke.Code
}

// refusedByFluss reports whether an answer from Fluss with this code proves
// the batch was not stored.
func refusedByFluss(code fluss.ErrorCode) bool {
	return produceErrors[code].refused
}
