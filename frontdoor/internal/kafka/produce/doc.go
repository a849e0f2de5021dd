// Package produce serves Produce and InitProducerId: batches are checked,
// ordered per partition (sequencer.go), transcoded and appended, with
// idempotent producers deduplicated.
package produce
