package fluss

import (
	"testing"

	"github.com/ferrygw/ferry/services/testenv"
)

// realBootstrap returns the coordinator address of the real Fluss cluster;
// testenv skips the test when none is configured (and fails it under CI).
func realBootstrap(t *testing.T) string {
	t.Helper()
	return testenv.Fluss(t).Bootstrap
}
