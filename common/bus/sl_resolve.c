/*  sl_resolve.c - endpoints' names into addresses (see sl_resolve.h). */
#include "common/bus/sl_resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <time.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

bool
sl_resolve_is_name (const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (strcmp (host, "*") == 0 || host [0] == '[')
        return false;
    return inet_pton (AF_INET, host, &a4) != 1 && inet_pton (AF_INET6, host, &a6) != 1;
}

//  --------------------------------------------------------------------------
//  Names, resolved without holding the loop

//  A lookup runs in the C library's resolver thread (getaddrinfo_a): a
//  resolver that does not answer (a name a container's DNS does not know
//  yet is tried for seconds) never holds the process's loop, its
//  heartbeats or its /healthz. A call waits at most S_WAIT_MS for the
//  lookup it starts; when that is not enough, it answers with the
//  addresses the name had at its last answer, or "not yet", and the next
//  call (every SL_RESOLVE_MS) takes the answer. Only the loop's thread
//  calls these; the resolver thread writes a request's result before
//  gai_error says it is done.
#define S_WAIT_MS 50                    //  the longest a call waits for its lookup
#define S_NAMES_MAX 64                  //  names one process resolves (each a few endpoints)
#define S_ADDRESSES_MAX 64              //  addresses kept of one name
#define S_HOST_MAX 256
#define S_PORT_MAX 16

typedef struct {
    char host [S_HOST_MAX];
    char port [S_PORT_MAX];
    struct gaicb request;               //  the lookup under way (pending) or done
    struct addrinfo hints;
    bool pending;
    bool answered;                      //  a lookup has answered (rc below)
    int rc;                             //  its getaddrinfo code, 0: the addresses below
    char addresses [S_ADDRESSES_MAX][INET_ADDRSTRLEN];
    size_t count;
} s_name_t;

static s_name_t *s_names [S_NAMES_MAX];
static size_t s_name_count;

static s_name_t *
s_name (const char *host, const char *port)
{
    for (size_t i = 0; i < s_name_count; i++)
        if (strcmp (s_names [i]->host, host) == 0 && strcmp (s_names [i]->port, port) == 0)
            return s_names [i];
    if (s_name_count == S_NAMES_MAX || strlen (host) >= S_HOST_MAX || strlen (port) >= S_PORT_MAX)
        return NULL;
    s_name_t *name = calloc (1, sizeof *name);
    if (!name)
        return NULL;
    snprintf (name->host, sizeof name->host, "%s", host);
    snprintf (name->port, sizeof name->port, "%s", port);
    s_names [s_name_count++] = name;
    return name;
}

//  Take a finished lookup's answer: its addresses, or its error.
static void
s_harvest (s_name_t *name)
{
    int rc = gai_error (&name->request);
    if (rc == EAI_INPROGRESS)
        return;
    name->pending = false;
    name->answered = true;
    name->rc = rc;
    if (rc == 0) {
        name->count = 0;
        for (struct addrinfo *ai = name->request.ar_result; ai && name->count < S_ADDRESSES_MAX; ai = ai->ai_next)
            inet_ntop (AF_INET, &((struct sockaddr_in *) ai->ai_addr)->sin_addr, name->addresses [name->count++],
                       INET_ADDRSTRLEN);
    }
    if (name->request.ar_result)
        freeaddrinfo (name->request.ar_result);
    name->request.ar_result = NULL;
}

