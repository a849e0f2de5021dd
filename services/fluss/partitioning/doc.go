// Package partitioning computes which partition of a Fluss partitioned table
// a row belongs to, byte for byte as Fluss 0.9.1's Java client names it, and
// what the cluster does with a partition of a given name on an
// auto-partitioned table.
//
// Partition names: Getter reads a row's partition key columns from an Arrow
// record (the form the log and KV write paths hold rows in, as
// bucketing.KeyEncoder does) and formats each value as PartitionUtils does:
// strings as they are, booleans true/false, integers in decimal, BINARY and
// BYTES as lowercase hex, DATE as yyyy-MM-dd, TIME as HH-mm-ss_SSS,
// TIMESTAMP and TIMESTAMP_LTZ in UTC as yyyy-MM-dd-HH-mm-ss_ plus the
// nanoseconds without trailing zeros. The values are joined by "$". DECIMAL
// and nested types cannot be partition keys. FLOAT and DOUBLE can, but Fluss
// names them with Java's Float/Double.toString, whose digits depend on the
// writer's JVM version; Getter refuses them (ErrFloatKey). A null key is an
// error, as in the Java client. The Java writer does not check names: the
// coordinator refuses a CreatePartition whose values are not 1..200 ASCII
// letters, digits, '_' or '-' (or start with "__") with
// PARTITION_SPEC_INVALID_EXCEPTION, which ValidateValue predicts; a STRING
// key with a space, or a timestamp after the year 9999 (formatted with a
// "+"), fails there.
//
// Auto-partitioned tables (table.auto-partition.*; AutoPartition): the
// coordinator's AutoPartitionManager checks every table periodically
// (auto-partition.check.interval, 10 minutes by default). Each check creates
// the num-precreate partitions from the current time unit on and drops every
// partition whose time value sorts before the value num-retention units back
// (string order; num-retention < 0 keeps everything). DAY tables are checked
// with a clock set back by a random delay of up to 23 hours, fixed per table,
// to spread the load. Times are formatted in table.auto-partition.time-zone,
// the coordinator's JVM zone when the table does not set one.
// CreatePartition itself checks only the characters of the values and the
// partition and bucket limits: a partition far in the past, or one named
// "notaday" on a DAY table, is created (the real-cluster test shows both);
// by AutoPartitionManager's rules the first is dropped, with what was written
// into it, at the next check, and the second is never created by
// auto-partitioning and is dropped or kept forever depending on how it
// sorts. AutoPartition.Check tells such names (Expired, Malformed) from the
// ones the cluster keeps (Live) and from the ones it refuses (Invalid).
//
// The Java writer (client.writer.dynamic-create-partition.enabled, true by
// default) computes each row's partition name, looks the partition up in its
// metadata, asks the coordinator when it is not there, and otherwise sends
// CreatePartition with ignoreIfExists (so a concurrent creator is not an
// error) without any time-unit or retention check; a failure to create is
// fatal to the writer. With the option off, a missing partition fails the
// write with PARTITION_NOT_EXISTS. The client's Client.PartitionIDs is
// Ferry's version of that step; unlike the Java writer it lets the caller
// refuse names Check does not call Live before anything is created. Creating
// a partition milliseconds after its table wedges Fluss 0.9.1's coordinator
// (see PartitionIDs).
package partitioning
