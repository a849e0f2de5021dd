// Package groupapi serves the consumer group APIs (FindCoordinator,
// Join/Sync/Heartbeat/LeaveGroup, OffsetCommit/Fetch/Delete,
// List/Describe/DeleteGroups) on top of the coordinator in
// frontdoor/internal/groups.
package groupapi
