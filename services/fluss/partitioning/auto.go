package partitioning

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zone names must resolve the same on every host, as Java's bundled tz data does
)

// Table options of auto-partitioned tables (Fluss's ConfigOptions).
const (
	PropAutoPartitionEnabled      = "table.auto-partition.enabled"
	PropAutoPartitionKey          = "table.auto-partition.key"
	PropAutoPartitionTimeUnit     = "table.auto-partition.time-unit"
	PropAutoPartitionTimeZone     = "table.auto-partition.time-zone"
	PropAutoPartitionNumPreCreate = "table.auto-partition.num-precreate"
	PropAutoPartitionNumRetention = "table.auto-partition.num-retention"
)

// TimeUnit is the granularity of an auto-partitioned table's partitions
// (AutoPartitionTimeUnit).
type TimeUnit string

// Time units and the partition value format of each.
const (
	Year    TimeUnit = "YEAR"    // yyyy
	Quarter TimeUnit = "QUARTER" // yyyyQ, Q in 1..4
	Month   TimeUnit = "MONTH"   // yyyyMM
	Day     TimeUnit = "DAY"     // yyyyMMdd
	Hour    TimeUnit = "HOUR"    // yyyyMMddHH
)

// Defaults Fluss applies when a table does not set the option.
const (
	DefaultTimeUnit     = Day
	DefaultNumPreCreate = 2
	DefaultNumRetention = 7
)

// AutoPartition is a table's auto-partitioning strategy
// (AutoPartitionStrategy) with the defaults Fluss applies.
type AutoPartition struct {
	Enabled bool
	// Key is the partition key holding the time value: the only partition
	// key, or table.auto-partition.key when there are several.
	Key string
	// KeyIndex is Key's position among the partition keys, NumKeys their count.
	KeyIndex, NumKeys int
	TimeUnit          TimeUnit
	// NumPreCreate partitions, from the current one on, are created by the
	// coordinator ahead of time (0 for tables with several partition keys).
	NumPreCreate int
	// NumRetention is how many partitions before the current one survive;
	// negative keeps every partition.
	NumRetention int
	// Location is the zone partition times are formatted in. ZoneSet is
	// false when the table does not name one: the coordinator then uses its
	// JVM's default zone, which a client cannot see, and Location is UTC,
	// an assumption callers may override (create tables with the option set).
	Location *time.Location
	ZoneSet  bool
}

// ParseAutoPartition reads the auto-partition options of a table with these
// partition keys, rejecting values Fluss's configuration parser would not
// read.
func ParseAutoPartition(props map[string]string, partitionKeys []string) (AutoPartition, error) {
	a := AutoPartition{TimeUnit: DefaultTimeUnit, NumPreCreate: DefaultNumPreCreate, NumRetention: DefaultNumRetention, Location: time.UTC, NumKeys: len(partitionKeys)}
	if v, ok := props[PropAutoPartitionEnabled]; ok {
		b, err := parseJavaBool(v)
		if err != nil {
			return a, fmt.Errorf("%s: %w", PropAutoPartitionEnabled, err)
		}
		a.Enabled = b
	}
	if v, ok := props[PropAutoPartitionTimeUnit]; ok {
		u := TimeUnit(strings.ToUpper(strings.TrimSpace(v)))
		switch u {
		case Year, Quarter, Month, Day, Hour:
			a.TimeUnit = u
		default:
			return a, fmt.Errorf("%s=%q is not one of YEAR, QUARTER, MONTH, DAY, HOUR", PropAutoPartitionTimeUnit, v)
		}
	}
	for prop, dst := range map[string]*int{PropAutoPartitionNumPreCreate: &a.NumPreCreate, PropAutoPartitionNumRetention: &a.NumRetention} {
		if v, ok := props[prop]; ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return a, fmt.Errorf("%s=%q is not an integer", prop, v)
			}
			*dst = int(n)
		}
	}
	if v, ok := props[PropAutoPartitionTimeZone]; ok {
		a.Location, a.ZoneSet = javaTimeZone(v), true
	}
	switch {
	case len(partitionKeys) == 1:
		a.Key = partitionKeys[0]
	case props[PropAutoPartitionKey] != "":
		a.Key = props[PropAutoPartitionKey]
		a.KeyIndex = slices.Index(partitionKeys, a.Key)
	}
	if a.Enabled && (a.Key == "" || a.KeyIndex < 0) {
		return a, fmt.Errorf("%s=%q does not name one of the partition keys %v", PropAutoPartitionKey, props[PropAutoPartitionKey], partitionKeys)
	}
	return a, nil
}

// parseJavaBool reads a boolean as Fluss's Configuration does: "true" or
// "false" in any case.
func parseJavaBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean", v)
}

// javaTimeZone resolves a zone id as java.util.TimeZone.getTimeZone does:
// region ids, "UTC"/"GMT", custom "GMT+h[h][[:]mm]" offsets, and GMT for
// anything it does not know.
func javaTimeZone(id string) *time.Location {
	if rest, ok := strings.CutPrefix(id, "GMT"); ok && rest != "" {
		if off, ok := parseGMTOffset(rest); ok {
			return time.FixedZone(id, off)
		}
		return time.UTC
	}
	if id == "" || strings.EqualFold(id, "local") {
		// Go's "" and "Local" mean the host zone; Java knows neither id.
		return time.UTC
	}
	loc, err := time.LoadLocation(id)
	if err != nil {
		return time.UTC
	}
	return loc
}

