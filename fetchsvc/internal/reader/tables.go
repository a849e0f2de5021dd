package reader

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/hamba/avro/v2"

	"github.com/ferrygw/ferry/fetchsvc/internal/groupoffsets"
	"github.com/ferrygw/ferry/fetchsvc/rebuild"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/protoschema"
)

// Fluss is what the service needs from a Fluss client; *fluss.Client has
// it.
type Fluss interface {
	groupoffsets.Fluss
	GetTableSchema(ctx context.Context, path fluss.TablePath, schemaID int32) (types.Schema, int32, error)
	OffsetsForTimestamp(ctx context.Context, tableID int64, partitionID *int64, buckets []int32, timestampMs int64) (map[int32]int64, error)
}

// schemaKey names one mapping of one schema version: batches carry the
// schema id they were written with, and the mapping decides how its
// columns become a record.
type schemaKey struct {
	mappingID string
	tableID   int64
	schemaID  int16
}

// schemaPlan turns the batches of one schema version into records.
type schemaPlan struct {
	arrow    *arrow.Schema
	rebuild  *rebuild.Plan
	decoders sync.Pool // *logbatch.Decoder: each holds a scratch buffer
}

func (p *schemaPlan) decoder() (*logbatch.Decoder, error) {
	if d, ok := p.decoders.Get().(*logbatch.Decoder); ok {
		return d, nil
	}
	return logbatch.NewDecoder(p.arrow, nil)
}

// tables knows which table ids the Fluss client can route (it routes only
// tables it looked up by path) and the plans of the schema versions met.
type tables struct {
	fluss   Fluss
	schemas schemav1.SchemaServiceClient // nil: AVRO topics are refused
	mu      sync.Mutex
	known   map[int64]*fluss.TableInfo
	plans   map[schemaKey]*schemaPlan
	// growth is each table's Kafka bytes per Fluss log byte, as last seen
	// (JSON values are several times their compressed Arrow form).
	growth map[int64]float64
}

// logBytesFor is how many Fluss log bytes to read for kafkaBytes of
// records of a table: asking for kafkaBytes of log would read several
// times what one fetch can return, and read it again on the next.
func (t *tables) logBytesFor(tableID int64, kafkaBytes int32) int32 {
	if kafkaBytes <= 0 {
		return 0 // FetchLog's default
	}
	t.mu.Lock()
	g := t.growth[tableID]
	t.mu.Unlock()
	if g <= 1 {
		return kafkaBytes
	}
	return max(int32(float64(kafkaBytes)/g), minLogRead)
}

// growthOf is the table's Kafka bytes per log byte as last seen, and a
// guess (JSON over compressed Arrow) before any.
func (t *tables) growthOf(tableID int64) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g, ok := t.growth[tableID]; ok {
		return g
	}
	return defaultGrowth
}

const defaultGrowth = 4

// minLogRead keeps reads of tables that grow a lot from becoming tiny.
const minLogRead = 16 << 10

// observeGrowth records the growth of one conversion.
func (t *tables) observeGrowth(tableID int64, c converted) {
	if c.flussBytes < minLogRead {
		return // too little to say
	}
	g := float64(len(c.kafka)) / float64(c.flussBytes)
	t.mu.Lock()
	t.growth[tableID] = g
	t.mu.Unlock()
}

func newTables(f Fluss, schemas schemav1.SchemaServiceClient) *tables {
	return &tables{fluss: f, schemas: schemas, known: map[int64]*fluss.TableInfo{}, plans: map[schemaKey]*schemaPlan{}, growth: map[int64]float64{}}
}

// errTableGone answers a mapping whose table was dropped (its path may now
// name another table): the client must refresh its metadata.
type errTableGone struct{ m *catalogv1.TopicMapping }

func (e errTableGone) Error() string {
	return fmt.Sprintf("table %s.%s (id %d) no longer exists", e.m.GetDatabase(), e.m.GetTable(), e.m.GetTableId())
}

