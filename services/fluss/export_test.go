package fluss

import "testing"

// CreateTestTable is flusstest.CreateTable: it creates a table and waits
// until every bucket has a leader, creating it once more when Fluss lost
// its creation. This package's tests cannot import flusstest, which
// imports this package; flusstest_test.go, of the external test package,
// sets it.
var CreateTestTable func(t testing.TB, c *Client, path TablePath, d TableDescriptor, partitions ...PartitionSpec) *TableInfo
