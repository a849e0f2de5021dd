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
	kInt8 fieldKind = iota
	kInt16
	kInt32
	kInt64
	kUUID
	kString // also nullable strings
	kBytes  // also nullable bytes
	kArray  // of elem; also nullable arrays
	kTags   // a tagged field section; only in flexible versions
	kStruct // a nullable struct of elem: int8 -1 for null, else its fields
)

// field is one field of a request body, present in versions minV..maxV.
type field struct {
	kind       fieldKind
	minV, maxV int16
	elem       []field // kArray and kStruct only
	produce    bool    // a kArray of Produce partition entries
}

const anyV = 1<<15 - 1

func fieldOf(kind fieldKind, minV, maxV int16) field {
	return field{kind: kind, minV: minV, maxV: maxV}
}

func arr(minV, maxV int16, elem ...field) field {
	return field{kind: kArray, minV: minV, maxV: maxV, elem: elem}
}

// tags is the tagged field section, which flexible versions end every
// structure with; the scanner skips it in non-flexible versions.
var tags = fieldOf(kTags, 0, anyV)

// requestSchema is a request body's layout and its first flexible version.
type requestSchema struct {
	FlexibleFrom int16
	Fields       []field
}

// requestSchemas are the bodies of the APIs frontdoor decodes, from
// Kafka's message definitions (clients/src/main/resources/common/message),
// limited to the versions frontdoor serves. The transport's own APIs are
// here; each concern package adds its APIs' layouts (AddRequestSchemas).
var RequestSchemas = map[int16]requestSchema{
	MetadataKey: {FlexibleFrom: 9, Fields: []field{
		arr(0, anyV, // topics
			fieldOf(kUUID, 10, anyV),
			fieldOf(kString, 0, anyV), // name
			tags),
		fieldOf(kInt8, 4, anyV), // allow_auto_topic_creation
		fieldOf(kInt8, 8, 10),   // include_cluster_authorized_operations
		fieldOf(kInt8, 8, anyV), // include_topic_authorized_operations
		tags,
	}},
	ApiVersionsKey: {FlexibleFrom: 3, Fields: []field{
		fieldOf(kString, 3, anyV), // client_software_name
		fieldOf(kString, 3, anyV), // client_software_version
		tags,
	}},
	SASLHandshakeKey: {FlexibleFrom: anyV, Fields: []field{
		fieldOf(kString, 0, anyV), // mechanism
	}},
	SASLAuthenticateKey: {FlexibleFrom: 2, Fields: []field{
		fieldOf(kBytes, 0, anyV), // auth_bytes
		tags,
	}},
}

// AddRequestSchemas adds the layouts of a concern's APIs, from its
// package's init.
func AddRequestSchemas(m map[int16]requestSchema) { maps.Copy(RequestSchemas, m) }

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

func (s *shapeScanner) fields(fs []field) error {
	for i := range fs {
		fd := &fs[i]
		if s.version < fd.minV || s.version > fd.maxV {
			continue
		}
		if err := s.field(fd); err != nil {
			return err
		}
	}
	return nil
}

func (s *shapeScanner) field(fd *field) error {
	switch fd.kind {
	case kInt8:
		return s.skip(1)
	case kInt16:
		return s.skip(2)
	case kInt32:
		return s.skip(4)
	case kInt64:
		return s.skip(8)
	case kUUID:
		return s.skip(16)
	case kString, kBytes:
		n, err := s.length(fd.kind)
		if err != nil {
			return err
		}
		return s.skip(n)
	case kArray:
		n, err := s.length(kArray)
		if err != nil {
			return err
		}
		// Each element takes at least a byte, so a count beyond what is
		// left is truncation, not an allocation to make.
		if n > len(s.b) {
			return errShapeTruncated
		}
		s.shape.Elems += n
		if fd.produce {
			s.shape.ProduceEntries += n
		}
		for range n {
			if err := s.fields(fd.elem); err != nil {
				return err
			}
		}
		return nil
	case kStruct:
		if len(s.b) < 1 {
			return errShapeTruncated
		}
		present := int8(s.b[0]) != -1
		s.b = s.b[1:]
		if !present {
			return nil
		}
		return s.fields(fd.elem)
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
	return fmt.Errorf("request shape: unknown field kind %d", fd.kind)
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
		if kind == kArray {
			n = int64(int32(uint32(v))) - 1
		}
		if n > int64(len(s.b)) {
			return 0, errShapeTruncated
		}
		return int(max(n, 0)), nil
	}
	if kind == kString {
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
