package registry

import (
	"errors"
	"fmt"
)

// Confluent Schema Registry error codes; the HTTP status is the code's
// first three digits (409 stands alone).
const (
	CodeUnauthorized          = 40101
	CodeSubjectNotFound       = 40401
	CodeVersionNotFound       = 40402
	CodeSchemaNotFound        = 40403
	CodeSubjectSoftDeleted    = 40404
	CodeSubjectNotSoftDeleted = 40405
	CodeVersionSoftDeleted    = 40406
	CodeVersionNotSoftDeleted = 40407
	CodeSubjectConfigNotFound = 40408
	CodeIncompatible          = 409
	CodeInvalidSchema         = 42201
	CodeInvalidVersion        = 42202
	CodeInvalidCompatibility  = 42203
	CodeReferenceExists       = 42206
	CodeStore                 = 50001
)

// Error is a refusal with its Confluent error code.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

// HTTPStatus is the status a Confluent registry answers the code with.
func (e *Error) HTTPStatus() int {
	if e.Code < 1000 {
		return e.Code
	}
	return e.Code / 100
}

func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as an *Error, a store failure (50001) when it is
// none.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeStore, Message: "Error in the backend data store: " + err.Error()}
}

func subjectNotFound(subject string) *Error {
	return errorf(CodeSubjectNotFound, "Subject '%s' not found.", subject)
}

func versionNotFound(v int32) *Error {
	return errorf(CodeVersionNotFound, "Version %d not found.", v)
}

func schemaNotFound() *Error { return errorf(CodeSchemaNotFound, "Schema not found") }