// table makes sure the client routes m's table id, looking the path up
// once; a path now naming another table id is errTableGone.
func (t *tables) table(ctx context.Context, m *catalogv1.TopicMapping) (*fluss.TableInfo, error) {
	t.mu.Lock()
	info := t.known[m.GetTableId()]
	t.mu.Unlock()
	if info != nil {
		return info, nil
	}
	info, err := t.fluss.GetTableInfo(ctx, fluss.TablePath{Database: m.GetDatabase(), Table: m.GetTable()})
	switch {
	case fluss.CodeOf(err) == fluss.CodeTableNotExist || fluss.CodeOf(err) == fluss.CodeDatabaseNotExist:
		return nil, errTableGone{m}
	case err != nil:
		return nil, err
	case info.TableID != m.GetTableId():
		return nil, errTableGone{m}
	}
	t.mu.Lock()
	t.known[info.TableID] = info
	t.mu.Unlock()
	return info, nil
}

// forget drops a table the cluster no longer has, so that the next request
// looks its path up again.
func (t *tables) forget(tableID int64) {
	t.mu.Lock()
	delete(t.known, tableID)
	delete(t.growth, tableID)
	t.mu.Unlock()
}

// plan returns the plan of schema version schemaID of m's table.
func (t *tables) plan(ctx context.Context, m *catalogv1.TopicMapping, info *fluss.TableInfo, schemaID int16) (*schemaPlan, error) {
	key := schemaKey{m.GetMappingId(), info.TableID, schemaID}
	t.mu.Lock()
	p := t.plans[key]
	t.mu.Unlock()
	if p != nil {
		return p, nil
	}
	s := info.Schema
	if info.SchemaID != int32(schemaID) {
		var err error
		if s, _, err = t.fluss.GetTableSchema(ctx, info.TablePath, int32(schemaID)); err != nil {
			return nil, fmt.Errorf("schema %d of %s: %w", schemaID, info.TablePath, err)
		}
	}
	cols := s.Fields()
	as, err := types.ArrowSchema(cols)
	if err != nil {
		return nil, fmt.Errorf("schema %d of %s: %w", schemaID, info.TablePath, err)
	}
	rp, err := rebuild.Compile(m, cols)
	if err != nil {
		return nil, fmt.Errorf("schema %d of %s: %w", schemaID, info.TablePath, err)
	}
	switch m.GetMapping().GetValueFormat() {
	case catalogv1.ValueFormat_VALUE_FORMAT_AVRO:
		if rp, err = t.withAvro(ctx, m, rp); err != nil {
			return nil, err
		}
	case catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF:
		if rp, err = t.withProtobuf(ctx, m, rp); err != nil {
			return nil, err
		}
	case catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA:
		s, _, err := t.topicSchema(ctx, m, false, schemav1.SchemaType_SCHEMA_TYPE_JSON)
		if err != nil {
			return nil, err
		}
		rp = rp.WithJSONSchema(s.GetId())
	}
	if rp, err = t.withFramedKeys(ctx, m, rp); err != nil {
		return nil, err
	}
	p = &schemaPlan{arrow: as, rebuild: rp}
	t.mu.Lock()
	if len(t.plans) > maxPlans {
		// Mapping ids change with every catalog change; old ones are not
		// asked for again. Dropping all is simpler than tracking use.
		clear(t.plans)
	}
	t.plans[key] = p
	t.mu.Unlock()
	return p, nil
}

