// Package failover5 holds the integration test of `kplan chaos --kill each`
// with chaos/failover-5.yaml on a 5-broker, 2-rack lab, in a test binary of
// its own (its own lab shape).
package failover5
