// Package helm checks the Helm chart in deploy/helm/ferry without a cluster: it renders the chart
// with Helm's own engine for several value sets, decodes every object strictly into the
// Kubernetes API's Go types, applies the API's validation rules that a library offers, and
// compares ports and settings with the local launcher and the configuration reference. It is a
// module of its own so that Helm's dependencies stay out of every other module.
package helm
