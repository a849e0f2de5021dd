// Package consume serves the read path: Fetch with its incremental fetch
// sessions, ListOffsets and OffsetForLeaderEpoch.
package consume
