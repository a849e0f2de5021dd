package broken

import "testing"

func TestNeverRuns(t *testing.T) {}
