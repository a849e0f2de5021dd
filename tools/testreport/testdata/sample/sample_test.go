// Package sample is testreport's input: tests that pass, fail and skip, with subtests.
package sample

import "testing"

func TestPass(t *testing.T) { t.Log("quiet when passing") }

func TestFail(t *testing.T) {
	t.Log("shown because the test fails")
	t.Error("boom")
}

func TestSkip(t *testing.T) {
	t.Log("said before skipping")
	t.Skip("needs the moon")
}

func TestSub(t *testing.T) {
	t.Run("a", func(t *testing.T) {})
	t.Run("b", func(t *testing.T) { t.Skipf("not here: %d", 42) })
	t.Run("c", func(t *testing.T) { t.Fatal("sub failed") })
}
