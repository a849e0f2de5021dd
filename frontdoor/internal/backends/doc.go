// Package backends is frontdoor's client side of the internal services:
// the catalog (topic mappings, Metadata answers, broker registration), the
// transcoder pool and the append stream.
package backends
