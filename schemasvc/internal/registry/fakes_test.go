package registry

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"

	"github.com/ferrygw/ferry/schemasvc/internal/store/storetest"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// fakeCatalog answers ResolveTopics from a map; unknown topics get
// UNKNOWN_TOPIC_OR_PARTITION as catalogsvc answers them.
type fakeCatalog struct {
	catalogv1.CatalogServiceClient
	topics map[string]*catalogv1.TopicMapping
}

func (f *fakeCatalog) ResolveTopics(_ context.Context, in *catalogv1.ResolveTopicsRequest, _ ...grpc.CallOption) (*catalogv1.ResolveTopicsResponse, error) {
	out := &catalogv1.ResolveTopicsResponse{}
	for _, t := range in.GetTopics() {
		if m, ok := f.topics[t]; ok {
			out.Results = append(out.Results, &catalogv1.TopicResult{Topic: t, Mapping: m})
		} else {
			out.Results = append(out.Results, &catalogv1.TopicResult{Topic: t, ErrorCode: 3, ErrorMessage: "unknown topic"})
		}
	}
	return out, nil
}

func col(name string, root catalogv1.TypeRoot, nullable bool) *catalogv1.Field {
	return &catalogv1.Field{Name: name, Type: &catalogv1.DataType{Root: root, Nullable: nullable}}
}

// ordersCatalog has topic "orders": id BIGINT NOT NULL, item STRING,
// price DECIMAL(10,2), at TIMESTAMP_LTZ(3), JSON values, unknown fields
// refused.
func ordersCatalog() *fakeCatalog {
	price := col("price", catalogv1.TypeRoot_TYPE_ROOT_DECIMAL, true)
	price.Type.Precision, price.Type.Scale = 10, 2
	at := col("at", catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ, true)
	at.Type.Precision = 3
	return &fakeCatalog{topics: map[string]*catalogv1.TopicMapping{
		"orders": {Topic: "orders", Database: "shop", Table: "orders", Kind: catalogv1.TableKind_TABLE_KIND_LOG,
			Columns: []*catalogv1.Field{col("id", catalogv1.TypeRoot_TYPE_ROOT_BIGINT, false), col("item", catalogv1.TypeRoot_TYPE_ROOT_STRING, true), price, at},
			Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO, UnknownFields: catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT}},
	}}
}

func newRegistry(t *testing.T, log *storetest.MemLog, cat catalogv1.CatalogServiceClient) *Registry {
	t.Helper()
	r, err := New(log, cat, slog.New(slog.NewTextHandler(io.Discard, nil)), noop.NewMeterProvider())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// protoCatalog has topic "items" of a protobuf table: id BIGINT NOT NULL,
// item STRING, at TIMESTAMP_LTZ(3), unknown fields refused.
func protoCatalog() *fakeCatalog {
	at := col("at", catalogv1.TypeRoot_TYPE_ROOT_TIMESTAMP_LTZ, true)
	at.Type.Precision = 3
	return &fakeCatalog{topics: map[string]*catalogv1.TopicMapping{
		"items": {Topic: "items", Database: "shop", Table: "items", Kind: catalogv1.TableKind_TABLE_KIND_LOG,
			Columns: []*catalogv1.Field{col("id", catalogv1.TypeRoot_TYPE_ROOT_BIGINT, false), col("item", catalogv1.TypeRoot_TYPE_ROOT_STRING, true), at},
			Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF, UnknownFields: catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT}},
	}}
}
