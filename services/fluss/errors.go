package fluss

import (
	"errors"
	"fmt"
)

// ErrorCode is a Fluss protocol error code (Errors.java).
type ErrorCode int32

// String returns the upstream name, e.g. "TABLE_NOT_EXIST".
func (c ErrorCode) String() string {
	if i, ok := codeInfo[c]; ok {
		return i.name
	}
	return fmt.Sprintf("ErrorCode(%d)", int32(c))
}

// Error is an error a Fluss server returned: in an ERROR_RESPONSE or
// SERVER_FAILURE frame, or per bucket inside a response.
type Error struct {
	Code    ErrorCode
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("fluss: %s (%d)", e.Code, int32(e.Code))
	}
	return fmt.Sprintf("fluss: %s (%d): %s", e.Code, int32(e.Code), e.Message)
}

// Is makes errors.Is(err, &fluss.Error{Code: c}) match any error with code c,
// whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Retriable reports whether Fluss classifies the error as transient (its
// exception extends RetriableException): the same request may succeed later.
func (e *Error) Retriable() bool { return codeInfo[e.Code].retriable }

// StaleMetadata reports whether the error means the client's view of the
// cluster is out of date (Fluss's InvalidMetadataException: not the leader,
// unknown table or bucket, no leader, network): refresh metadata first.
func (e *Error) StaleMetadata() bool { return codeInfo[e.Code].metadata }

// newError returns nil for CodeNone, so per-bucket results map cleanly.
func newError(code int32, msg string) error {
	if code == int32(CodeNone) {
		return nil
	}
	return &Error{Code: ErrorCode(code), Message: msg}
}

// CodeOf returns the Fluss error code in err's chain, CodeNone for nil, and
// CodeUnknownServerError for errors that carry no Fluss code.
func CodeOf(err error) ErrorCode {
	if err == nil {
		return CodeNone
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return CodeUnknownServerError
}

// IsAuthentication reports whether err is a Fluss server refusing a client's
// login (a wrong user or password, or no login on a SASL listener).
func IsAuthentication(err error) bool {
	c := CodeOf(err)
	return c == CodeAuthenticate || c == CodeRetriableAuthenticate
}

// IsRetriable reports whether err is worth retrying: a retriable Fluss error
// or a transport failure (unreachable server, broken connection). The
// caller's own deadline or cancellation is not retriable.
func IsRetriable(err error) bool {
	if errors.Is(err, ErrConnectionBroken) || errors.Is(err, ErrUnreachable) {
		return true
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Retriable()
	}
	return false
}

// Client-side errors. They carry no Fluss code.
var (
	// ErrClosed is returned by calls on a closed Client.
	ErrClosed = errors.New("fluss: client closed")
	// ErrConnectionBroken is returned for requests in flight when their
	// connection failed; whether the server acted on them is unknown.
	ErrConnectionBroken = errors.New("fluss: connection broken")
	// ErrUnreachable is returned when a server cannot be connected to.
	ErrUnreachable = errors.New("fluss: server unreachable")
	// ErrFrameTooLarge is returned when a frame exceeds the configured limit.
	ErrFrameTooLarge = errors.New("fluss: frame too large")
	// ErrProtocol is returned for bytes that are not valid Fluss protocol.
	ErrProtocol = errors.New("fluss: protocol violation")
	// ErrUnsupportedAPI is returned when the server does not support an API
	// version the client can speak.
	ErrUnsupportedAPI = errors.New("fluss: api not supported by server")
	// ErrUnknownTable is returned for a table id the client has not seen:
	// look the table up by path first (GetTableInfo or TableRoute).
	ErrUnknownTable = errors.New("fluss: table id not known to this client")
	// ErrInvalidRecords is a bucket result whose records the server
	// accepted but found no complete log batch in.
	ErrInvalidRecords = errors.New("fluss: records hold no log batch")
	// ErrNoLeader is returned when metadata names no live leader for a
	// bucket; the error also wraps a LEADER_NOT_AVAILABLE *Error, so that
	// CodeOf and IsRetriable classify it as Fluss does (retriable).
	ErrNoLeader = errors.New("fluss: bucket has no available leader")
	// ErrRemoteLog is a FetchLog result for data that was tiered to remote
	// storage, which FetchLog does not read.
	ErrRemoteLog = errors.New("fluss: log data is in remote storage")
)

// staleRoute reports whether err suggests the cached placement that routed
// the request is wrong: the server said so, the leader is gone or
// unreachable, or metadata named no leader.
func staleRoute(err error) bool {
	if err == nil {
		return false
	}
	var fe *Error
	if errors.As(err, &fe) && fe.StaleMetadata() {
		return true
	}
	return errors.Is(err, ErrConnectionBroken) || errors.Is(err, ErrUnreachable) || errors.Is(err, ErrNoLeader)
}
