package runtime

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Spec describes one setting: the flag name (without dash), the environment
// variable that can also set it, its default, a usage line and an optional
// validator that runs on the final value whatever its source.
type Spec[T any] struct {
	Flag     string
	Env      string
	Default  T
	Usage    string
	Validate func(T) error
}

// Settings is the registry every service declares its settings in. It maps
// each setting to a flag and an environment variable in one place, with the
// precedence flag > env > default, and reports a bad value as a *SettingError
// naming both spellings of the setting.
type Settings struct {
	service string
	fs      *flag.FlagSet
	byFlag  map[string]*entry
	entries []*entry
}

// entry is the untyped view of a declared setting.
type entry struct {
	flag, env, usage string
	value            flag.Value
	validate         func() error // validates the current value of the bound variable
	source           string       // "default", "env" or "flag" after Parse
}

// NewSettings returns an empty registry for the named service.
func NewSettings(service string) *Settings {
	fs := flag.NewFlagSet(service, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Parse reports errors itself, as one line.
	return &Settings{service: service, fs: fs, byFlag: map[string]*entry{}}
}

// typedValue adapts a parse function and a bound variable to flag.Value.
type typedValue[T any] struct {
	ptr *T
	// shared are further variables bound to the same setting by other
	// components of one process (see bind); they get every value ptr gets.
	shared []*T
	parse  func(string) (T, error)
	format func(T) string
}

func (v *typedValue[T]) String() string {
	if v == nil || v.ptr == nil {
		return ""
	}
	return v.format(*v.ptr)
}

func (v *typedValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.ptr = x
	for _, p := range v.shared {
		*p = x
	}
	return nil
}

// bind registers one typed setting; it panics on a programming error (empty
// name, or a name declared twice with another meaning) because those are
// found by the first run of any test.
//
// A setting declared again with the same environment variable, type and
// default is the same setting: several services in one process (the
// single-process mode) share one value, as -fluss-bootstrap is shared by
// catalogsvc, appendsvc and fetchsvc.
func bind[T any](s *Settings, ptr *T, spec Spec[T], parse func(string) (T, error), format func(T) string) {
	if spec.Flag == "" {
		panic("runtime: setting without a flag name")
	}
	if e, dup := s.byFlag[spec.Flag]; dup {
		v, sameType := e.value.(*typedValue[T])
		if !sameType || e.env != spec.Env || format(*v.ptr) != format(spec.Default) {
			panic("runtime: setting -" + spec.Flag + " declared twice with different meanings")
		}
		*ptr = spec.Default
		v.shared = append(v.shared, ptr)
		if spec.Validate != nil {
			first := e.validate
			e.validate = func() error {
				if first != nil {
					if err := first(); err != nil {
						return err
					}
				}
				return spec.Validate(*ptr)
			}
		}
		return
	}
	*ptr = spec.Default
	v := &typedValue[T]{ptr: ptr, parse: parse, format: format}
	e := &entry{flag: spec.Flag, env: spec.Env, usage: spec.Usage, value: v, source: "default"}
	if spec.Validate != nil {
		e.validate = func() error { return spec.Validate(*ptr) }
	}
	usage := spec.Usage
	if spec.Env != "" {
		usage += " (env " + spec.Env + ")"
	}
	s.fs.Var(v, spec.Flag, usage)
	s.byFlag[spec.Flag] = e
	s.entries = append(s.entries, e)
}

// StringVar declares a string setting bound to ptr.
func (s *Settings) StringVar(ptr *string, spec Spec[string]) {
	bind(s, ptr, spec, func(v string) (string, error) { return strings.TrimSpace(v), nil },
		func(v string) string { return v })
}

// DurationVar declares a time.Duration setting bound to ptr (Go syntax: 10s, 1m30s).
func (s *Settings) DurationVar(ptr *time.Duration, spec Spec[time.Duration]) {
	bind(s, ptr, spec, func(v string) (time.Duration, error) {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return 0, errors.New("not a duration (use e.g. 10s, 1m30s)")
		}
		return d, nil
	}, time.Duration.String)
}

// IntVar declares an int setting bound to ptr.
func (s *Settings) IntVar(ptr *int, spec Spec[int]) {
	bind(s, ptr, spec, func(v string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, errors.New("not an integer")
		}
		return n, nil
	}, strconv.Itoa)
}

// BoolVar declares a boolean setting bound to ptr. As a flag it may be given
// without a value (-x means -x=true).
func (s *Settings) BoolVar(ptr *bool, spec Spec[bool]) {
	bind(s, ptr, spec, func(v string) (bool, error) {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return false, errors.New("not a boolean (true or false)")
		}
		return b, nil
	}, strconv.FormatBool)
}

// IsBoolFlag lets the flag package accept "-x" for boolean settings.
func (v *typedValue[T]) IsBoolFlag() bool {
	_, ok := any(v.ptr).(*bool)
	return ok
}

