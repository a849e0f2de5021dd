// Package kafka is frontdoor's Kafka protocol server: it frames and decodes
// requests from unmodified Kafka clients, dispatches them to one handler per
// API (apiversions.go, metadata.go, produce.go, findcoordinator.go,
// initproducerid.go, sasl.go; fetch.go is listed for librdkafka but never
// served) and writes the responses back in request order. admin.go lists the
// admin APIs Kafka's tools call: describes (describeconfigs.go and the other
// describe*.go files) and refusals of topic and config changes (refusal.go).
package kafka
