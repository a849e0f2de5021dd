package fluss

import (
	"errors"
	"net"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	flussrpc "github.com/ferrygw/ferry/services/api/gen/fluss/rpc/v1"
)

// A FetchLog answered with the remote segments of tiered data (and no
// records) is ErrRemoteLog, with the highest end offset of the segments
// named, where the bucket's local log is to be looked for.
func TestFetchLogRemoteEndOffset(t *testing.T) {
	s := newFakeServer(t, func(fc *fakeConn, req fakeRequest) {
		if req.key != APIFetchLog {
			t.Errorf("unexpected request %v", req.key)
			return
		}
		seg := func(start, end int64) *flussrpc.RemoteLogSegment {
			return &flussrpc.RemoteLogSegment{RemoteLogSegmentId: proto.String("s" + strconv.FormatInt(start, 10)),
				RemoteLogStartOffset: proto.Int64(start), RemoteLogEndOffset: proto.Int64(end), SegmentSizeInBytes: proto.Int32(1024)}
		}
		fc.success(req.id, &flussrpc.FetchLogResponse{TablesResp: []*flussrpc.FetchLogResponseTable{{TableId: proto.Int64(7),
			BucketsResp: []*flussrpc.FetchLogResponseBucket{{BucketId: proto.Int32(0), HighWatermark: proto.Int64(300),
				RemoteLogFetchInfo: &flussrpc.RemoteLogFetchInfo{RemoteLogTabletDir: proto.String("/remote/db/t-7/0"),
					RemoteLogSegments: []*flussrpc.RemoteLogSegment{seg(0, 150), seg(150, 199)}}}}}}})
	})
	c := dialFake(t, s)
	host, port, _ := net.SplitHostPort(s.addr())
	p, _ := strconv.Atoi(port)
	node := &flussrpc.ServerNode{NodeId: proto.Int32(5), Host: proto.String(host), Port: proto.Int32(int32(p))}
	if err := c.meta.apply(&flussrpc.GetMetadataResponse{TabletServers: []*flussrpc.ServerNode{node},
		TableMetadata: []*flussrpc.TableMetadata{{TablePath: &flussrpc.TablePath{DatabaseName: proto.String("db"), TableName: proto.String("t")},
			TableId: proto.Int64(7), BucketMetadata: []*flussrpc.BucketMetadata{{BucketId: proto.Int32(0), LeaderId: proto.Int32(5)}}}}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.FetchLog(shortCtx(t), 7, []FetchBucket{{Bucket: 0, Offset: 20, MaxBytes: 1}}, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; !errors.Is(r.Err, ErrRemoteLog) || r.RemoteEndOffset != 199 || r.Records != nil {
		t.Errorf("result %+v, want ErrRemoteLog with remote end offset 199", r)
	}
}
