package consume

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// forgetGoneTable makes the next Resolve of topic ask catalogsvc again when
// fetchsvc answered one of the topic's partitions UNKNOWN_TOPIC_OR_PARTITION:
// the table (or Fluss partition) behind the cached mapping is gone, dropped
// and perhaps created again under the same name. Without this, Fetch and
// ListOffsets would name the old table until the cache entry expires, and
// consumers would retry against it that long. A partition the mapping does
// not have is no sign of a gone table.
func forgetGoneTable(c *backends.Catalog, topic string, m *catalogv1.TopicMapping, partition int32, code int16) {
	if code != kerr.UnknownTopicOrPartition.Code || m == nil || partition < 0 || partition >= m.GetPartitionCount() {
		return
	}
	if p := m.GetFlussPartition(); p != nil {
		c.MarkPartitionGone(topic, p.GetId())
		return
	}
	c.MarkStale(topic, m.GetTableId())
}
