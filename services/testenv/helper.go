package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Helper runs flusshelper commands (e2e/flusshelper) against one Fluss cluster. It is safe for
// concurrent use: every call is its own process.
type Helper struct {
	argv      []string
	bootstrap string
	// Conf is passed to every command as --conf KEY=VALUE (Fluss client options).
	Conf map[string]string
	// PerCall runs every command as its own flusshelper process instead of sending it to the
	// shared `flusshelper serve` JVM. NewHelper sets it when FERRY_TEST_FLUSS_HELPER_SERVE=0.
	PerCall bool
}

// EnvHelperServe=0 makes NewHelper start one flusshelper process per command.
const EnvHelperServe = "FERRY_TEST_FLUSS_HELPER_SERVE"

// NewHelper returns a Helper running command (a path, optionally followed by arguments separated
// by spaces) against the coordinator at bootstrap.
func NewHelper(command, bootstrap string) (*Helper, error) {
	argv := strings.Fields(command)
	if len(argv) == 0 {
		return nil, errors.New("testenv: empty flusshelper command")
	}
	if bootstrap == "" {
		return nil, errors.New("testenv: empty Fluss bootstrap address")
	}
	return &Helper{argv: argv, bootstrap: bootstrap, PerCall: os.Getenv(EnvHelperServe) == "0"}, nil
}

// Bootstrap is the coordinator address the helper connects to.
func (h *Helper) Bootstrap() string { return h.bootstrap }

// HelperError is a failed flusshelper run: its one-line message and exit code.
type HelperError struct {
	Command  string
	ExitCode int
	Message  string
}

func (e *HelperError) Error() string {
	return fmt.Sprintf("flusshelper %s: exit %d: %s", e.Command, e.ExitCode, e.Message)
}

// run executes one command and returns its stdout.
func (h *Helper) run(ctx context.Context, stdin []byte, command string, args ...string) ([]byte, error) {
	full := append([]string{}, h.argv[1:]...)
	full = append(full, command, "--bootstrap", h.bootstrap)
	keys := make([]string, 0, len(h.Conf))
	for k := range h.Conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		full = append(full, "--conf", k+"="+h.Conf[k])
	}
	full = append(full, args...)
	if !h.PerCall {
		return h.runServe(ctx, stdin, command, full[len(h.argv)-1:])
	}
	cmd := exec.CommandContext(ctx, h.argv[0], full...)
	// The JVM must not outlive a cancelled test: WaitDelay bounds the wait for its pipes.
	cmd.WaitDelay = 5 * time.Second
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return stdout.Bytes(), &HelperError{Command: command, ExitCode: exit.ExitCode(), Message: lastErrorLine(stderr.String(), err)}
	}
	return stdout.Bytes(), fmt.Errorf("flusshelper %s: %w", command, err)
}

// runServe sends one command to the shared serve process.
func (h *Helper) runServe(ctx context.Context, stdin []byte, command string, args []string) ([]byte, error) {
	p, err := sharedServe(h.argv)
	if err != nil {
		return nil, err
	}
	r, err := p.call(ctx, args, stdin)
	if err != nil {
		return nil, fmt.Errorf("flusshelper %s: %w", command, err)
	}
	if r.Code != 0 {
		return []byte(r.Stdout), &HelperError{Command: command, ExitCode: r.Code, Message: r.Error}
	}
	return []byte(r.Stdout), nil
}

// lastErrorLine picks the helper's "flusshelper: ..." line out of stderr (which may also hold
// client log lines).
func lastErrorLine(stderr string, err error) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if msg, ok := strings.CutPrefix(lines[i], "flusshelper: "); ok {
			return msg
		}
	}
	if s := strings.TrimSpace(stderr); s != "" {
		return s
	}
	return err.Error()
}

// Server is one Fluss server as the coordinator reports it.
type Server struct {
	ID   int    `json:"id"`
	Host string `json:"host"`
	Port int    `json:"port"`
	Type string `json:"type"` // COORDINATOR or TABLET_SERVER
}

// Addr is host:port.
func (s Server) Addr() string { return s.Host + ":" + strconv.Itoa(s.Port) }

