// Package broker builds frontdoor's Kafka server: the transport (package
// kafka) with the APIs of every concern package registered. Its tests drive
// the whole server with real Kafka clients against fake backends.
package broker
