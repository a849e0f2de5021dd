// Transcribed from Apache Fluss 0.9.1-incubating's Errors.java and the class
// hierarchy of its exceptions; keep in step with that tag by hand.

package fluss

// Fluss error codes (Errors.java). The numbers are protocol; the names are Ferry's.
const (
	CodeUnknownServerError           ErrorCode = -1
	CodeNone                         ErrorCode = 0
	CodeNetwork                      ErrorCode = 1
	CodeUnsupportedVersion           ErrorCode = 2
	CodeCorruptMessage               ErrorCode = 3
	CodeDatabaseNotExist             ErrorCode = 4
	CodeDatabaseNotEmpty             ErrorCode = 5
	CodeDatabaseAlreadyExist         ErrorCode = 6
	CodeTableNotExist                ErrorCode = 7
	CodeTableAlreadyExist            ErrorCode = 8
	CodeSchemaNotExist               ErrorCode = 9
	CodeLogStorage                   ErrorCode = 10
	CodeKvStorage                    ErrorCode = 11
	CodeNotLeaderOrFollower          ErrorCode = 12
	CodeRecordTooLarge               ErrorCode = 13
	CodeCorruptRecord                ErrorCode = 14
	CodeInvalidTable                 ErrorCode = 15
	CodeInvalidDatabase              ErrorCode = 16
	CodeInvalidReplicationFactor     ErrorCode = 17
	CodeInvalidRequiredAcks          ErrorCode = 18
	CodeLogOffsetOutOfRange          ErrorCode = 19
	CodeNonPrimaryKeyTable           ErrorCode = 20
	CodeUnknownTableOrBucket         ErrorCode = 21
	CodeInvalidUpdateVersion         ErrorCode = 22
	CodeInvalidCoordinator           ErrorCode = 23
	CodeFencedLeaderEpoch            ErrorCode = 24
	CodeRequestTimeOut               ErrorCode = 25
	CodeStorage                      ErrorCode = 26
	CodeOperationNotAttempted        ErrorCode = 27
	CodeNotEnoughReplicasAfterAppend ErrorCode = 28
	CodeNotEnoughReplicas            ErrorCode = 29
	CodeSecurityToken                ErrorCode = 30
	CodeOutOfOrderSequence           ErrorCode = 31
	CodeDuplicateSequence            ErrorCode = 32
	CodeUnknownWriterId              ErrorCode = 33
	CodeInvalidColumnProjection      ErrorCode = 34
	CodeInvalidTargetColumn          ErrorCode = 35
	CodePartitionNotExists           ErrorCode = 36
	CodeTableNotPartitioned          ErrorCode = 37
	CodeInvalidTimestamp             ErrorCode = 38
	CodeInvalidConfig                ErrorCode = 39
	CodeLakeStorageNotConfigured     ErrorCode = 40
	CodeKvSnapshotNotExist           ErrorCode = 41
	CodePartitionAlreadyExists       ErrorCode = 42
	CodePartitionSpecInvalid         ErrorCode = 43
	CodeLeaderNotAvailable           ErrorCode = 44
	CodePartitionMaxNum              ErrorCode = 45
	CodeAuthenticate                 ErrorCode = 46
	CodeSecurityDisabled             ErrorCode = 47
	CodeAuthorization                ErrorCode = 48
	CodeBucketMaxNum                 ErrorCode = 49
	CodeFencedTieringEpoch           ErrorCode = 50
	CodeRetriableAuthenticate        ErrorCode = 51
	CodeInvalidServerRackInfo        ErrorCode = 52
	CodeLakeSnapshotNotExist         ErrorCode = 53
	CodeLakeTableAlreadyExist        ErrorCode = 54
	CodeIneligibleReplica            ErrorCode = 55
	CodeInvalidAlterTable            ErrorCode = 56
	CodeDeletionDisabled             ErrorCode = 57
	CodeServerNotExist               ErrorCode = 58
	CodeSeverTagAlreadyExist         ErrorCode = 59
	CodeSeverTagNotExist             ErrorCode = 60
	CodeRebalanceFailure             ErrorCode = 61
	CodeNoRebalanceInProgress        ErrorCode = 62
	CodeInvalidProducerId            ErrorCode = 63
)

