package appender

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	"github.com/ferrygw/ferry/services/fluss"
)

// TestAnswerForEveryProduceError pins, for every Fluss code a produce can
// end with, the answer frontdoor acts on: the Kafka code, Fluss's
// retriability, whether an answer from Fluss with that code leaves the
// batch possibly stored, and the Kafka code an idempotent batch gets then.
func TestAnswerForEveryProduceError(t *testing.T) {
	for _, tc := range []struct {
		code      fluss.ErrorCode
		kafka     *kerr.Error
		retriable bool
		stored    bool
		// Kafka code of an idempotent batch; nil: the same as kafka.
		idempotent *kerr.Error
	}{
		{fluss.CodeUnknownServerError, kerr.UnknownServerError, false, true, kerr.RequestTimedOut},
		{fluss.CodeNetwork, kerr.NetworkException, true, true, nil},
		{fluss.CodeCorruptMessage, kerr.CorruptMessage, true, false, nil},
		{fluss.CodeTableNotExist, kerr.UnknownTopicOrPartition, false, false, nil},
		{fluss.CodeSchemaNotExist, kerr.UnknownTopicOrPartition, true, false, nil},
		{fluss.CodeLogStorage, kerr.KafkaStorageError, true, true, nil},
		{fluss.CodeNotLeaderOrFollower, kerr.NotLeaderForPartition, true, true, nil},
		{fluss.CodeRecordTooLarge, kerr.MessageTooLarge, false, false, nil},
		{fluss.CodeCorruptRecord, kerr.CorruptMessage, true, false, nil},
		{fluss.CodeInvalidTable, kerr.UnknownServerError, false, false, nil},
		{fluss.CodeInvalidRequiredAcks, kerr.InvalidRequiredAcks, false, false, nil},
		{fluss.CodeUnknownTableOrBucket, kerr.UnknownTopicOrPartition, true, false, nil},
		{fluss.CodeFencedLeaderEpoch, kerr.NotLeaderForPartition, false, true, nil},
		{fluss.CodeRequestTimeOut, kerr.RequestTimedOut, true, true, nil},
		{fluss.CodeStorage, kerr.KafkaStorageError, true, true, nil},
		{fluss.CodeNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend, true, true, nil},
		{fluss.CodeNotEnoughReplicas, kerr.NotEnoughReplicas, true, true, nil},
		{fluss.CodeOutOfOrderSequence, kerr.OutOfOrderSequenceNumber, false, false, nil},
		{fluss.CodeDuplicateSequence, kerr.DuplicateSequenceNumber, false, true, kerr.RequestTimedOut},
		{fluss.CodeUnknownWriterId, kerr.UnknownProducerID, false, true, kerr.RequestTimedOut},
		{fluss.CodePartitionNotExists, kerr.UnknownTopicOrPartition, false, false, nil},
		{fluss.CodeInvalidTimestamp, kerr.InvalidTimestamp, false, false, nil},
		{fluss.CodeInvalidConfig, kerr.UnknownServerError, false, false, nil},
		{fluss.CodeLeaderNotAvailable, kerr.LeaderNotAvailable, true, true, nil},
		{fluss.CodeAuthenticate, kerr.TopicAuthorizationFailed, false, false, nil},
		{fluss.CodeAuthorization, kerr.TopicAuthorizationFailed, false, false, nil},
		// A code Ferry has no entry for maps by retriability.
		{fluss.CodeKvStorage, kerr.RequestTimedOut, true, true, nil},
		{fluss.CodeInvalidProducerId, kerr.UnknownServerError, false, true, kerr.RequestTimedOut},
	} {
		err := &fluss.Error{Code: tc.code, Message: "scripted"}
		stored := !refusedByFluss(tc.code)
		plain := (&job{req: &appendv1.AppendRequest{WriterId: -1}}).fail(err, stored)
		idem := (&job{req: &appendv1.AppendRequest{WriterId: 7}}).fail(err, stored)
		wantIdem := tc.idempotent
		if wantIdem == nil {
			wantIdem = tc.kafka
		}
		if fluss.ErrorCode(plain.GetErrorCode()) != tc.code || plain.GetRetriable() != tc.retriable || stored != tc.stored ||
			plain.GetKafkaErrorCode() != int32(tc.kafka.Code) || idem.GetKafkaErrorCode() != int32(wantIdem.Code) {
			t.Errorf("%s: fluss %d retriable %v possibly stored %v kafka %v (idempotent %v); want retriable %v possibly stored %v kafka %v (idempotent %v)",
				tc.code, plain.GetErrorCode(), plain.GetRetriable(), stored, kerr.ErrorForCode(int16(plain.GetKafkaErrorCode())),
				kerr.ErrorForCode(int16(idem.GetKafkaErrorCode())), tc.retriable, tc.stored, tc.kafka, wantIdem)
		}
		if plain.GetPossiblyStored() != stored || plain.GetTableNotExist() != (tc.code == fluss.CodeTableNotExist) {
			t.Errorf("%s: possibly_stored %v table_not_exist %v", tc.code, plain.GetPossiblyStored(), plain.GetTableNotExist())
		}
	}
}

// TestRefusedBeforeSendingIsNeverStored: a failure decided before anything
// went to Fluss leaves nothing stored whatever its code, so even an
// idempotent batch keeps the Kafka code of its cause.
func TestRefusedBeforeSendingIsNeverStored(t *testing.T) {
	j := &job{req: &appendv1.AppendRequest{WriterId: 7}}
	a := j.fail(&fluss.Error{Code: fluss.CodeLeaderNotAvailable}, false)
	if a.GetPossiblyStored() || a.GetKafkaErrorCode() != int32(kerr.LeaderNotAvailable.Code) {
		t.Fatalf("answer %v, want LEADER_NOT_AVAILABLE, not possibly stored", a)
	}
	a = j.fail(invalid(fluss.CodeInvalidConfig, "bad"), false)
	if a.GetPossiblyStored() || a.GetKafkaErrorCode() != int32(kerr.UnknownServerError.Code) || a.GetRetriable() {
		t.Fatalf("answer %v, want UNKNOWN_SERVER_ERROR, not retriable, not possibly stored", a)
	}
}
