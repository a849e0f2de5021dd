package registry

import (
	"context"
	"fmt"
	"testing"

	"github.com/ferrygw/ferry/schemasvc/internal/store/storetest"
)

// A version other schemas reference is listed by ReferencedBy and cannot
// be deleted (42206, as Confluent refuses it) until they are: soft-deleted
// referrers still keep it from a permanent deletion; a subject's own
// versions do not keep each other.
func TestReferencedVersionsKept(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t, &storetest.MemLog{}, ordersCatalog())
	kind := `{"type":"enum","name":"Kind","namespace":"com.example","symbols":["TEA","COFFEE"]}`
	if _, _, err := r.Register(ctx, "orders-key", Input{Text: kind}); err != nil {
		t.Fatal(err)
	}
	order := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":["null","com.example.Kind"],"default":null}]}`
	id, _, err := r.Register(ctx, "orders-value", Input{Text: order, References: []Reference{{Name: "com.example.Kind", Subject: "orders-key", Version: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int32{1, 0} { // 0: latest
		if got, err := r.ReferencedBy(ctx, "orders-key", v, false); err != nil || fmt.Sprint(got) != fmt.Sprint([]int32{id}) {
			t.Errorf("ReferencedBy(orders-key, %d) = %v %v, want [%d]", v, got, err, id)
		}
	}
	if got, err := r.ReferencedBy(ctx, "orders-value", 1, false); err != nil || len(got) != 0 {
		t.Errorf("ReferencedBy(orders-value, 1) = %v %v, want []", got, err)
	}
	if _, err := r.ReferencedBy(ctx, "orders-key", 5, false); AsError(err).Code != CodeVersionNotFound {
		t.Errorf("ReferencedBy of version 5: %v", err)
	}
	if _, err := r.ReferencedBy(ctx, "nobody-key", 1, false); AsError(err).Code != CodeSubjectNotFound {
		t.Errorf("ReferencedBy of an unknown subject: %v", err)
	}

	const refused = "One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=orders-key,version=1}."
	if _, err := r.DeleteSubject(ctx, "orders-key", false); AsError(err).Code != CodeReferenceExists || err.Error() != refused {
		t.Errorf("deleting the referenced subject: %v", err)
	}
	if _, err := r.DeleteVersion(ctx, "orders-key", 1, false); AsError(err).Code != CodeReferenceExists {
		t.Errorf("deleting the referenced version: %v", err)
	}
	// Soft-deleted, the referrer no longer keeps a soft deletion, but still a permanent one.
	if _, err := r.DeleteSubject(ctx, "orders-value", false); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.ReferencedBy(ctx, "orders-key", 1, true); fmt.Sprint(got) != fmt.Sprint([]int32{id}) {
		t.Errorf("ReferencedBy with deleted = %v, want [%d]", got, id)
	}
	if vs, err := r.DeleteSubject(ctx, "orders-key", false); err != nil || fmt.Sprint(vs) != "[1]" {
		t.Errorf("soft deletion once the referrer is soft-deleted: %v %v", vs, err)
	}
	if _, err := r.DeleteVersion(ctx, "orders-key", 1, true); AsError(err).Code != CodeReferenceExists {
		t.Errorf("permanent deletion while a soft-deleted schema references it: %v", err)
	}
	if _, err := r.DeleteSubject(ctx, "orders-value", true); err != nil {
		t.Fatal(err)
	}
	if vs, err := r.DeleteSubject(ctx, "orders-key", true); err != nil || fmt.Sprint(vs) != "[1]" {
		t.Errorf("permanent deletion once the referrer is gone: %v %v", vs, err)
	}
}
