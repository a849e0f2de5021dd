package registry

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ferrygw/ferry/schemasvc/internal/store"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
)

// Server is the gRPC SchemaService over a Registry.
type Server struct {
	schemav1.UnimplementedSchemaServiceServer
	reg *Registry
}

// NewServer serves reg over gRPC.
func NewServer(reg *Registry) *Server { return &Server{reg: reg} }

// GetSchema implements SchemaService.
func (s *Server) GetSchema(ctx context.Context, in *schemav1.GetSchemaRequest) (*schemav1.GetSchemaResponse, error) {
	sch, err := s.reg.SchemaByID(ctx, in.GetId())
	if err != nil {
		return nil, grpcError(err)
	}
	refs, err := s.reg.Resolved(ctx, sch)
	if err != nil {
		return nil, grpcError(err)
	}
	return &schemav1.GetSchemaResponse{Schema: toProto(sch), Referenced: toProtos(refs)}, nil
}

// GetTopicSchema implements SchemaService.
func (s *Server) GetTopicSchema(ctx context.Context, in *schemav1.GetTopicSchemaRequest) (*schemav1.GetTopicSchemaResponse, error) {
	typ := "" // the table's own (target.lang)
	switch in.GetType() {
	case schemav1.SchemaType_SCHEMA_TYPE_UNSPECIFIED:
	case schemav1.SchemaType_SCHEMA_TYPE_AVRO:
		typ = TypeAvro
	case schemav1.SchemaType_SCHEMA_TYPE_JSON:
		typ = TypeJSON
	case schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF:
		typ = TypeProtobuf
	default:
		return nil, status.Errorf(codes.InvalidArgument, "unknown schema type %s", in.GetType())
	}
	if in.GetTopic() == "" {
		return nil, status.Error(codes.InvalidArgument, "topic is empty")
	}
	subject := in.GetTopic() + "-value"
	if in.GetKey() {
		subject = in.GetTopic() + "-key"
	}
	if err := s.reg.deriveIfEmptyAs(ctx, subject, typ); err != nil {
		return nil, grpcError(err)
	}
	v, err := s.reg.Version(ctx, subject, 0, false)
	if err != nil {
		return nil, grpcError(err)
	}
	refs, err := s.reg.Resolved(ctx, v.Schema)
	if err != nil {
		return nil, grpcError(err)
	}
	return &schemav1.GetTopicSchemaResponse{Schema: toProto(v.Schema), Referenced: toProtos(refs)}, nil
}

func toProtos(ss []*store.Schema) []*schemav1.Schema {
	out := make([]*schemav1.Schema, len(ss))
	for i, s := range ss {
		out[i] = toProto(s)
	}
	return out
}

func toProto(s *store.Schema) *schemav1.Schema {
	out := &schemav1.Schema{Id: s.ID, Text: s.Text, Type: schemaType(s.Type)}
	for _, r := range References(s) {
		out.References = append(out.References, &schemav1.SchemaReference{Name: r.Name, Subject: r.Subject, Version: r.Version})
	}
	return out
}

func schemaType(t string) schemav1.SchemaType {
	switch t {
	case TypeAvro:
		return schemav1.SchemaType_SCHEMA_TYPE_AVRO
	case TypeProtobuf:
		return schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF
	case TypeJSON:
		return schemav1.SchemaType_SCHEMA_TYPE_JSON
	}
	return schemav1.SchemaType_SCHEMA_TYPE_UNSPECIFIED
}

// grpcError maps a registry refusal onto a gRPC status: not found codes to
// NOT_FOUND, store failures to UNAVAILABLE (retriable), the rest to
// FAILED_PRECONDITION.
func grpcError(err error) error {
	e := AsError(err)
	switch e.HTTPStatus() {
	case 404:
		return status.Error(codes.NotFound, e.Message)
	case 500:
		return status.Error(codes.Unavailable, e.Message)
	}
	return status.Error(codes.FailedPrecondition, e.Message)
}
