// Package testenv connects Go tests to the real Apache Fluss cluster the test runner starts
// (tools/test.sh via ferrystack -only fluss) and to flusshelper, the independent Java
// reader/writer built on the official Fluss client.
//
// Tests call Fluss(t), which returns a *Cluster: it reads FERRY_TEST_FLUSS_BOOTSTRAP and FERRY_TEST_FLUSS_HELPER and skips
// the test when they are unset, unless FERRY_TEST_REQUIRE_FLUSS=1 (set by CI), where a missing
// cluster is a failure rather than a silent skip.
package testenv