// withFramedKeys gives rp the schema the topic's framed keys are served
// in (kafka.key.format avro, protobuf or json-schema).
func (t *tables) withFramedKeys(ctx context.Context, m *catalogv1.TopicMapping, rp *rebuild.Plan) (*rebuild.Plan, error) {
	switch rp.FramedKeys() {
	case catalogv1.ValueFormat_VALUE_FORMAT_AVRO:
		s, parsed, err := t.avroSchema(ctx, m, true)
		if err != nil {
			return nil, err
		}
		return rp.WithAvroKey(s.GetId(), parsed)
	case catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF:
		s, refs, err := t.topicSchema(ctx, m, true, schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF)
		if err != nil {
			return nil, err
		}
		fd, err := protoschema.Registered(ctx, s, refs)
		if err != nil {
			return nil, fmt.Errorf("topic %s: key: %w", m.GetTopic(), err)
		}
		return rp.WithProtobufKey(s.GetId(), fd)
	case catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA:
		s, _, err := t.topicSchema(ctx, m, true, schemav1.SchemaType_SCHEMA_TYPE_JSON)
		if err != nil {
			return nil, err
		}
		return rp.WithJSONSchemaKey(s.GetId()), nil
	}
	return rp, nil
}

// topicSchema is the schema the topic's values (or keys) are served in:
// the latest registered for its subject, or one the registry derives from
// the table. It is kept with the plan, i.e. until the mapping or the
// table's schema changes.
func (t *tables) topicSchema(ctx context.Context, m *catalogv1.TopicMapping, key bool, typ schemav1.SchemaType) (*schemav1.Schema, []*schemav1.Schema, error) {
	if t.schemas == nil {
		return nil, nil, fmt.Errorf("topic %s has Schema Registry framed values or keys, but this fetchsvc runs without a schema registry (-schema-addr / FERRY_SCHEMA_ADDR)", m.GetTopic())
	}
	// A Fluss partition's topic shares its table's subject.
	topic := m.GetTopic()
	if fp := m.GetFlussPartition(); fp != nil && fp.GetTableTopic() != "" {
		topic = fp.GetTableTopic()
	}
	part := "value"
	if key {
		part = "key"
	}
	resp, err := t.schemas.GetTopicSchema(ctx, &schemav1.GetTopicSchemaRequest{Topic: topic, Key: key, Type: typ})
	if err != nil {
		return nil, nil, fmt.Errorf("the schema registry has no %s schema for topic %s: %w", part, topic, err)
	}
	s := resp.GetSchema()
	got := s.GetType()
	if got == schemav1.SchemaType_SCHEMA_TYPE_UNSPECIFIED {
		got = schemav1.SchemaType_SCHEMA_TYPE_AVRO
	}
	if got != typ {
		return nil, nil, fmt.Errorf("the schema registry's %s schema id %d for topic %s is %s, not %s", part, s.GetId(), topic, got, typ)
	}
	return s, resp.GetReferenced(), nil
}

// withAvro gives rp the Avro schema the topic's values are served in.
func (t *tables) withAvro(ctx context.Context, m *catalogv1.TopicMapping, rp *rebuild.Plan) (*rebuild.Plan, error) {
	s, parsed, err := t.avroSchema(ctx, m, false)
	if err != nil {
		return nil, err
	}
	return rp.WithAvro(s.GetId(), parsed)
}

// avroSchema is the topic's Avro value (or key) schema, parsed.
func (t *tables) avroSchema(ctx context.Context, m *catalogv1.TopicMapping, key bool) (*schemav1.Schema, avro.Schema, error) {
	s, refs, err := t.topicSchema(ctx, m, key, schemav1.SchemaType_SCHEMA_TYPE_AVRO)
	if err != nil {
		return nil, nil, err
	}
	cache := &avro.SchemaCache{}
	for _, ref := range refs {
		if _, err := avro.ParseWithCache(ref.GetText(), "", cache); err != nil {
			return nil, nil, fmt.Errorf("schema id %d referenced by schema id %d of topic %s: %w", ref.GetId(), s.GetId(), m.GetTopic(), err)
		}
	}
	parsed, err := avro.ParseWithCache(s.GetText(), "", cache)
	if err != nil {
		return nil, nil, fmt.Errorf("schema id %d of topic %s: %w", s.GetId(), m.GetTopic(), err)
	}
	return s, parsed, nil
}

// maxPlans bounds the cached plans (one per mapping and schema version).
const maxPlans = 4096
