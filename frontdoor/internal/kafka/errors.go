package kafka

import "github.com/twmb/franz-go/pkg/kerr"

// Fluss error codes appendsvc passes through (org.apache.fluss.rpc.protocol.Errors).
const (
	flussUnknownServerError     = -1
	flussNetworkException       = 1
	flussCorruptMessage         = 3
	flussTableNotExist          = 7
	flussSchemaNotExist         = 9
	flussLogStorage             = 10
	flussNotLeaderOrFollower    = 12
	flussRecordTooLarge         = 13
	flussCorruptRecord          = 14
	flussInvalidRequiredAcks    = 18
	flussUnknownTableOrBucket   = 21
	flussFencedLeaderEpoch      = 24
	flussRequestTimeOut         = 25
	flussStorageException       = 26
	flussNotEnoughReplicasAfter = 28
	flussNotEnoughReplicas      = 29
	flussOutOfOrderSequence     = 31
	flussDuplicateSequence      = 32
	flussUnknownWriterID        = 33
	flussPartitionNotExists     = 36
	flussInvalidTimestamp       = 38
	flussLeaderNotAvailable     = 44
	flussAuthenticate           = 46
	flussAuthorization          = 48
)

// kafkaCodeForFluss maps an appendsvc (Fluss) error to the Kafka error a
// producer acts on correctly: retriable Fluss conditions become retriable
// Kafka codes that make clients refresh metadata or retry.
func kafkaCodeForFluss(code int32, retriable bool) int16 {
	switch code {
	case 0:
		return 0
	case flussNetworkException:
		return kerr.NetworkException.Code
	case flussCorruptMessage, flussCorruptRecord:
		return kerr.CorruptMessage.Code
	case flussTableNotExist, flussSchemaNotExist, flussUnknownTableOrBucket, flussPartitionNotExists:
		return kerr.UnknownTopicOrPartition.Code
	case flussLogStorage, flussStorageException:
		return kerr.KafkaStorageError.Code
	case flussNotLeaderOrFollower, flussFencedLeaderEpoch:
		return kerr.NotLeaderForPartition.Code
	case flussRecordTooLarge:
		return kerr.MessageTooLarge.Code
	case flussInvalidRequiredAcks:
		return kerr.InvalidRequiredAcks.Code
	case flussRequestTimeOut:
		return kerr.RequestTimedOut.Code
	case flussNotEnoughReplicasAfter:
		return kerr.NotEnoughReplicasAfterAppend.Code
	case flussNotEnoughReplicas:
		return kerr.NotEnoughReplicas.Code
	case flussOutOfOrderSequence:
		return kerr.OutOfOrderSequenceNumber.Code
	case flussDuplicateSequence:
		return kerr.DuplicateSequenceNumber.Code
	case flussUnknownWriterID:
		return kerr.UnknownProducerID.Code
	case flussInvalidTimestamp:
		return kerr.InvalidTimestamp.Code
	case flussLeaderNotAvailable:
		return kerr.LeaderNotAvailable.Code
	case flussAuthenticate, flussAuthorization:
		return kerr.TopicAuthorizationFailed.Code
	}
	if retriable {
		// Unknown but retriable: a retriable Kafka code the client retries.
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}

// flussInvalidConfig is what appendsvc answers for requests it refuses
// before sending (bad compression settings, bad writer fields).
const flussInvalidConfig = 39

// flussNeverStored reports Fluss (and appendsvc) errors that certainly
// mean the batch was not stored: validation refusals before the log
// append. Every other error may come after Fluss stored the batch (a lost
// answer, a failure decoding it), so for idempotent batches it must not
// free the batch's sequence.
func flussNeverStored(code int32) bool {
	switch code {
	case flussCorruptMessage, flussCorruptRecord, flussTableNotExist, flussSchemaNotExist, flussRecordTooLarge,
		flussInvalidRequiredAcks, flussUnknownTableOrBucket, flussOutOfOrderSequence, flussPartitionNotExists,
		flussInvalidTimestamp, flussAuthenticate, flussAuthorization, flussInvalidConfig:
		return true
	}
	return false
}

// retriableKafkaCode keeps retriable Kafka codes and turns the others into
// REQUEST_TIMED_OUT, which every client retries: for an idempotent batch
// whose outcome is unknown, a retry is the only way to learn it.
func retriableKafkaCode(code int16) int16 {
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok && ke.Retriable {
			return code
		}
	}
	return kerr.RequestTimedOut.Code
}
