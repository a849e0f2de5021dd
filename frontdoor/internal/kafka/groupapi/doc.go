// Package groupapi serves the consumer group APIs (FindCoordinator,
// Join/Sync/Heartbeat/LeaveGroup, OffsetCommit/Fetch/Delete, the KIP-848
// ConsumerGroupHeartbeat/Describe,
// List/Describe/DeleteGroups) on top of the coordinator in
// frontdoor/internal/groups.
package groupapi
