package fluss

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// Admin calls go to the coordinator. Failures carry the server's *Error,
// e.g. CodeDatabaseNotExist or CodeTableNotExist.

// ListDatabases returns the names of all databases.
func (c *Client) ListDatabases(ctx context.Context) (_ []string, err error) {
	ctx, end := c.startSpan(ctx, "ListDatabases")
	defer end(&err)
	var resp flussrpc.ListDatabasesResponse
	if err := c.callCoordinator(ctx, APIListDatabases, true, &flussrpc.ListDatabasesRequest{}, &resp); err != nil {
		return nil, err
	}
	return resp.GetDatabaseName(), nil
}

// DatabaseExists reports whether a database exists.
func (c *Client) DatabaseExists(ctx context.Context, name string) (_ bool, err error) {
	ctx, end := c.startSpan(ctx, "DatabaseExists", attribute.String("fluss.database", name))
	defer end(&err)
	var resp flussrpc.DatabaseExistsResponse
	req := &flussrpc.DatabaseExistsRequest{DatabaseName: proto.String(name)}
	if err := c.callCoordinator(ctx, APIDatabaseExists, true, req, &resp); err != nil {
		return false, err
	}
	return resp.GetExists(), nil
}

// GetDatabaseInfo returns a database's descriptor and timestamps.
func (c *Client) GetDatabaseInfo(ctx context.Context, name string) (_ *DatabaseInfo, err error) {
	ctx, end := c.startSpan(ctx, "GetDatabaseInfo", attribute.String("fluss.database", name))
	defer end(&err)
	var resp flussrpc.GetDatabaseInfoResponse
	req := &flussrpc.GetDatabaseInfoRequest{DatabaseName: proto.String(name)}
	if err := c.callCoordinator(ctx, APIGetDatabaseInfo, true, req, &resp); err != nil {
		return nil, err
	}
	d, err := parseDatabaseJSON(resp.GetDatabaseJson())
	if err != nil {
		return nil, fmt.Errorf("fluss: database %s: %w", name, err)
	}
	return &DatabaseInfo{
		Name:               name,
		CreatedTime:        time.UnixMilli(resp.GetCreatedTime()),
		ModifiedTime:       time.UnixMilli(resp.GetModifiedTime()),
		DatabaseDescriptor: d,
	}, nil
}

// CreateDatabase creates a database. With ignoreIfExists, an existing
// database is not an error.
func (c *Client) CreateDatabase(ctx context.Context, name string, d DatabaseDescriptor, ignoreIfExists bool) (err error) {
	ctx, end := c.startSpan(ctx, "CreateDatabase", attribute.String("fluss.database", name))
	defer end(&err)
	js, err := d.MarshalJSON()
	if err != nil {
		return err
	}
	req := &flussrpc.CreateDatabaseRequest{
		DatabaseName:   proto.String(name),
		IgnoreIfExists: proto.Bool(ignoreIfExists),
		DatabaseJson:   js,
	}
	return c.callCoordinator(ctx, APICreateDatabase, false, req, &flussrpc.CreateDatabaseResponse{})
}

// DropDatabase drops a database; with cascade, its tables too. Ferry never
// drops user data: this is for tests and tools.
func (c *Client) DropDatabase(ctx context.Context, name string, ignoreIfNotExists, cascade bool) (err error) {
	ctx, end := c.startSpan(ctx, "DropDatabase", attribute.String("fluss.database", name))
	defer end(&err)
	req := &flussrpc.DropDatabaseRequest{
		DatabaseName:      proto.String(name),
		IgnoreIfNotExists: proto.Bool(ignoreIfNotExists),
		Cascade:           proto.Bool(cascade),
	}
	return c.callCoordinator(ctx, APIDropDatabase, false, req, &flussrpc.DropDatabaseResponse{})
}

// ListTables returns the names of the tables in a database.
func (c *Client) ListTables(ctx context.Context, database string) (_ []string, err error) {
	ctx, end := c.startSpan(ctx, "ListTables", attribute.String("fluss.database", database))
	defer end(&err)
	var resp flussrpc.ListTablesResponse
	req := &flussrpc.ListTablesRequest{DatabaseName: proto.String(database)}
	if err := c.callCoordinator(ctx, APIListTables, true, req, &resp); err != nil {
		return nil, err
	}
	return resp.GetTableName(), nil
}

// TableExists reports whether a table exists.
func (c *Client) TableExists(ctx context.Context, path TablePath) (_ bool, err error) {
	ctx, end := c.startSpan(ctx, "TableExists", attribute.String("fluss.table", path.String()))
	defer end(&err)
	var resp flussrpc.TableExistsResponse
	if err := c.callCoordinator(ctx, APITableExists, true, &flussrpc.TableExistsRequest{TablePath: path.pb()}, &resp); err != nil {
		return false, err
	}
	return resp.GetExists(), nil
}

