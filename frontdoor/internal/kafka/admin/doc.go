// Package admin serves the admin APIs Kafka's tools call: the describes
// (describeconfigs.go and the other describe*.go files, topicconfig.go) and
// the refusals of topic and config changes (refusal.go).
package admin
