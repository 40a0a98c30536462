// Package netns switches a thread into a network namespace (InNetns),
// removes the namespaces a killed process left behind (SweepNetns), opens
// raw AF_PACKET sockets inside a namespace, and builds and parses the
// frames tests and benchmarks send through veth pairs. It imports no
// testing code, so commands (ldafwd bench's AF_XDP suite) can use it;
// dataplane/nettest builds the test fixtures (Veth, Require) on top.
//
// Hazards. InNetns switches one locked OS thread into a namespace and back;
// a socket keeps the namespace it was created in, so sockets opened inside
// InNetns may be used from any goroutine afterwards. A thread that cannot
// switch back stays locked, and Go retires it with its goroutine.
package netns
