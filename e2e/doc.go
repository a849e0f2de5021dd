// Package e2e holds Ferry's end-to-end tests: they run against the real Fluss cluster the test
// runner starts (see services/testenv) and, later, the whole stack started by e2e/stack.
package e2e
