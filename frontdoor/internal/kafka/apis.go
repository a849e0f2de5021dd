package kafka

import "github.com/ferrygw/ferry/frontdoor/internal/backends"

// APIs are the transport's own APIs: ApiVersions, answered from the
// registry reg returns once it is built, Metadata, and the SASL APIs when
// any authenticator is set. The concern packages (produce, consume,
// groupapi, admin) each have an APIs of their own; broker registers them all.
func APIs(reg func() *Registry, catalog *backends.Catalog, plain PlainAuthenticator, scram ScramAuthenticator, token TokenAuthenticator) []API {
	apis := []API{ApiVersionsAPI(reg), (&metadataHandler{catalog: catalog}).api()}
	if plain != nil || scram != nil || token != nil {
		apis = append(apis, (&saslHandler{auth: plain, scram: scram, token: token}).apis()...)
	}
	return apis
}
