/*
 * A real redis-server for tests: started on a free port in a temporary folder with no
 * persistence (--save "" --appendonly no), killed and removed by test_redis_stop(). A test
 * that restarts it where its clients expect it gives them a tcp_relay's port (tcp_relay.h).
 */
#ifndef REIN_TEST_REDIS_SERVER_H
#define REIN_TEST_REDIS_SERVER_H

struct test_redis {
    int port;
    char *dir;
    char url[64]; /* redis://127.0.0.1:PORT */
    void *proc;   /* rein_proc */
};

/*
 * Starts redis-server and waits until it answers PING; when another took its port first, it
 * is started again on another. When redis-server is not installed, skips the test with a
 * message (CI has it).
 */
struct test_redis *test_redis_start(void);
/* Stops the server and removes its folder. NULL is a no-op. */
void test_redis_stop(struct test_redis *r);
/* Sends one inline command (e.g. "CLIENT KILL TYPE normal") and returns the first reply line
 * in a static buffer; NULL when the server cannot be reached. */
const char *test_redis_command(const struct test_redis *r, const char *command);

#endif
