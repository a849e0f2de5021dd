// Package schemas reads the Confluent framing of Schema Registry records
// (magic byte 0, a big-endian 4-byte schema id, the payload) and fetches
// the writer schemas those ids name from the SchemaService. An id never
// changes meaning, so a fetched schema is kept until the bounded cache
// forgets it; an id the registry does not know is asked again next time,
// since it may be registered in a moment.
package schemas

import (
	"container/list"
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/hamba/avro/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/protoschema"
)

// HeaderSize is the magic byte and the schema id before a framed payload.
const HeaderSize = 5

// FrameError is a value that is not a framed record.
type FrameError struct{ Msg string }

func (e *FrameError) Error() string { return e.Msg }

// Frame splits a framed value into its schema id and payload.
func Frame(v []byte) (id int32, payload []byte, err error) {
	if len(v) == 0 {
		return 0, nil, &FrameError{Msg: "missing magic byte: the value is empty, a Schema Registry serializer writes magic byte 0 and a 4-byte schema id first"}
	}
	if v[0] != 0 {
		return 0, nil, &FrameError{Msg: fmt.Sprintf("missing magic byte: the value starts with 0x%02x, a Schema Registry serializer writes magic byte 0 and a 4-byte schema id first", v[0])}
	}
	if len(v) < HeaderSize {
		return 0, nil, &FrameError{Msg: fmt.Sprintf("truncated payload: the value has %d bytes, fewer than the 5 of magic byte and schema id", len(v))}
	}
	return int32(binary.BigEndian.Uint32(v[1:HeaderSize])), v[HeaderSize:], nil
}

// AppendFrame appends the framing header of schema id to dst.
func AppendFrame(dst []byte, id int32) []byte {
	return binary.BigEndian.AppendUint32(append(dst, 0), uint32(id))
}

// Schema is one registered schema as this service can use it.
type Schema struct {
	ID   int32
	Type schemav1.SchemaType
	// Avro is the parsed schema of an Avro one; nil when Err is set.
	Avro avro.Schema
	// Proto is the compiled file of a Protobuf one; nil when Err is set.
	Proto protoreflect.FileDescriptor
	// Err says why an Avro or Protobuf schema cannot decode records here
	// (it does not parse or compile); records framed with it fail with
	// this reason.
	Err error
}

// IsAvro reports whether the schema is Avro (the registry's default type).
func (s *Schema) IsAvro() bool {
	return s.Type == schemav1.SchemaType_SCHEMA_TYPE_AVRO || s.Type == schemav1.SchemaType_SCHEMA_TYPE_UNSPECIFIED
}

// TypeName is the type as the Schema Registry API spells it.
func (s *Schema) TypeName() string {
	if s.IsAvro() {
		return "AVRO"
	}
	return typeName(s.Type)
}

// ParseAvro parses a registered Avro schema and the schemas it references,
// each in a cache of its own call: named types of one registration never
// leak into another.
func ParseAvro(s *schemav1.Schema, referenced []*schemav1.Schema) (avro.Schema, error) {
	if t := s.GetType(); t != schemav1.SchemaType_SCHEMA_TYPE_AVRO && t != schemav1.SchemaType_SCHEMA_TYPE_UNSPECIFIED {
		return nil, fmt.Errorf("schema id %d is a %s schema, not Avro", s.GetId(), typeName(t))
	}
	cache := &avro.SchemaCache{}
	for _, ref := range referenced {
		if _, err := avro.ParseWithCache(ref.GetText(), "", cache); err != nil {
			return nil, fmt.Errorf("schema id %d: referenced schema id %d does not parse as Avro: %w", s.GetId(), ref.GetId(), err)
		}
	}
	parsed, err := avro.ParseWithCache(s.GetText(), "", cache)
	if err != nil {
		return nil, fmt.Errorf("schema id %d does not parse as Avro: %w", s.GetId(), err)
	}
	return parsed, nil
}

