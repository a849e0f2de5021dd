// Package appendfaults holds appendsvc's fault tests against private Fluss clusters: the
// appendsvc binary built from this tree appends through a tablet server restart, a crash and a
// leader move to a second replica, and what the Java reader finds is checked against every
// answer. The package has tests only.
package appendfaults
