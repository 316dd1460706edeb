/*  sl_resolve.c - endpoint lists into addresses (see sl_resolve.h). */
#include "common/bus/sl_resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static int
s_add (char (*out) [SL_RESOLVE_ENDPOINT_MAX], size_t max, size_t *count, const char *endpoint)
{
    for (size_t i = 0; i < *count; i++)
        if (strcmp (out [i], endpoint) == 0)
            return 0;
    if (*count == max)
        return -1;
    snprintf (out [(*count)++], SL_RESOLVE_ENDPOINT_MAX, "%s", endpoint);
    return 0;
}

int
sl_resolve_list (const char *list, char (*out) [SL_RESOLVE_ENDPOINT_MAX], size_t max, const char **why)
{
    *why = NULL;
    size_t count = 0;
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
                s_add (out, max, &count, entry);
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
        const char *port = colon + 1;
        struct in_addr a4;
        if (inet_pton (AF_INET, host, &a4) == 1 || host [0] == '[') {
            *colon = ':';
            s_add (out, max, &count, entry);
            continue;
        }
        struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
        struct addrinfo *res = NULL;
        if (getaddrinfo (host, port, &hints, &res) != 0) {
            *why = "a name does not resolve (yet)";
            continue;
        }
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            char ip [INET_ADDRSTRLEN], endpoint [SL_RESOLVE_ENDPOINT_MAX];
            inet_ntop (AF_INET, &((struct sockaddr_in *) ai->ai_addr)->sin_addr, ip, sizeof ip);
            snprintf (endpoint, sizeof endpoint, "tcp://%s:%s", ip, port);
            s_add (out, max, &count, endpoint);
        }
        freeaddrinfo (res);
    }
    return (int) count;
}