func typeName(t schemav1.SchemaType) string {
	switch t {
	case schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF:
		return "PROTOBUF"
	case schemav1.SchemaType_SCHEMA_TYPE_JSON:
		return "JSON"
	}
	return t.String()
}

// UnavailableError is a registry that could not answer; the batch should
// be retried.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string {
	return "the schema registry could not be asked: " + e.Err.Error()
}
func (e *UnavailableError) Unwrap() error { return e.Err }

// Cache fetches schemas by id through a SchemaService client and keeps the
// most recently used ones.
type Cache struct {
	client schemav1.SchemaServiceClient
	size   int

	mu       sync.Mutex
	byID     map[int32]*list.Element
	order    *list.List // front = most recently used
	inflight map[int32]*fetch
	// OnFetch, when set, is told the result of each GetSchema call: "ok",
	// "unknown" (NOT_FOUND) or "error".
	OnFetch func(ctx context.Context, result string)
}

// NewCache keeps up to size schemas.
func NewCache(client schemav1.SchemaServiceClient, size int) *Cache {
	return &Cache{client: client, size: max(size, 1), byID: map[int32]*list.Element{}, order: list.New(), inflight: map[int32]*fetch{}}
}

// Resolve puts the schema of each id into into; an id the registry does
// not know is left out. An error means the registry could not be asked
// (an *UnavailableError): nothing about the ids is known then. Concurrent
// lookups of one id share one call.
func (c *Cache) Resolve(ctx context.Context, ids []int32, into map[int32]*Schema) error {
	for _, id := range ids {
		s, err := c.resolve(ctx, id)
		if err != nil {
			return err
		}
		if s != nil {
			into[id] = s
		}
	}
	return nil
}

// fetch is one GetSchema call others may wait for.
type fetch struct {
	done   chan struct{}
	schema *Schema // nil: unknown id
	err    error
}

func (c *Cache) resolve(ctx context.Context, id int32) (*Schema, error) {
	c.mu.Lock()
	if el, ok := c.byID[id]; ok {
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*Schema), nil
	}
	if f, ok := c.inflight[id]; ok {
		c.mu.Unlock()
		select {
		case <-f.done:
			return f.schema, f.err
		case <-ctx.Done():
			return nil, &UnavailableError{Err: ctx.Err()}
		}
	}
	f := &fetch{done: make(chan struct{})}
	c.inflight[id] = f
	c.mu.Unlock()

	f.schema, f.err = c.ask(ctx, id)
	if c.OnFetch != nil {
		result := "ok"
		switch {
		case f.err != nil:
			result = "error"
		case f.schema == nil:
			result = "unknown"
		}
		c.OnFetch(ctx, result)
	}
	c.mu.Lock()
	delete(c.inflight, id)
	if f.schema != nil {
		c.put(f.schema)
	}
	c.mu.Unlock()
	close(f.done)
	return f.schema, f.err
}

func (c *Cache) ask(ctx context.Context, id int32) (*Schema, error) {
	resp, err := c.client.GetSchema(ctx, &schemav1.GetSchemaRequest{Id: id})
	if status.Code(err) == codes.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, &UnavailableError{Err: err}
	}
	s := &Schema{ID: id, Type: resp.GetSchema().GetType()}
	switch {
	case s.IsAvro():
		s.Avro, s.Err = ParseAvro(resp.GetSchema(), resp.GetReferenced())
	case s.Type == schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF:
		// Compiled once per id and kept: a cancelled request must not
		// leave its cancellation behind as the schema's error.
		s.Proto, s.Err = protoschema.Registered(context.WithoutCancel(ctx), resp.GetSchema(), resp.GetReferenced())
	}
	return s, nil
}

// put adds s; c.mu is held.
func (c *Cache) put(s *Schema) {
	if _, ok := c.byID[s.ID]; ok {
		return
	}
	c.byID[s.ID] = c.order.PushFront(s)
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byID, last.Value.(*Schema).ID)
	}
}

// Len is the number of cached schemas.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
