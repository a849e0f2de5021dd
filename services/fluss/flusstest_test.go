package fluss_test

import (
	"testing"

	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/flusstest"
)

func init() {
	fluss.CreateTestTable = func(t testing.TB, c *fluss.Client, path fluss.TablePath, d fluss.TableDescriptor, partitions ...fluss.PartitionSpec) *fluss.TableInfo {
		t.Helper()
		return flusstest.CreateTable(t, c, path, d, partitions...)
	}
}