// WaitReady waits until the cluster has a live tablet server and answers metadata calls, and
// returns the servers it reports.
func (h *Helper) WaitReady(ctx context.Context, timeout time.Duration) ([]Server, error) {
	out, err := h.run(ctx, nil, "wait-ready", "--timeout", durationFlag(timeout))
	if err != nil {
		return nil, err
	}
	var r struct {
		Servers []Server `json:"servers"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("flusshelper wait-ready: bad output %q: %w", out, err)
	}
	return r.Servers, nil
}

// CreateDatabase creates a database; ifNotExists makes an existing one fine.
func (h *Helper) CreateDatabase(ctx context.Context, name string, ifNotExists bool) error {
	args := []string{"--database", name}
	if ifNotExists {
		args = append(args, "--if-not-exists")
	}
	_, err := h.run(ctx, nil, "create-database", args...)
	return err
}

// DropDatabase drops a database and, with cascade, its tables; a missing one is fine.
func (h *Helper) DropDatabase(ctx context.Context, name string, cascade bool) error {
	args := []string{"--database", name, "--if-exists"}
	if cascade {
		args = append(args, "--cascade")
	}
	_, err := h.run(ctx, nil, "drop-database", args...)
	return err
}

// CreateTable creates the table spec describes and returns what Fluss made of it.
func (h *Helper) CreateTable(ctx context.Context, spec TableSpec) (TableInfo, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return TableInfo{}, fmt.Errorf("testenv: encode table spec: %w", err)
	}
	out, err := h.run(ctx, b, "create-table", "--spec", "-")
	if err != nil {
		return TableInfo{}, err
	}
	return decodeTableInfo(out)
}

// DropTable drops a table; a missing one is fine.
func (h *Helper) DropTable(ctx context.Context, database, table string) error {
	_, err := h.run(ctx, nil, "drop-table", "--database", database, "--table", table, "--if-exists")
	return err
}

// ListTables lists a database's tables, sorted.
func (h *Helper) ListTables(ctx context.Context, database string) ([]string, error) {
	out, err := h.run(ctx, nil, "list-tables", "--database", database)
	if err != nil {
		return nil, err
	}
	var tables []string
	if err := json.Unmarshal(out, &tables); err != nil {
		return nil, fmt.Errorf("flusshelper list-tables: bad output %q: %w", out, err)
	}
	return tables, nil
}

// TableInfo describes an existing table.
func (h *Helper) TableInfo(ctx context.Context, database, table string) (TableInfo, error) {
	out, err := h.run(ctx, nil, "table-info", "--database", database, "--table", table)
	if err != nil {
		return TableInfo{}, err
	}
	return decodeTableInfo(out)
}

func decodeTableInfo(out []byte) (TableInfo, error) {
	var info TableInfo
	if err := json.Unmarshal(out, &info); err != nil {
		return TableInfo{}, fmt.Errorf("flusshelper: bad table info %q: %w", out, err)
	}
	return info, nil
}

// ScanOptions bounds a Scan.
type ScanOptions struct {
	// Expect, when > 0, reads until that many rows arrived (rows may still be in flight);
	// otherwise the scan ends at the end offsets the table had when the scan began.
	Expect int
	// Timeout fails the scan when it has not finished in time (default 30s).
	Timeout time.Duration
}

// Scan reads a log table, or a primary-key table's changelog, from the start of every bucket
// (and partition). On failure (e.g. fewer rows than expected) it returns the rows it did read
// together with the error.
func (h *Helper) Scan(ctx context.Context, database, table string, opts ScanOptions) ([]ScanRow, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	args := []string{"--database", database, "--table", table, "--timeout", durationFlag(timeout)}
	if opts.Expect > 0 {
		args = append(args, "--expect", strconv.Itoa(opts.Expect))
	}
	out, runErr := h.run(ctx, nil, "scan", args...)
	rows, err := DecodeScan(out)
	if runErr != nil {
		return rows, runErr
	}
	return rows, err
}

// WriteOptions tunes a Write.
type WriteOptions struct {
	// Repeat writes the rows this many times (benchmarks); 0 means once.
	Repeat int
}

// WriteResult is flusshelper's summary of a write.
type WriteResult struct {
	Rows      int64   `json:"rows"`
	Deletes   int64   `json:"deletes"`
	ElapsedMS float64 `json:"elapsed_ms"`
}

// Delete is a row of Write that deletes a primary key: the map holds exactly the table's
// primary-key columns.
func Delete(key map[string]any) map[string]any { return map[string]any{DeleteField: key} }

// DeleteField is the one field of a delete row (flusshelper's DELETE_FIELD).
const DeleteField = "$delete"

// Write writes rows (column name -> value in the helper's JSON form, see Row) with the
// official Java writers and waits until every row is acknowledged: appended to a log table
// (AppendWriter), upserted to a primary-key table (UpsertWriter), where a Delete row deletes
// its key.
func (h *Helper) Write(ctx context.Context, database, table string, rows []map[string]any, opts WriteOptions) (WriteResult, error) {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for i, r := range rows {
		if err := enc.Encode(r); err != nil {
			return WriteResult{}, fmt.Errorf("testenv: encode row %d: %w", i, err)
		}
	}
	args := []string{"--database", database, "--table", table, "--input", "-"}
	if opts.Repeat > 1 {
		args = append(args, "--repeat", strconv.Itoa(opts.Repeat))
	}
	out, err := h.run(ctx, in.Bytes(), "write", args...)
	if err != nil {
		return WriteResult{}, err
	}
	var res WriteResult
	if err := json.Unmarshal(out, &res); err != nil {
		return WriteResult{}, fmt.Errorf("flusshelper write: bad output %q: %w", out, err)
	}
	return res, nil
}

// LookupRow is the answer to one key of Lookup.
type LookupRow struct {
	Key   map[string]any `json:"key"`
	Found bool           `json:"found"`
	Row   map[string]any `json:"row"`
}

// Lookup looks up primary keys (each map holds exactly the table's primary-key columns) with
// the official Java Lookuper and answers in the order of keys.
func (h *Helper) Lookup(ctx context.Context, database, table string, keys []map[string]any) ([]LookupRow, error) {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for i, k := range keys {
		if err := enc.Encode(k); err != nil {
			return nil, fmt.Errorf("testenv: encode key %d: %w", i, err)
		}
	}
	out, err := h.run(ctx, in.Bytes(), "lookup", "--database", database, "--table", table, "--input", "-")
	if err != nil {
		return nil, err
	}
	rows := make([]LookupRow, 0, len(keys))
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	for dec.More() {
		var r LookupRow
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("flusshelper lookup: bad output: %w", err)
		}
		rows = append(rows, r)
	}
	if len(rows) != len(keys) {
		return nil, fmt.Errorf("flusshelper lookup: %d answers for %d keys", len(rows), len(keys))
	}
	return rows, nil
}

// durationFlag renders d for the helper (milliseconds, which it parses exactly).
func durationFlag(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}
