// Package mtls holds end-to-end integration tests of kplan's verbs against
// a lab whose clients authenticate by certificate (`kplan lab up --security
// ssl`: TLS with ssl.client.auth=required): one lab shape per test binary.
package mtls
