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
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define REDISTMP_TRIES 250              //  answers waited for at start, REDISTMP_PAUSE_US apart
#define REDISTMP_PAUSE_US 20000
#define REDISTMP_PORT_TRIES 5           //  free ports tried in turn, when one was taken meanwhile

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

//  Whether the server answering on port is the process pid: tests run
//  side by side, and a port free a moment ago may since be another
//  test's server (then this one could not bind it and exits).
static inline bool
redistmp_is (int port, pid_t pid)
{
    redisContext *c = redisConnect ("127.0.0.1", port);
    redisReply *r = c && !c->err ? redisCommand (c, "INFO server") : NULL;
    const char *at = r && r->type == REDIS_REPLY_STRING ? strstr (r->str, "process_id:") : NULL;
    bool ours = at && atol (at + strlen ("process_id:")) == (long) pid;
    freeReplyObject (r);
    redisFree (c);
    return ours;
}

//  Start the server on port; true when it answers, and it is this one.
static inline bool
redistmp_start_on (redistmp_t *self, int port)
{
    self->port = port;
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
        if (redistmp_is (self->port, self->pid))
            return true;
        if (waitpid (self->pid, NULL, WNOHANG) == self->pid) {
            self->pid = 0;              //  it could not start (the port taken): gone
            return false;
        }
        usleep (REDISTMP_PAUSE_US);
    }
    if (self->pid > 0) {                //  never answered: not left behind
        kill (self->pid, SIGKILL);
        waitpid (self->pid, NULL, 0);
        self->pid = 0;
    }
    return false;
}

//  Start the server on port (0: a free one, another when the one picked
//  was taken meanwhile); true when it answers.
static inline bool
redistmp_start (redistmp_t *self, int port)
{
    for (int i = 0; i < (port > 0 ? 1 : REDISTMP_PORT_TRIES); i++)
        if (redistmp_start_on (self, port > 0 ? port : redistmp_free_port ()))
            return true;
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
