package admin

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
)

// Topics are Fluss tables and their settings are table properties, so the
// APIs that would change them (CreateTopics, DeleteTopics, CreatePartitions,
// AlterConfigs, IncrementalAlterConfigs, DeleteRecords) are served only to
// refuse, with POLICY_VIOLATION and a message, as a broker refuses what its
// create-topic or alter-config policy forbids. Unlisted, they would close
// the connection and leave Kafka's tools with a bare timeout.

// refusalDocs is the page that explains how topics relate to Fluss tables.
const refusalDocs = "docs/mapping.md"

// ddlRefusal is the message of a refused change: what to do instead.
func ddlRefusal(what string) string {
	return "Ferry does not " + what + ": Kafka topics are Fluss tables, change them with Fluss DDL (see " + refusalDocs + ")"
}

// refuseTopic is the error of a refused change to topic: the policy
// refusal, or TOPIC_AUTHORIZATION_FAILED for a topic the principal may not
// see, so that a refusal never tells it what exists.
func refuseTopic(ctx context.Context, s *kafka.Session, mayDescribe func(string) bool, api, topic string) int16 {
	if !mayDescribe(topic) {
		s.Refused(ctx, acl.Describe, topic)
		return kerr.TopicAuthorizationFailed.Code
	}
	s.Log.Info("refused a topic change; topics are changed with Fluss DDL", "api", api, "topic", topic)
	return kerr.PolicyViolation.Code
}

// msgIf returns msg for a policy refusal and nil for other codes, as a
// broker sends no message for an authorization failure.
func msgIf(code int16, msg string) *string {
	if code != kerr.PolicyViolation.Code {
		return nil
	}
	return &msg
}