// GetTableInfo returns a table's id, schema and options. It also makes the
// table id known to the client, so that ProduceLog and BucketLeader accept it.
func (c *Client) GetTableInfo(ctx context.Context, path TablePath) (_ *TableInfo, err error) {
	ctx, end := c.startSpan(ctx, "GetTableInfo", attribute.String("fluss.table", path.String()))
	defer end(&err)
	var resp flussrpc.GetTableInfoResponse
	if err := c.callCoordinator(ctx, APIGetTableInfo, true, &flussrpc.GetTableInfoRequest{TablePath: path.pb()}, &resp); err != nil {
		return nil, err
	}
	d, err := ParseTableDescriptorJSON(resp.GetTableJson())
	if err != nil {
		c.opts.logger.Warn("fluss: undecodable table descriptor", "table", path.String(), "err", err)
		return nil, fmt.Errorf("fluss: table %s: %w", path, err)
	}
	c.meta.rememberTableID(resp.GetTableId(), path)
	return &TableInfo{
		TablePath:       path,
		TableID:         resp.GetTableId(),
		SchemaID:        resp.GetSchemaId(),
		CreatedTime:     time.UnixMilli(resp.GetCreatedTime()),
		ModifiedTime:    time.UnixMilli(resp.GetModifiedTime()),
		TableDescriptor: d,
	}, nil
}

// GetTableSchema returns a table's schema: the latest when schemaID is
// negative, else that version.
func (c *Client) GetTableSchema(ctx context.Context, path TablePath, schemaID int32) (_ types.Schema, _ int32, err error) {
	ctx, end := c.startSpan(ctx, "GetTableSchema", attribute.String("fluss.table", path.String()))
	defer end(&err)
	req := &flussrpc.GetTableSchemaRequest{TablePath: path.pb()}
	if schemaID >= 0 {
		req.SchemaId = proto.Int32(schemaID)
	}
	var resp flussrpc.GetTableSchemaResponse
	if err := c.callCoordinator(ctx, APIGetTableSchema, true, req, &resp); err != nil {
		return types.Schema{}, 0, err
	}
	s, err := types.ParseSchemaJSON(resp.GetSchemaJson())
	if err != nil {
		c.opts.logger.Warn("fluss: undecodable schema", "table", path.String(), "err", err)
		return types.Schema{}, 0, fmt.Errorf("fluss: table %s: %w", path, err)
	}
	return s, resp.GetSchemaId(), nil
}

// CreateTable creates a table. With ignoreIfExists, an existing table is not
// an error. Ferry never creates topics itself: this is for tests and tools.
func (c *Client) CreateTable(ctx context.Context, path TablePath, d TableDescriptor, ignoreIfExists bool) (err error) {
	ctx, end := c.startSpan(ctx, "CreateTable", attribute.String("fluss.table", path.String()))
	defer end(&err)
	js, err := d.MarshalJSON()
	if err != nil {
		return err
	}
	req := &flussrpc.CreateTableRequest{TablePath: path.pb(), TableJson: js, IgnoreIfExists: proto.Bool(ignoreIfExists)}
	return c.callCoordinator(ctx, APICreateTable, false, req, &flussrpc.CreateTableResponse{})
}

// PropertyChange is one change of a table property for AlterTable: Value is
// set, or the property removed when Reset.
type PropertyChange struct {
	Key, Value string
	Reset      bool
}

// Fluss's AlterConfigOpType values for a property change.
const (
	alterOpSet    int32 = 0
	alterOpDelete int32 = 1
)

// AlterTable changes table properties in place. Fluss 0.9.1 accepts custom
// properties and a few table options (table.datalake.*,
// table.log.tiered.local-segments); others fail with
// INVALID_ALTER_TABLE_EXCEPTION. Ferry never alters tables itself: this is
// for tests and tools.
func (c *Client) AlterTable(ctx context.Context, path TablePath, changes []PropertyChange, ignoreIfNotExists bool) (err error) {
	ctx, end := c.startSpan(ctx, "AlterTable", attribute.String("fluss.table", path.String()))
	defer end(&err)
	req := &flussrpc.AlterTableRequest{TablePath: path.pb(), IgnoreIfNotExists: proto.Bool(ignoreIfNotExists)}
	for _, ch := range changes {
		ac := &flussrpc.AlterConfig{ConfigKey: proto.String(ch.Key), OpType: proto.Int32(alterOpSet)}
		if ch.Reset {
			ac.OpType = proto.Int32(alterOpDelete)
		} else {
			ac.ConfigValue = proto.String(ch.Value)
		}
		req.ConfigChanges = append(req.ConfigChanges, ac)
	}
	return c.callCoordinator(ctx, APIAlterTable, false, req, &flussrpc.AlterTableResponse{})
}

// DropTable drops a table. For tests and tools.
func (c *Client) DropTable(ctx context.Context, path TablePath, ignoreIfNotExists bool) (err error) {
	ctx, end := c.startSpan(ctx, "DropTable", attribute.String("fluss.table", path.String()))
	defer end(&err)
	req := &flussrpc.DropTableRequest{TablePath: path.pb(), IgnoreIfNotExists: proto.Bool(ignoreIfNotExists)}
	if err := c.callCoordinator(ctx, APIDropTable, false, req, &flussrpc.DropTableResponse{}); err != nil {
		return err
	}
	c.meta.mu.Lock()
	if r := c.meta.tables[path]; r != nil {
		delete(c.meta.tables, path)
	}
	c.meta.mu.Unlock()
	return nil
}