// ErrHelp is returned by Parse when -h or -help was given; the usage text has
// already been written and the process should exit 0.
var ErrHelp = flag.ErrHelp

// Parse applies args (without the program name) and the environment, as
// looked up by lookupEnv (os.LookupEnv in production), then runs every
// setting's validator. The first bad setting is returned as a *SettingError;
// flag syntax errors (unknown flag, missing value) are returned as a
// *UsageError. On -h the usage is written to usage and ErrHelp returned.
func (s *Settings) Parse(args []string, lookupEnv func(string) (string, bool), usage io.Writer) error {
	if err := s.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			s.WriteUsage(usage)
			return ErrHelp
		}
		return s.flagError(err)
	}
	if s.fs.NArg() > 0 {
		return &UsageError{Msg: fmt.Sprintf("unexpected argument %q (settings are flags or environment variables)", s.fs.Arg(0))}
	}
	setByFlag := map[string]bool{}
	s.fs.Visit(func(f *flag.Flag) { setByFlag[f.Name] = true })
	for _, e := range s.entries {
		if setByFlag[e.flag] {
			e.source = "flag"
			continue
		}
		if e.env == "" || lookupEnv == nil {
			continue
		}
		raw, ok := lookupEnv(e.env)
		if !ok {
			continue
		}
		if err := e.value.Set(raw); err != nil {
			return &SettingError{Env: e.env, Flag: e.flag, Value: raw, Err: err}
		}
		e.source = "env"
	}
	for _, e := range s.entries {
		if e.validate == nil {
			continue
		}
		if err := e.validate(); err != nil {
			return &SettingError{Env: e.env, Flag: e.flag, Value: e.value.String(), Err: err}
		}
	}
	return nil
}

// flagError turns the flag package's message into a one-line error naming the
// setting; an invalid flag value becomes a *SettingError like a bad env value.
func (s *Settings) flagError(err error) error {
	msg := err.Error()
	// The flag package formats a bad value as: invalid value "v" for flag -name: reason
	const prefix = "invalid value "
	if strings.HasPrefix(msg, prefix) {
		rest := msg[len(prefix):]
		if q, err2 := strconv.QuotedPrefix(rest); err2 == nil {
			val, _ := strconv.Unquote(q)
			rest = strings.TrimPrefix(rest[len(q):], " for flag -")
			if name, reason, ok := strings.Cut(rest, ": "); ok {
				if e := s.byFlag[name]; e != nil {
					return &SettingError{Env: e.env, Flag: e.flag, Value: val, Err: errors.New(reason)}
				}
			}
		}
	}
	return &UsageError{Msg: msg}
}

// Source reports where the named flag's value came from after Parse:
// "flag", "env" or "default". It returns "" for an unknown name.
func (s *Settings) Source(flagName string) string {
	if e := s.byFlag[flagName]; e != nil {
		return e.source
	}
	return ""
}

// WriteUsage writes one line per setting: flag, env, default and usage.
func (s *Settings) WriteUsage(w io.Writer) {
	if w == nil {
		return
	}
	entries := append([]*entry(nil), s.entries...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].flag < entries[j].flag })
	fmt.Fprintf(w, "Usage of %s (flags override environment variables, which override defaults):\n", s.service)
	for _, e := range entries {
		def := s.fs.Lookup(e.flag).DefValue
		env := e.env
		if env == "" {
			env = "-"
		}
		fmt.Fprintf(w, "  -%s / %s (default %q)\n      %s\n", e.flag, env, def, e.usage)
	}
}

// SettingError reports a setting whose value is invalid or unusable. It
// always names the environment variable and the flag so an operator can fix
// whichever they used. Main maps it to exit code 2.
type SettingError struct {
	Env   string // environment variable name, may be empty
	Flag  string // flag name without the dash, may be empty
	Value string // the offending value as given
	// Action, when set, replaces the "invalid setting" wording for errors
	// found while using a well-formed value, e.g. "cannot listen on".
	Action string
	Err    error
}

func (e *SettingError) name() string {
	switch {
	case e.Env != "" && e.Flag != "":
		return e.Env + " (-" + e.Flag + ")"
	case e.Env != "":
		return e.Env
	default:
		return "-" + e.Flag
	}
}

func (e *SettingError) Error() string {
	if e.Action != "" {
		name := e.Env
		if name == "" {
			name = "-" + e.Flag
		}
		return fmt.Sprintf("%s %s %s: %v", e.Action, name, e.Value, e.Err)
	}
	return fmt.Sprintf("invalid setting %s: %q: %v", e.name(), e.Value, e.Err)
}

func (e *SettingError) Unwrap() error { return e.Err }

// UsageError reports malformed command-line syntax (unknown flag, stray
// argument). Main maps it to exit code 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }
