package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request's decoded cost follows its shape, not its byte length: kmsg
// allocates a struct per array element and a map entry per unknown tagged
// field, and a handler answers each element with a response element. A
// Produce request of 8 MB can carry a million partition entries, 40 bytes
// each decoded and up to 1.7 KiB served. requestShape counts those
// elements from the wire bytes, before kmsg decodes anything, so that the
// connection can charge the cost to its work budget (or refuse it) first.
//
// The scan is lenient where kmsg is strict (nullability, trailing bytes):
// kmsg still validates the request after the scan. It must never refuse
// what kmsg accepts, nor count fewer elements than kmsg decodes; the fuzz
// target FuzzShapeMatchesKmsg holds it to that.

// requestShape is what the scan found.
type requestShape struct {
	// elems counts array elements and tagged fields at every level.
	Elems int
	// produceEntries counts Produce partition entries (also in elems).
	ProduceEntries int
}

var errShapeTruncated = errors.New("request shape: truncated")

// fieldKind is the wire type of one field of a request schema.
type fieldKind uint8

const (
	KInt8 fieldKind = iota
	KInt16
	KInt32
	KInt64
	KUUID
	KString // also nullable strings
	KBytes  // also nullable bytes
	KArray  // of elem; also nullable arrays
	kTags   // a tagged field section; only in flexible versions
	KStruct // a nullable struct of elem: int8 -1 for null, else its fields
)

// field is one field of a request body, present in versions minV..maxV.
type Field struct {
	Kind       fieldKind
	MinV, MaxV int16
	Elem       []Field // kArray and kStruct only
	Produce    bool    // a kArray of Produce partition entries
}

const AnyV = 1<<15 - 1

func FieldOf(kind fieldKind, minV, maxV int16) Field {
	return Field{Kind: kind, MinV: minV, MaxV: maxV}
}

func Arr(minV, maxV int16, elem ...Field) Field {
	return Field{Kind: KArray, MinV: minV, MaxV: maxV, Elem: elem}
}

// tags is the tagged field section, which flexible versions end every
// structure with; the scanner skips it in non-flexible versions.
var Tags = FieldOf(kTags, 0, AnyV)

// requestSchema is a request body's layout and its first flexible version.
type RequestSchema struct {
	FlexibleFrom int16
	Fields       []Field
}

// requestSchemas are the bodies of the APIs frontdoor decodes, from
// Kafka's message definitions (clients/src/main/resources/common/message),
// limited to the versions frontdoor serves. The transport's own APIs are
// here; each concern package adds its APIs' layouts (addRequestSchemas).
var RequestSchemas = map[int16]RequestSchema{
	MetadataKey: {FlexibleFrom: 9, Fields: []Field{
		Arr(0, AnyV, // topics
			FieldOf(KUUID, 10, AnyV),
			FieldOf(KString, 0, AnyV), // name
			Tags),
		FieldOf(KInt8, 4, AnyV), // allow_auto_topic_creation
		FieldOf(KInt8, 8, 10),   // include_cluster_authorized_operations
		FieldOf(KInt8, 8, AnyV), // include_topic_authorized_operations
		Tags,
	}},
	ApiVersionsKey: {FlexibleFrom: 3, Fields: []Field{
		FieldOf(KString, 3, AnyV), // client_software_name
		FieldOf(KString, 3, AnyV), // client_software_version
		Tags,
	}},
	SASLHandshakeKey: {FlexibleFrom: AnyV, Fields: []Field{
		FieldOf(KString, 0, AnyV), // mechanism
	}},
	SASLAuthenticateKey: {FlexibleFrom: 2, Fields: []Field{
		FieldOf(KBytes, 0, AnyV), // auth_bytes
		Tags,
	}},
}

// addRequestSchemas adds the layouts of a concern's APIs, from its
// package's init.
func AddRequestSchemas(m map[int16]RequestSchema) { maps.Copy(RequestSchemas, m) }

