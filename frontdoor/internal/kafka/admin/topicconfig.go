package admin

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// configEntry is one config of a topic or of this broker, as DescribeConfigs
// shows it. Every entry is read-only: topics change through Fluss DDL,
// frontdoor through its configuration.
type configEntry struct {
	name, value string
	source      kmsg.ConfigSource
	typ         kmsg.ConfigType
	// from and fromValue are where the value comes from, a Fluss property
	// or a broker setting, shown as a synonym when the client asks for
	// synonyms; empty when nothing is set.
	from, fromValue string
	doc             string
}

// Fluss table properties the topic configs derive from, and their Fluss
// defaults (fluss ConfigOptions) for tables that do not set them.
const (
	flussLogTTL           = "table.log.ttl"
	flussLogTTLDefault    = 7 * 24 * time.Hour
	flussArrowCompression = "table.log.arrow.compression.type"
)

// topicConfigs derives a topic's Kafka configs from its Fluss table, then
// lists every Fluss option and custom property (kafka.* included) under its
// own name, sorted by name. maxMessageBytes is frontdoor's batch limit.
func topicConfigs(m *catalogv1.TopicMapping, maxMessageBytes int) []configEntry {
	props, custom := m.GetTableProperties(), m.GetCustomProperties()
	var out []configEntry

	policy := configEntry{name: "cleanup.policy", value: "delete", source: kmsg.ConfigSourceDynamicTopicConfig, typ: kmsg.ConfigTypeList,
		doc: "delete for a Fluss log table, compact for a primary-key table (its changelog keeps the latest row per key)"}
	if m.GetKind() == catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY {
		policy.value = "compact"
	}
	out = append(out, policy)

	retention := configEntry{name: "retention.ms", typ: kmsg.ConfigTypeLong, doc: "the Fluss table's " + flussLogTTL}
	if v, ok := props[flussLogTTL]; ok {
		retention.source, retention.from, retention.fromValue = kmsg.ConfigSourceDynamicTopicConfig, flussLogTTL, v
		if d, err := parseFlussDuration(v); err == nil {
			retention.value = strconv.FormatInt(d.Milliseconds(), 10)
		} else {
			// Fluss accepted it, so the value is worth showing as it is.
			retention.value = v
		}
	} else {
		retention.source, retention.value = kmsg.ConfigSourceDefaultConfig, strconv.FormatInt(flussLogTTLDefault.Milliseconds(), 10)
	}
	out = append(out, retention)

	comp := configEntry{name: "compression.type", typ: kmsg.ConfigTypeString, source: kmsg.ConfigSourceDefaultConfig,
		doc: "the codec of the Fluss table's Arrow log batches (" + flussArrowCompression + ")"}
	if v, ok := props[flussArrowCompression]; ok {
		comp.source, comp.from, comp.fromValue = kmsg.ConfigSourceDynamicTopicConfig, flussArrowCompression, v
	}
	switch m.GetArrowCompression() {
	case catalogv1.ArrowCompression_ARROW_COMPRESSION_NONE:
		comp.value = "uncompressed"
	case catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME:
		comp.value = "lz4"
	default:
		comp.value = "zstd"
	}
	out = append(out, comp)

	limit := strconv.Itoa(maxMessageBytes)
	out = append(out, configEntry{name: "max.message.bytes", value: limit, source: kmsg.ConfigSourceStaticBrokerConfig,
		typ: kmsg.ConfigTypeInt, from: "message.max.bytes", fromValue: limit, doc: "frontdoor's limit on one partition's record batch"})

	for _, set := range []map[string]string{props, custom} {
		for _, k := range slices.Sorted(maps.Keys(set)) {
			out = append(out, configEntry{name: k, value: set[k], source: kmsg.ConfigSourceDynamicTopicConfig, typ: kmsg.ConfigTypeString,
				doc: "a property of the Fluss table, under its Fluss name"})
		}
	}
	return out
}

// parseFlussDuration reads a Fluss duration option: a number and an
// optional unit, with or without a space ("7 days", "2h", "500 ms"); no
// unit means milliseconds.
func parseFlussDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	var unit time.Duration
	switch strings.ToLower(strings.TrimSpace(s[i:])) {
	case "ns", "nano", "nanos", "nanosecond", "nanoseconds":
		unit = time.Nanosecond
	case "µs", "micro", "micros", "microsecond", "microseconds":
		unit = time.Microsecond
	case "", "ms", "milli", "millis", "millisecond", "milliseconds":
		unit = time.Millisecond
	case "s", "sec", "secs", "second", "seconds":
		unit = time.Second
	case "m", "min", "mins", "minute", "minutes":
		unit = time.Minute
	case "h", "hour", "hours":
		unit = time.Hour
	case "d", "day", "days":
		unit = 24 * time.Hour
	default:
		return 0, fmt.Errorf("duration %q: unknown unit", s)
	}
	if n > int64(1<<63-1)/int64(unit) {
		return 0, fmt.Errorf("duration %q: too long", s)
	}
	return time.Duration(n) * unit, nil
}