//  Start a lookup when none is under way, and wait for it a little.
static void
s_lookup (s_name_t *name)
{
    if (!name->pending) {
        name->hints = (struct addrinfo) { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
        name->request = (struct gaicb) { .ar_name = name->host, .ar_service = name->port,
                                         .ar_request = &name->hints };
        struct gaicb *list [1] = { &name->request };
        int rc = getaddrinfo_a (GAI_NOWAIT, list, 1, NULL);
        if (rc != 0) {
            name->answered = true;
            name->rc = rc;
            return;
        }
        name->pending = true;
    }
    const struct gaicb *wait [1] = { &name->request };
    struct timespec limit = { 0, S_WAIT_MS * 1000000L };
    gai_suspend (wait, 1, &limit);
    s_harvest (name);
}

int
sl_resolve_name (const char *prefix, const char *host, const char *port,
                 sl_resolve_fn *fn, void *arg, const char **why)
{
    s_name_t *name = s_name (host, port);
    if (!name) {
        *why = "too many names to resolve";
        return -1;
    }
    s_lookup (name);
    if (!name->answered) {
        *why = "the resolver has not answered yet";
        return -1;
    }
    //  Still waiting on a new lookup: the last answer stands meanwhile.
    if (name->rc != 0) {
        *why = name->rc == EAI_SYSTEM ? "the resolver failed" : gai_strerror (name->rc);
        return -1;
    }
    for (size_t i = 0; i < name->count; i++) {
        char endpoint [SL_RESOLVE_ENDPOINT_MAX];
        snprintf (endpoint, sizeof endpoint, "%s%s:%s", prefix, name->addresses [i], port);
        fn (arg, endpoint);
    }
    return 0;
}

//  The endpoints of a list, once each.
typedef struct {
    char (*out) [SL_RESOLVE_ENDPOINT_MAX];
    size_t max;
    size_t count;
} s_found_t;

static void
s_add (void *arg, const char *endpoint)
{
    s_found_t *found = arg;
    for (size_t i = 0; i < found->count; i++)
        if (strcmp (found->out [i], endpoint) == 0)
            return;
    if (found->count < found->max)
        snprintf (found->out [found->count++], SL_RESOLVE_ENDPOINT_MAX, "%s", endpoint);
}

int
sl_resolve_list (const char *list, char (*out) [SL_RESOLVE_ENDPOINT_MAX], size_t max, const char **why)
{
    *why = NULL;
    s_found_t found = { .out = out, .max = max };
    for (const char *p = list; p && *p;) {
        const char *comma = strchr (p, ',');
        size_t n = comma ? (size_t) (comma - p) : strlen (p);
        char entry [SL_RESOLVE_ENDPOINT_MAX];
        if (n == 0 || n >= sizeof entry) {
            *why = "an endpoint is empty or too long";
            return -1;
        }
        memcpy (entry, p, n);
        entry [n] = 0;
        p += n + (comma ? 1 : 0);
        char *scheme = strstr (entry, "://");
        if (!scheme || strncmp (entry, "tcp://", 6) != 0) {
            if (strncmp (entry, "ipc://", 6) == 0 || strncmp (entry, "inproc://", 9) == 0) {
                s_add (&found, entry);
                continue;
            }
            *why = "an endpoint is not tcp://host:port";
            return -1;
        }
        char *host = entry + 6;
        char *colon = strrchr (host, ':');
        if (!colon || colon == host || !colon [1]) {
            *why = "an endpoint has no host:port";
            return -1;
        }
        *colon = 0;
        if (!sl_resolve_is_name (host)) {
            *colon = ':';
            s_add (&found, entry);
            continue;
        }
        const char *unresolved;
        if (sl_resolve_name ("tcp://", host, colon + 1, s_add, &found, &unresolved))
            *why = "a name does not resolve (yet)";
    }
    return (int) found.count;
}

int
sl_resolve_sync (const char *list, size_t max, const sl_resolve_set_t *set, void *arg)
{
    char (*found) [SL_RESOLVE_ENDPOINT_MAX] = calloc (max, SL_RESOLVE_ENDPOINT_MAX);
    bool *listed = calloc (max + set->count (arg), sizeof (bool));
    if (!found || !listed) {
        free (found);
        free (listed);
        return -1;
    }
    const char *why = NULL;
    int n = sl_resolve_list (list, found, max, &why);
    for (int f = 0; f < n; f++) {
        size_t have = set->count (arg), at = have;
        for (size_t i = 0; i < have && at == have; i++)
            if (strcmp (set->endpoint (arg, i), found [f]) == 0)
                at = i;
        if (at == have)
            set->add (arg, found [f]);
        if (at < set->count (arg))
            listed [at] = true;
    }
    //  From the end: a removal moves the last one, already looked at, here.
    for (size_t i = set->count (arg); n >= 0 && !why && i-- > 0;)
        if (!listed [i])
            set->remove (arg, i);
    free (found);
    free (listed);
    return n < 0 ? -1 : 0;
}
