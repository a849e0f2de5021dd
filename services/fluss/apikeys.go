package fluss

import "fmt"

// APIKey identifies a Fluss RPC (ApiKeys.java). Keys below 1000 are reserved
// for Kafka compatibility upstream.
type APIKey int16

// The APIs Ferry speaks.
const (
	APIVersions        APIKey = 1000
	APICreateDatabase  APIKey = 1001
	APIDropDatabase    APIKey = 1002
	APIListDatabases   APIKey = 1003
	APIDatabaseExists  APIKey = 1004
	APICreateTable     APIKey = 1005
	APIDropTable       APIKey = 1006
	APIGetTableInfo    APIKey = 1007
	APIListTables      APIKey = 1008
	APIListPartitions  APIKey = 1009
	APITableExists     APIKey = 1010
	APIGetTableSchema  APIKey = 1011
	APIGetMetadata     APIKey = 1012
	APIProduceLog      APIKey = 1014
	APIFetchLog        APIKey = 1015
	APIPutKv           APIKey = 1016
	APIListOffsets     APIKey = 1021
	APIInitWriter      APIKey = 1026
	APIGetDatabaseInfo APIKey = 1035
	APICreatePartition APIKey = 1036
	APIDropPartition   APIKey = 1037
	APIAuthenticate    APIKey = 1038
	APIAlterTable      APIKey = 1044
)

var apiNames = map[APIKey]string{
	APIVersions: "API_VERSIONS", APICreateDatabase: "CREATE_DATABASE", APIDropDatabase: "DROP_DATABASE",
	APIListDatabases: "LIST_DATABASES", APIDatabaseExists: "DATABASE_EXISTS", APICreateTable: "CREATE_TABLE",
	APIDropTable: "DROP_TABLE", APIGetTableInfo: "GET_TABLE_INFO", APIListTables: "LIST_TABLES",
	APITableExists: "TABLE_EXISTS", APIGetTableSchema: "GET_TABLE_SCHEMA", APIGetMetadata: "GET_METADATA",
	APIProduceLog: "PRODUCE_LOG", APIFetchLog: "FETCH_LOG", APIPutKv: "PUT_KV", APIListOffsets: "LIST_OFFSETS",
	APIInitWriter: "INIT_WRITER", APIGetDatabaseInfo: "GET_DATABASE_INFO",
	APIListPartitions: "LIST_PARTITION_INFOS", APICreatePartition: "CREATE_PARTITION", APIDropPartition: "DROP_PARTITION",
	APIAuthenticate: "AUTHENTICATE", APIAlterTable: "ALTER_TABLE",
}

func (k APIKey) String() string {
	if n, ok := apiNames[k]; ok {
		return n
	}
	return fmt.Sprintf("APIKey(%d)", int16(k))
}

// versionRange is an inclusive range of API versions.
type versionRange struct{ min, max int16 }

// clientVersions are the versions of each API this client can encode and
// decode. Every API Ferry uses but PUT_KV is at version 0 in Fluss 0.9.1; the
// negotiation still picks the highest common version so that a server with a
// newer range keeps working.
var clientVersions = map[APIKey]versionRange{
	APIVersions: {0, 0}, APICreateDatabase: {0, 0}, APIDropDatabase: {0, 0}, APIListDatabases: {0, 0},
	APIDatabaseExists: {0, 0}, APICreateTable: {0, 0}, APIDropTable: {0, 0}, APIGetTableInfo: {0, 0},
	APIListTables: {0, 0}, APITableExists: {0, 0}, APIGetTableSchema: {0, 0}, APIGetMetadata: {0, 0},
	APIProduceLog: {0, 0}, APIFetchLog: {0, 0}, APIListOffsets: {0, 0}, APIInitWriter: {0, 0},
	APIGetDatabaseInfo: {0, 0}, APIListPartitions: {0, 0}, APICreatePartition: {0, 0}, APIDropPartition: {0, 0},
	APIAuthenticate: {0, 0}, APIAlterTable: {0, 0},
	// PUT_KV v1 only changes the key encoding of lake tables whose bucket
	// key differs from the primary key (CompactedKeyEncoder instead of the
	// lake's); for every other table v0 and v1 carry the same bytes.
	APIPutKv: {0, 1},
}

// negotiate picks, per API, the highest version both sides support. APIs the
// server does not list, or whose ranges do not overlap, are left out: calls
// to them fail with ErrUnsupportedAPI before anything is sent.
func negotiate(client, server map[APIKey]versionRange) map[APIKey]int16 {
	out := make(map[APIKey]int16, len(client))
	for k, c := range client {
		s, ok := server[k]
		if !ok {
			continue
		}
		hi := min(c.max, s.max)
		lo := max(c.min, s.min)
		if hi >= lo {
			out[k] = hi
		}
	}
	return out
}
