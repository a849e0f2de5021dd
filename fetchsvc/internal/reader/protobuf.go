package reader

import (
	"context"
	"fmt"

	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/protoschema"
)

// withProtobuf gives rp the Protobuf schema the topic's values are served
// in.
func (t *tables) withProtobuf(ctx context.Context, m *catalogv1.TopicMapping, rp *rebuild.Plan) (*rebuild.Plan, error) {
	s, refs, err := t.topicSchema(ctx, m, false, schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF)
	if err != nil {
		return nil, err
	}
	fd, err := protoschema.Registered(ctx, s, refs)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", m.GetTopic(), err)
	}
	return rp.WithProtobuf(s.GetId(), fd)
}
