// Package secure holds end-to-end integration tests of kplan's verbs against
// secured labs made by `kplan lab up --security`: SASL_SSL with SCRAM users
// (every verb, measure, bad client properties) and mTLS with client
// certificates required. Both lab shapes come from labtest's pool in this
// one binary. The package is apart from internal/e2e for the code its tests
// share (the secrets transcript, Kafka's own tools with client properties)
// and so that `make integration` can run it in its second lane beside
// internal/e2e.
package secure
