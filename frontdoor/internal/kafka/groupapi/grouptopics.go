package groupapi

import (
	"context"

	"github.com/ferrygw/ferry/frontdoor/internal/backends"
	"github.com/ferrygw/ferry/frontdoor/internal/groups"
)

// catalogTopics is the consumer protocol's view of the topics: ids and
// partition counts from catalogsvc (its cache for named topics).
type catalogTopics struct{ catalog *backends.Catalog }

func (c catalogTopics) Topics(ctx context.Context, names []string) (map[string]groups.TopicInfo, error) {
	got, err := c.catalog.Resolve(ctx, names)
	if err != nil {
		return nil, err
	}
	out := make(map[string]groups.TopicInfo, len(got))
	for name, t := range got {
		if m := t.Mapping; m != nil && len(m.GetTopicId()) == 16 {
			out[name] = groups.TopicInfo{Name: name, ID: [16]byte(m.GetTopicId()), Partitions: m.GetPartitionCount()}
		}
	}
	return out, nil
}

func (c catalogTopics) AllTopics(ctx context.Context) ([]groups.TopicInfo, error) {
	md, err := c.catalog.Metadata(ctx, nil, true)
	if err != nil {
		return nil, err
	}
	var out []groups.TopicInfo
	for _, t := range md.GetTopics() {
		if len(t.GetTopicId()) == 16 && t.GetErrorCode() == 0 {
			out = append(out, groups.TopicInfo{Name: t.GetTopic(), ID: [16]byte(t.GetTopicId()), Partitions: int32(len(t.GetPartitions()))})
		}
	}
	return out, nil
}
