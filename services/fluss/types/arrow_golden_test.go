package types_test

import (
	"testing"

	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// TestArrowSchemaMatchesFluss compares ArrowSchema with the schema Fluss's
// own ArrowUtils.toArrowSchema builds for the same columns: names
// (including "element", "entries", "key", "value"), types, units, widths
// and nullability must agree, or Fluss readers mis-read Ferry's batches.
func TestArrowSchemaMatchesFluss(t *testing.T) {
	gen := goldentest.New(t)
	cols := goldentest.AllTypesColumns()
	want := goldentest.Schema(t, gen.Run(t, goldentest.SchemaRequest(cols))[0])
	got, err := types.ArrowSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Fields()) != len(want.Fields()) {
		t.Fatalf("%d fields, Fluss %d", len(got.Fields()), len(want.Fields()))
	}
	for i := range want.Fields() {
		g, w := got.Field(i), want.Field(i)
		if !g.Equal(w) {
			t.Errorf("column %s:\n got  %v\n want %v", w.Name, g, w)
		}
	}
}
