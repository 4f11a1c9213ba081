// Package e2e holds end-to-end integration tests that run kplan's verbs in
// sequence, in process, against plaintext labs from labtest's pool: the
// shared 3-broker lab (measure then size, the overlap fix, a slow broker)
// and a 5-broker, 2-rack lab for issue 20's failover proof (chaos --kill
// each, reassign --failover-moves auto, apply, chaos --kill each). Tests
// against secured labs live in internal/e2e/secure.
package e2e
