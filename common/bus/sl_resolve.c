/*  sl_resolve.c - endpoints' names into addresses (see sl_resolve.h). */
#include "common/bus/sl_resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
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

int
sl_resolve_name (const char *prefix, const char *host, const char *port,
                 sl_resolve_fn *fn, void *arg, const char **why)
{
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    int rc = getaddrinfo (host, port, &hints, &res);
    if (rc != 0) {
        *why = gai_strerror (rc);
        return -1;
    }
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        char ip [INET_ADDRSTRLEN], endpoint [SL_RESOLVE_ENDPOINT_MAX];
        inet_ntop (AF_INET, &((struct sockaddr_in *) ai->ai_addr)->sin_addr, ip, sizeof ip);
        snprintf (endpoint, sizeof endpoint, "%s%s:%s", prefix, ip, port);
        fn (arg, endpoint);
    }
    freeaddrinfo (res);
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
