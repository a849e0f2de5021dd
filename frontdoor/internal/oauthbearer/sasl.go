package oauthbearer

import (
	"errors"
	"fmt"
	"strings"
)

// ErrMalformed is returned for an OAUTHBEARER message that does not parse.
var ErrMalformed = errors.New("malformed OAUTHBEARER message")

// BearerToken extracts the token of a client's initial response (RFC 7628
// section 3.1): a gs2 header, then key=value pairs separated by 0x01, one of
// them "auth=Bearer <token>". Other pairs (SASL extensions) are ignored.
func BearerToken(msg []byte) (string, error) {
	s := string(msg)
	hdr, rest, ok := strings.Cut(s, "\x01")
	if !ok || !strings.HasPrefix(hdr, "n,") && !strings.HasPrefix(hdr, "y,") {
		return "", fmt.Errorf("%w: no gs2 header", ErrMalformed)
	}
	for _, kv := range strings.Split(rest, "\x01") {
		if v, ok := strings.CutPrefix(kv, "auth="); ok {
			scheme, token, ok := strings.Cut(v, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
				return "", fmt.Errorf("%w: auth is not a bearer token", ErrMalformed)
			}
			return token, nil
		}
	}
	return "", fmt.Errorf("%w: no auth=Bearer pair", ErrMalformed)
}
