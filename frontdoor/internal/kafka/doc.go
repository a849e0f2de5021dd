// Package kafka is frontdoor's Kafka protocol server: it frames and decodes
// requests from unmodified Kafka clients, dispatches them to one handler per
// API (apiversions.go, metadata.go, produce.go, sasl.go) and writes the
// responses back in request order.
package kafka
