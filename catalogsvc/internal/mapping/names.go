package mapping

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// MaxTopicNameLength is Kafka's limit on topic names.
const MaxTopicNameLength = 249

// MaxFlussNameLength is Fluss's limit on database and table names
// (TablePath.MAX_NAME_LENGTH).
const MaxFlussNameLength = 200

// ValidateTopicName reports why Kafka would not accept name as a topic
// name: Kafka allows 1..249 characters of [a-zA-Z0-9._-], but not "." or
// "..". Names starting with "__" are Kafka's internal topics
// (__consumer_offsets, __transaction_state); clients treat them specially,
// so Ferry never exposes a table under such a name.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("topic name %q is %d characters long, Kafka allows at most %d", truncate(name), len(name), MaxTopicNameLength)
	case strings.HasPrefix(name, "__"):
		return fmt.Errorf("topic name %q starts with \"__\", which Kafka reserves for internal topics", name)
	}
	for i := 0; i < len(name); i++ {
		if !isTopicChar(name[i]) {
			return fmt.Errorf("topic name %q contains %q: Kafka allows only ASCII letters, digits, '.', '_' and '-'", name, rune(name[i]))
		}
	}
	return nil
}

// ValidateFlussName reports why Fluss would not accept name as a database
// or table name (TablePath.detectInvalidName and validatePrefix).
func ValidateFlussName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("name is empty")
	case len(name) > MaxFlussNameLength:
		return fmt.Errorf("name %q is longer than %d characters", truncate(name), MaxFlussNameLength)
	case strings.HasPrefix(name, "__"):
		return fmt.Errorf("name %q starts with the reserved prefix \"__\"", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isTopicChar(c) || c == '.' {
			return fmt.Errorf("name %q contains %q: Fluss allows only ASCII letters, digits, '_' and '-'", name, rune(c))
		}
	}
	return nil
}

func isTopicChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// DefaultTopicName is the topic name of a table without a kafka.topic
// property: "database.table". Fluss names cannot contain '.', so the one dot
// splits the name back unambiguously (see SplitDefaultTopicName).
func DefaultTopicName(database, table string) string {
	return database + "." + table
}

// SplitDefaultTopicName returns the database and table a default topic name
// stands for, and false when name is not of the form "database.table" with
// two valid Fluss names. A topic named by a kafka.topic property is found
// only through the catalog, never by splitting.
func SplitDefaultTopicName(name string) (database, table string, ok bool) {
	db, tbl, found := strings.Cut(name, ".")
	if !found || ValidateFlussName(db) != nil || ValidateFlussName(tbl) != nil {
		return "", "", false
	}
	return db, tbl, true
}

func truncate(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:37] + "..."
}

// idNamespace scopes Ferry's name-based UUIDs, so that the same input
// hashed by some other system never yields a Ferry topic or cluster id.
var idNamespace = uuid.MustParse("87c7f24d-7517-4ee3-8f89-8a91731fe3d2")

// TopicID is the Kafka topic id of the table with tableID in the cluster
// clusterID: a name-based (version 5, SHA-1) UUID of both. Fluss allocates
// table ids from a cluster-wide sequence and never reuses them, so the id is
// the same for the table's whole life, across restarts of any service, and a
// table dropped and created again under the same name gets a new id, which
// tells Kafka clients it is a different topic. A version-5 UUID is never the
// all-zero id or Kafka's reserved metadata topic id.
func TopicID(clusterID string, tableID int64) uuid.UUID {
	return uuid.NewSHA1(idNamespace, []byte("topic/"+clusterID+"/"+strconv.FormatInt(tableID, 10)))
}

// DeriveClusterID is the default Kafka cluster id: a stable function of the
// Fluss bootstrap addresses (order and duplicates ignored), encoded like
// Kafka's own cluster ids (URL-safe base64 of 16 bytes, 22 characters).
// Fluss has no cluster id of its own on the wire, so the addresses are the
// one stable thing every catalog instance shares; deployments that reach
// one Fluss cluster under different spellings must set the id explicitly.
func DeriveClusterID(bootstrap []string) string {
	addrs := slices.Clone(bootstrap)
	for i, a := range addrs {
		addrs[i] = strings.ToLower(strings.TrimSpace(a))
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	id := uuid.NewSHA1(idNamespace, []byte("cluster/"+strings.Join(addrs, ",")))
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// ValidateClusterID checks an operator-chosen cluster id: Kafka clients
// accept any string, but ids end up in logs, metrics labels and client
// caches, so Ferry keeps them to 1..64 characters of [A-Za-z0-9._-].
func ValidateClusterID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("must be 1..64 characters long")
	}
	for i := 0; i < len(id); i++ {
		if !isTopicChar(id[i]) {
			return fmt.Errorf("contains %q: only ASCII letters, digits, '.', '_' and '-' are allowed", rune(id[i]))
		}
	}
	return nil
}