// shapeOf scans a request body of API key at version. Every API frontdoor
// registers needs a schema here: a request of an API without one is
// refused, so that a new API cannot bypass the work budget unnoticed.
func ShapeOf(key, version int16, body []byte) (requestShape, error) {
	var sh requestShape
	s, ok := RequestSchemas[key]
	if !ok {
		return sh, fmt.Errorf("request shape: no schema for %s", kmsg.NameForKey(key))
	}
	sc := shapeScanner{b: body, version: version, flexible: version >= s.FlexibleFrom, shape: &sh}
	if err := sc.fields(s.Fields); err != nil {
		return sh, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	return sh, nil
}

type shapeScanner struct {
	b        []byte
	version  int16
	flexible bool
	shape    *requestShape
}

func (s *shapeScanner) fields(fs []Field) error {
	for i := range fs {
		fd := &fs[i]
		if s.version < fd.MinV || s.version > fd.MaxV {
			continue
		}
		if err := s.field(fd); err != nil {
			return err
		}
	}
	return nil
}

func (s *shapeScanner) field(fd *Field) error {
	switch fd.Kind {
	case KInt8:
		return s.skip(1)
	case KInt16:
		return s.skip(2)
	case KInt32:
		return s.skip(4)
	case KInt64:
		return s.skip(8)
	case KUUID:
		return s.skip(16)
	case KString, KBytes:
		n, err := s.length(fd.Kind)
		if err != nil {
			return err
		}
		return s.skip(n)
	case KArray:
		n, err := s.length(KArray)
		if err != nil {
			return err
		}
		// Each element takes at least a byte, so a count beyond what is
		// left is truncation, not an allocation to make.
		if n > len(s.b) {
			return errShapeTruncated
		}
		s.shape.Elems += n
		if fd.Produce {
			s.shape.ProduceEntries += n
		}
		for range n {
			if err := s.fields(fd.Elem); err != nil {
				return err
			}
		}
		return nil
	case KStruct:
		if len(s.b) < 1 {
			return errShapeTruncated
		}
		present := int8(s.b[0]) != -1
		s.b = s.b[1:]
		if !present {
			return nil
		}
		return s.fields(fd.Elem)
	case kTags:
		if !s.flexible {
			return nil
		}
		n, err := s.uvarint()
		if err != nil {
			return err
		}
		if n > uint64(len(s.b)) { // every tagged field takes at least two bytes
			return errShapeTruncated
		}
		s.shape.Elems += int(n)
		for range n {
			if _, err := s.uvarint(); err != nil { // tag
				return err
			}
			size, err := s.uvarint()
			if err != nil {
				return err
			}
			if size > uint64(len(s.b)) {
				return errShapeTruncated
			}
			s.b = s.b[size:]
		}
		return nil
	}
	return fmt.Errorf("request shape: unknown field kind %d", fd.Kind)
}

// length reads the length of a string, bytes or array field; null is 0.
// Non-flexible versions have an int16 length for strings, int32 for bytes
// and arrays; flexible versions an unsigned varint of length+1, which kbin
// reads as 32 bits and, for arrays, as a signed count (negative: null).
func (s *shapeScanner) length(kind fieldKind) (int, error) {
	if s.flexible {
		v, err := s.uvarint()
		if err != nil {
			return 0, err
		}
		if v > 1<<32-1 {
			return 0, errShapeTruncated
		}
		n := int64(v) - 1
		if kind == KArray {
			n = int64(int32(uint32(v))) - 1
		}
		if n > int64(len(s.b)) {
			return 0, errShapeTruncated
		}
		return int(max(n, 0)), nil
	}
	if kind == KString {
		if len(s.b) < 2 {
			return 0, errShapeTruncated
		}
		v := int16(binary.BigEndian.Uint16(s.b))
		s.b = s.b[2:]
		return max(int(v), 0), nil
	}
	if len(s.b) < 4 {
		return 0, errShapeTruncated
	}
	v := int32(binary.BigEndian.Uint32(s.b))
	s.b = s.b[4:]
	return max(int(v), 0), nil
}

func (s *shapeScanner) uvarint() (uint64, error) {
	v, n := binary.Uvarint(s.b)
	if n <= 0 {
		return 0, errShapeTruncated
	}
	s.b = s.b[n:]
	return v, nil
}

func (s *shapeScanner) skip(n int) error {
	if n > len(s.b) {
		return errShapeTruncated
	}
	s.b = s.b[n:]
	return nil
}

// The work cost model: what serving a request may take beyond its frame
// bytes (held against the byte budgets), charged to the work budgets
// before it is decoded. TestShapeCostCoversAllocations measures the
// per-element figure against kmsg and the Produce handler.
const (
	// requestBaseCost is one request's bookkeeping: its pending slot, its
	// span and the goroutine that runs its Later.
	requestBaseCost = 8 << 10
	// elemCost is one array element or tagged field: its decoded struct
	// or map entry, the response element answering it, that element
	// encoded, and (Produce) its work item, sequencer ticket and index
	// entry for duplicate detection.
	ElemCost = 2 << 10
	// produceWorkers bounds the goroutines serving one Produce request's
	// partitions; workerCost is one of them (its stack while it calls
	// transcodesvc and appendsvc).
	ProduceWorkers = 64
	workerCost     = 16 << 10
)

// minWorkBudget is the smallest work budget, so that tiny byte budgets
// (tests, constrained deployments) still admit a request with a few
// hundred elements and its workers.
const minWorkBudget = 4 << 20

// workBudgetSize is the work budget that goes with a byte budget of n:
// the same size, at least minWorkBudget.
func WorkBudgetSize(n int64) int64 { return max(n, minWorkBudget) }

// cost is the work budget a request of this shape is charged.
func (sh requestShape) cost() int64 {
	return requestBaseCost + sh.elemsCost() + int64(min(sh.ProduceEntries, ProduceWorkers))*workerCost
}

// elemsCost is the part of cost that grows with the request's elements;
// a request is refused when it alone exceeds the connection's budget.
func (sh requestShape) elemsCost() int64 { return int64(sh.Elems) * ElemCost }
