// Package secure holds end-to-end integration tests of kplan's verbs
// against a secured lab (SASL_SSL with SCRAM users and PEM TLS material made
// by `kplan lab up --security`): one lab shape per test binary, so they live
// apart from internal/e2e's plaintext lab.
package secure