// codeInfo is what Ferry knows about each code: its upstream name, whether
// Fluss's exception for it is a RetriableException, and whether it is an
// InvalidMetadataException (the client's metadata is stale: refresh it).
var codeInfo = map[ErrorCode]struct {
	name      string
	retriable bool
	metadata  bool
}{
	CodeUnknownServerError:           {"UNKNOWN_SERVER_ERROR", false, false},
	CodeNone:                         {"NONE", false, false},
	CodeNetwork:                      {"NETWORK_EXCEPTION", true, true},
	CodeUnsupportedVersion:           {"UNSUPPORTED_VERSION", false, false},
	CodeCorruptMessage:               {"CORRUPT_MESSAGE", true, false},
	CodeDatabaseNotExist:             {"DATABASE_NOT_EXIST", false, false},
	CodeDatabaseNotEmpty:             {"DATABASE_NOT_EMPTY", false, false},
	CodeDatabaseAlreadyExist:         {"DATABASE_ALREADY_EXIST", false, false},
	CodeTableNotExist:                {"TABLE_NOT_EXIST", false, false},
	CodeTableAlreadyExist:            {"TABLE_ALREADY_EXIST", false, false},
	CodeSchemaNotExist:               {"SCHEMA_NOT_EXIST", true, false},
	CodeLogStorage:                   {"LOG_STORAGE_EXCEPTION", true, false},
	CodeKvStorage:                    {"KV_STORAGE_EXCEPTION", true, false},
	CodeNotLeaderOrFollower:          {"NOT_LEADER_OR_FOLLOWER", true, true},
	CodeRecordTooLarge:               {"RECORD_TOO_LARGE_EXCEPTION", false, false},
	CodeCorruptRecord:                {"CORRUPT_RECORD_EXCEPTION", true, false},
	CodeInvalidTable:                 {"INVALID_TABLE_EXCEPTION", false, false},
	CodeInvalidDatabase:              {"INVALID_DATABASE_EXCEPTION", false, false},
	CodeInvalidReplicationFactor:     {"INVALID_REPLICATION_FACTOR", false, false},
	CodeInvalidRequiredAcks:          {"INVALID_REQUIRED_ACKS", false, false},
	CodeLogOffsetOutOfRange:          {"LOG_OFFSET_OUT_OF_RANGE_EXCEPTION", false, false},
	CodeNonPrimaryKeyTable:           {"NON_PRIMARY_KEY_TABLE_EXCEPTION", false, false},
	CodeUnknownTableOrBucket:         {"UNKNOWN_TABLE_OR_BUCKET_EXCEPTION", true, true},
	CodeInvalidUpdateVersion:         {"INVALID_UPDATE_VERSION_EXCEPTION", false, false},
	CodeInvalidCoordinator:           {"INVALID_COORDINATOR_EXCEPTION", false, false},
	CodeFencedLeaderEpoch:            {"FENCED_LEADER_EPOCH_EXCEPTION", false, false},
	CodeRequestTimeOut:               {"REQUEST_TIME_OUT", true, false},
	CodeStorage:                      {"STORAGE_EXCEPTION", true, false},
	CodeOperationNotAttempted:        {"OPERATION_NOT_ATTEMPTED_EXCEPTION", false, false},
	CodeNotEnoughReplicasAfterAppend: {"NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION", true, false},
	CodeNotEnoughReplicas:            {"NOT_ENOUGH_REPLICAS_EXCEPTION", true, false},
	CodeSecurityToken:                {"SECURITY_TOKEN_EXCEPTION", false, false},
	CodeOutOfOrderSequence:           {"OUT_OF_ORDER_SEQUENCE_EXCEPTION", false, false},
	CodeDuplicateSequence:            {"DUPLICATE_SEQUENCE_EXCEPTION", false, false},
	CodeUnknownWriterId:              {"UNKNOWN_WRITER_ID_EXCEPTION", false, false},
	CodeInvalidColumnProjection:      {"INVALID_COLUMN_PROJECTION", false, false},
	CodeInvalidTargetColumn:          {"INVALID_TARGET_COLUMN", false, false},
	CodePartitionNotExists:           {"PARTITION_NOT_EXISTS", false, false},
	CodeTableNotPartitioned:          {"TABLE_NOT_PARTITIONED_EXCEPTION", false, false},
	CodeInvalidTimestamp:             {"INVALID_TIMESTAMP_EXCEPTION", false, false},
	CodeInvalidConfig:                {"INVALID_CONFIG_EXCEPTION", false, false},
	CodeLakeStorageNotConfigured:     {"LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION", false, false},
	CodeKvSnapshotNotExist:           {"KV_SNAPSHOT_NOT_EXIST", false, false},
	CodePartitionAlreadyExists:       {"PARTITION_ALREADY_EXISTS", false, false},
	CodePartitionSpecInvalid:         {"PARTITION_SPEC_INVALID_EXCEPTION", false, false},
	CodeLeaderNotAvailable:           {"LEADER_NOT_AVAILABLE_EXCEPTION", true, true},
	CodePartitionMaxNum:              {"PARTITION_MAX_NUM_EXCEPTION", false, false},
	CodeAuthenticate:                 {"AUTHENTICATE_EXCEPTION", false, false},
	CodeSecurityDisabled:             {"SECURITY_DISABLED_EXCEPTION", false, false},
	CodeAuthorization:                {"AUTHORIZATION_EXCEPTION", false, false},
	CodeBucketMaxNum:                 {"BUCKET_MAX_NUM_EXCEPTION", false, false},
	CodeFencedTieringEpoch:           {"FENCED_TIERING_EPOCH_EXCEPTION", false, false},
	CodeRetriableAuthenticate:        {"RETRIABLE_AUTHENTICATE_EXCEPTION", false, false},
	CodeInvalidServerRackInfo:        {"INVALID_SERVER_RACK_INFO_EXCEPTION", false, false},
	CodeLakeSnapshotNotExist:         {"LAKE_SNAPSHOT_NOT_EXIST", false, false},
	CodeLakeTableAlreadyExist:        {"LAKE_TABLE_ALREADY_EXIST", false, false},
	CodeIneligibleReplica:            {"INELIGIBLE_REPLICA_EXCEPTION", false, false},
	CodeInvalidAlterTable:            {"INVALID_ALTER_TABLE_EXCEPTION", false, false},
	CodeDeletionDisabled:             {"DELETION_DISABLED_EXCEPTION", false, false},
	CodeServerNotExist:               {"SERVER_NOT_EXIST_EXCEPTION", false, false},
	CodeSeverTagAlreadyExist:         {"SEVER_TAG_ALREADY_EXIST_EXCEPTION", false, false},
	CodeSeverTagNotExist:             {"SEVER_TAG_NOT_EXIST_EXCEPTION", false, false},
	CodeRebalanceFailure:             {"REBALANCE_FAILURE_EXCEPTION", false, false},
	CodeNoRebalanceInProgress:        {"NO_REBALANCE_IN_PROGRESS_EXCEPTION", false, false},
	CodeInvalidProducerId:            {"INVALID_PRODUCER_ID_EXCEPTION", false, false},
}
