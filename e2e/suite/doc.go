// Package suite is Ferry's end-to-end test suite: its tests start a whole local stack (e2e/stack:
// catalogsvc, two transcodesvc, appendsvc, frontdoor; Jaeger when installed) against a real Fluss
// cluster, produce with real Kafka clients and read every row back with the Java Fluss client.
// See e2e/README.md for what each test checks and the environment knobs.
package suite
