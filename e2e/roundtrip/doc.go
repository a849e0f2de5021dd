// Package roundtrip checks that the write path (transcodesvc) and the read
// path (fetchsvc/rebuild) agree on values: it sits in the e2e module so that
// neither service's module depends on the other's.
package roundtrip
