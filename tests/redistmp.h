/*  redistmp.h - a redis-server of a test's own: Debian's real server on
    a free loopback port, nothing saved, killed at the end (or mid-test,
    to see what a store that went away does).

    Header-only, shared by the unit tests of the Redis limits store and
    the integration tests of limits shared by several gateways.
*/
#ifndef REDISTMP_H
#define REDISTMP_H

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define REDISTMP_TRIES 250              //  answers waited for at start, REDISTMP_PAUSE_US apart
#define REDISTMP_PAUSE_US 20000

typedef struct {
    pid_t pid;
    int port;
} redistmp_t;

//  A loopback port free a moment ago.
static inline int
redistmp_free_port (void)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    int port = -1;
    socklen_t len = sizeof a;
    if (fd >= 0 && bind (fd, (struct sockaddr *) &a, sizeof a) == 0
    &&  getsockname (fd, (struct sockaddr *) &a, &len) == 0)
        port = ntohs (a.sin_port);
    if (fd >= 0)
        close (fd);
    return port;
}

//  Start the server on port (0: a free one); true when it answers.
static inline bool
redistmp_start (redistmp_t *self, int port)
{
    self->port = port > 0 ? port : redistmp_free_port ();
    char text [16];
    snprintf (text, sizeof text, "%d", self->port);
    self->pid = fork ();
    if (self->pid == 0) {
        int null = open ("/dev/null", O_WRONLY);
        dup2 (null, 1);
        dup2 (null, 2);
        execlp ("redis-server", "redis-server", "--port", text, "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", (char *) NULL);
        _exit (127);
    }
    for (int i = 0; self->pid > 0 && i < REDISTMP_TRIES; i++) {
        redisContext *c = redisConnect ("127.0.0.1", self->port);
        bool up = c && !c->err;
        redisFree (c);
        if (up)
            return true;
        usleep (REDISTMP_PAUSE_US);
    }
    return false;
}

//  Kill it (SIGKILL: a store that went away, not one that said goodbye).
static inline void
redistmp_stop (redistmp_t *self)
{
    if (self->pid > 0) {
        kill (self->pid, SIGCONT);
        kill (self->pid, SIGKILL);
        waitpid (self->pid, NULL, 0);
    }
    self->pid = 0;
}

//  The integer a command answers (a string is read as one; nil: 0), -1
//  when no answer, -2 when another type.
static inline long long
redistmp_integer (const redistmp_t *self, const char *command)
{
    redisContext *c = redisConnect ("127.0.0.1", self->port);
    redisReply *r = c && !c->err ? redisCommand (c, command) : NULL;
    long long v = !r ? -1 : r->type == REDIS_REPLY_INTEGER ? r->integer
                : r->type == REDIS_REPLY_STRING ? atoll (r->str) : r->type == REDIS_REPLY_NIL ? 0 : -2;
    freeReplyObject (r);
    redisFree (c);
    return v;
}

#endif
