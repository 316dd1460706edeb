/*  sl_loopback.h - what counts as this machine, for the doors that let in
    whoever is on it: a gateway without keys, a console without keys, the
    MCP front's Origin check.

    A server that answers every client of this machine answers its web
    browser too, and a web page can make the browser ask. DNS rebinding:
    the page's own name comes to answer 127.0.0.1 after the page loaded,
    so to the browser the server is the page's own site, and the page
    reads what it answers (/api/streams: prompts, tool arguments) and
    posts to it (an approval). Such a request names the page's site: in
    Host always (the browser sends the name it resolved), in Origin when
    the page posts (or asks across sites). So a door without keys answers
    a request only when:

      - its Host, when it has one, is a loopback name: localhost, an IPv4
        address of 127.0.0.0/8 or [::1] (IPv6's loopback, or 127.0.0.0/8
        mapped), each with or without a port (kubectl port-forward sends
        localhost:PORT). Names are compared without case; nothing else
        passes, not even a name that resolves to 127.0.0.1 (that is the
        attack) or localhost with a trailing dot. A request without Host
        is not a browser's and passes; an empty one does not;
      - its Origin, when it has one, is http:// or https:// and a loopback
        name as above (the console's own pages send theirs). "null" (a
        sandboxed frame, a file) and every other origin are foreign.

    With keys the key is the guard and these checks are not made: a page
    cannot know a key (and the console's session cookie is sent to the
    name it was set for only), and a door with keys is reached by names of
    its own (a Service, an Ingress).
*/
#ifndef SL_LOOPBACK_H
#define SL_LOOPBACK_H

#include <stdbool.h>

//  An address to listen on is this machine's only: an IPv4 address of
//  127.0.0.0/8, or ::1. Names (even localhost), 0.0.0.0 and every other
//  address are not.
bool sl_loopback_address (const char *address);
//  A Host header's value is a loopback name (see above); NULL is not.
bool sl_loopback_host (const char *host);
//  An Origin header's value is a page of a loopback name; NULL is not.
bool sl_loopback_origin (const char *origin);
//  Why a door without keys refuses a request with these Host and Origin
//  headers (NULL: absent), as a sentence for the answer's body (static),
//  or NULL when it may answer it.
const char *sl_loopback_refusal (const char *host, const char *origin);

#endif