// parseGMTOffset reads the "+h", "+hh", "+hhmm" or "+hh:mm" after "GMT".
func parseGMTOffset(s string) (int, bool) {
	sign := 1
	switch s[0] {
	case '-':
		sign = -1
	case '+':
	default:
		return 0, false
	}
	s = s[1:]
	var h, m string
	switch {
	case len(s) == 1 || len(s) == 2:
		h = s
	case len(s) == 4:
		h, m = s[:2], s[2:]
	case len(s) == 5 && s[2] == ':':
		h, m = s[:2], s[3:]
	default:
		return 0, false
	}
	hh, err := strconv.Atoi(h)
	if err != nil || hh > 23 || h[0] == '+' || h[0] == '-' {
		return 0, false
	}
	mm := 0
	if m != "" {
		if mm, err = strconv.Atoi(m); err != nil || mm > 59 || m[0] == '+' || m[0] == '-' {
			return 0, false
		}
	}
	return sign * (hh*3600 + mm*60), true
}

// FormatTime formats t (already in the table's zone) as the partition value
// of its time unit (PartitionUtils' yyyy, yyyyQ, yyyyMM, yyyyMMdd, yyyyMMddHH).
func (u TimeUnit) FormatTime(t time.Time) string {
	b := appendYearOfEra(make([]byte, 0, 12), t.Year())
	switch u {
	case Quarter:
		b = strconv.AppendInt(b, int64(t.Month()-1)/3+1, 10)
	case Month:
		b = fmt.Appendf(b, "%02d", int(t.Month()))
	case Day:
		b = fmt.Appendf(b, "%02d%02d", int(t.Month()), t.Day())
	case Hour:
		b = fmt.Appendf(b, "%02d%02d%02d", int(t.Month()), t.Day(), t.Hour())
	}
	return string(b)
}

// PartitionTime is the partition value offset units away from now's unit in
// the table's zone (PartitionUtils.generateAutoPartitionTime): offset 0 is
// the current partition, 1 the next, -NumRetention the oldest one kept.
func (a AutoPartition) PartitionTime(now time.Time, offset int) string {
	t := now.In(a.Location)
	switch a.TimeUnit {
	case Hour:
		// Java's ZonedDateTime.plusHours moves along the instant time-line.
		t = t.Add(time.Duration(offset) * time.Hour)
	case Day:
		t = t.AddDate(0, 0, offset)
	default:
		// Year, quarter and month values depend only on the year and month;
		// moving the first of the month avoids Go's day overflow, where Java
		// clamps (Jan 31 plus one month is in February).
		months := offset
		switch a.TimeUnit {
		case Year:
			months = 12 * offset
		case Quarter:
			months = 3 * offset
		}
		t = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, a.Location).AddDate(0, months, 0)
	}
	return a.TimeUnit.FormatTime(t)
}

// Verdict is what becomes of a partition name a writer would create.
type Verdict int

const (
	// Live: the coordinator creates the partition and keeps it (for now).
	Live Verdict = iota
	// Invalid: CreatePartition fails with PARTITION_SPEC_INVALID_EXCEPTION.
	Invalid
	// Malformed: the time value is not in the time unit's format. The
	// coordinator creates such a partition all the same (it checks only the
	// characters), but auto-partitioning never would, and retention drops
	// it or keeps it forever by comparing strings.
	Malformed
	// Expired: older than the retention allows. The coordinator creates it
	// and its auto-partition check drops it again, with whatever was written.
	Expired
)

var verdictNames = [...]string{Live: "live", Invalid: "invalid", Malformed: "malformed", Expired: "expired"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Check tells what the cluster does with a partition of this name created
// at now, and why when it is not Live. For tables without auto-partitioning
// every valid name is Live.
func (a AutoPartition) Check(name string, now time.Time) (Verdict, error) {
	if err := ValidateName(name, a.NumKeys, true); err != nil {
		return Invalid, err
	}
	if !a.Enabled {
		return Live, nil
	}
	v := Values(name)[a.KeyIndex]
	if !a.TimeUnit.validValue(v) {
		return Malformed, fmt.Errorf("partition value %q of %s is not a %s value (%s)", v, a.Key, a.TimeUnit, a.TimeUnit.layout())
	}
	if a.NumRetention >= 0 {
		// The coordinator's retention compares names as strings.
		if oldest := a.PartitionTime(now, -a.NumRetention); v < oldest {
			return Expired, fmt.Errorf("partition %q of %s is older than the %d retained %s partitions (oldest kept: %s)", v, a.Key, a.NumRetention, a.TimeUnit, oldest)
		}
	}
	return Live, nil
}

func (u TimeUnit) layout() string {
	switch u {
	case Year:
		return "yyyy"
	case Quarter:
		return "yyyyQ"
	case Month:
		return "yyyyMM"
	case Day:
		return "yyyyMMdd"
	default:
		return "yyyyMMddHH"
	}
}

// validValue reports whether v is a value FormatTime can produce for some
// time: the layout's length, digits only, a real quarter, month, day, hour.
func (u TimeUnit) validValue(v string) bool {
	if len(v) != len(u.layout()) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	num := func(from, to int) int { n, _ := strconv.Atoi(v[from:to]); return n }
	year := num(0, 4)
	if year == 0 {
		return false
	}
	switch u {
	case Quarter:
		return v[4] >= '1' && v[4] <= '4'
	case Month, Day, Hour:
		month := num(4, 6)
		if month < 1 || month > 12 {
			return false
		}
		if u == Month {
			return true
		}
		day := num(6, 8)
		if day < 1 || day > time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day() {
			return false
		}
		return u == Day || num(8, 10) <= 23
	}
	return true
}
