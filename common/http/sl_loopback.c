/*  sl_loopback.c - what counts as this machine (see sl_loopback.h). */
#include "common/http/sl_loopback.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define S_LOOPBACK_NET 127              //  IPv4's loopback network, 127.0.0.0/8: its first byte
#define S_PORT_DIGITS_MAX 5
#define S_PORT_MAX 65535
#define S_LOCALHOST "localhost"

//  Nothing, or ":" and a port: what may follow a host's name.
static bool
s_port_ok (const char *p)
{
    if (*p == 0)
        return true;
    if (*p != ':')
        return false;
    p++;
    size_t digits = strspn (p, "0123456789");
    return digits > 0 && digits <= S_PORT_DIGITS_MAX && p [digits] == 0 && atol (p) <= S_PORT_MAX;
}

//  The n bytes at text are an IPv4 address of 127.0.0.0/8 (dotted, four
//  numbers: what a browser sends for any spelling of one).
static bool
s_ipv4 (const char *text, size_t n)
{
    char address [INET_ADDRSTRLEN];
    struct in_addr a;
    if (n >= sizeof address)
        return false;
    memcpy (address, text, n);
    address [n] = 0;
    return inet_pton (AF_INET, address, &a) == 1 && ntohl (a.s_addr) >> 24 == S_LOOPBACK_NET;
}

//  The n bytes at text are ::1, or an address of 127.0.0.0/8 mapped.
static bool
s_ipv6 (const char *text, size_t n)
{
    char address [INET6_ADDRSTRLEN];
    struct in6_addr a;
    if (n >= sizeof address)
        return false;
    memcpy (address, text, n);
    address [n] = 0;
    if (inet_pton (AF_INET6, address, &a) != 1)
        return false;
    return IN6_IS_ADDR_LOOPBACK (&a) || (IN6_IS_ADDR_V4MAPPED (&a) && a.s6_addr [12] == S_LOOPBACK_NET);
}

bool
sl_loopback_address (const char *address)
{
    if (!address)
        return false;
    return s_ipv4 (address, strlen (address)) || s_ipv6 (address, strlen (address));
}

bool
sl_loopback_host (const char *host)
{
    if (!host)
        return false;
    if (host [0] == '[') {
        const char *close = strchr (host, ']');
        return close && s_ipv6 (host + 1, (size_t) (close - host - 1)) && s_port_ok (close + 1);
    }
    size_t name = strcspn (host, ":");
    if (name == strlen (S_LOCALHOST) && strncasecmp (host, S_LOCALHOST, name) == 0)
        return s_port_ok (host + name);
    return s_ipv4 (host, name) && s_port_ok (host + name);
}

bool
sl_loopback_origin (const char *origin)
{
    if (!origin)
        return false;
    //  An origin is a scheme, "://" and a host with its port: no path.
    const char *host = strncasecmp (origin, "http://", 7) == 0 ? origin + 7
                     : strncasecmp (origin, "https://", 8) == 0 ? origin + 8 : NULL;
    return host && sl_loopback_host (host);
}

const char *
sl_loopback_refusal (const char *host, const char *origin)
{
    if (host && !sl_loopback_host (host))
        return "refused: the request's Host is not a name of this machine (localhost, 127.0.0.0/8, [::1]), "
               "as a web page's is when its name was rebound to this address; without keys, sluice answers "
               "its own machine's names only";
    if (origin && !sl_loopback_origin (origin))
        return "refused: the request comes from a web page of another site (its Origin is not localhost, "
               "127.0.0.0/8 or [::1]); without keys, sluice answers its own machine's pages only";
    return NULL;
}
