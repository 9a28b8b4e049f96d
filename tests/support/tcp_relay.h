/*
 * A TCP relay on 127.0.0.1 for tests that restart a server where its clients expect it. The
 * relay listens on a port of its own, bound as port 0 and held until tcp_relay_stop(), so no
 * other test can take it while the server behind it is down; clients are given the relay's
 * port. Each connection it accepts is joined to 127.0.0.1:target; the server comes back on any
 * free port and the relay is pointed there. When one side of a joined pair closes, the relay
 * closes the other, as the server's own going away would; a connection that finds no server
 * behind is reset, as a refused one would be. One thread and blocking writes: for the little
 * traffic of a test.
 */
#ifndef REIN_TEST_TCP_RELAY_H
#define REIN_TEST_TCP_RELAY_H

struct tcp_relay;

/* Starts a relay to 127.0.0.1:target (fails the test when it cannot). */
struct tcp_relay *tcp_relay_start(int target);
/* The port the relay listens on. */
int tcp_relay_port(const struct tcp_relay *r);
/* Connections accepted from now on go to 127.0.0.1:target (0: no server, they are reset);
 * those joined already stay. Set 0 before the server stops, so that nothing another test
 * starts on its port meanwhile is joined to. */
void tcp_relay_target(struct tcp_relay *r, int target);
/* Closes every connection and the relay's port, and frees it. NULL is a no-op. */
void tcp_relay_stop(struct tcp_relay *r);

#endif /* REIN_TEST_TCP_RELAY_H */
